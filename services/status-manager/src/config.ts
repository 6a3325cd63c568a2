/**
 * The status-manager process's configuration, read from the environment (the only reader of `process.env`).
 */
import { z } from 'zod';
import { loadConfig, type Env, NodeProcessEnv, otelEnv } from '@splitlet/service';


/** The environment variables status-manager reads. */
export const StatusManagerEnv = z.object({
  ...NodeProcessEnv,
  /** Status updates handled at once (updates of one pod stay in order). @default 32 */
  STATUS_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(32),
});

/** status-manager's typed configuration plus the `OTEL_*` variables for `startTelemetry`. */
export type StatusManagerConfig = z.output<typeof StatusManagerEnv> & { readonly otelEnv: Env };

/**
 * Parses the environment. Throws `ConfigError` naming every bad variable.
 * @param env @default process.env
 */
export function readConfig(env: Env = process.env): StatusManagerConfig {
  const config = loadConfig(StatusManagerEnv, env);
  return { ...config, otelEnv: otelEnv(env) };
}
