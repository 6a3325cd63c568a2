import type { ZodType, output } from 'zod';
import { ConfigError, type ConfigIssue } from './service-error.js';

/** The environment as a plain map (`process.env` or a test's literal). */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Parses the environment with a service's zod schema (an object keyed by variable name, using
 * `z.coerce`/`z.stringbool` for non-strings) and returns the typed config. Called once, from the
 * service's `config.ts` — the only place that reads `process.env`, which it passes in.
 *
 * @param env the variables. @default process.env (prefer passing it explicitly)
 * @throws {@link ConfigError} naming every bad variable and why — never a value.
 */
export function loadConfig<S extends ZodType>(schema: S, env: Env = process.env): output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const issues: ConfigIssue[] = result.error.issues.map((issue) => {
    const first = issue.path[0];
    const variable = issue.path.length === 0 ? '(config)' : issue.path.map(String).join('.');
    const unset = typeof first === 'string' && issue.path.length === 1 && (env[first] === undefined || env[first] === '');
    const message = unset && issue.code === 'invalid_type' ? 'is required but not set' : issue.message;
    return { variable, message };
  });
  throw new ConfigError(issues);
}
