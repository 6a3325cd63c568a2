/**
 * The status-manager process's configuration, read from the environment (the only reader of `process.env`).
 */
import { z } from 'zod';
import { loadConfig, type Env } from '@splitlet/service';

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** The environment variables status-manager reads. */
export const StatusManagerEnv = z.object({
  /** NATS server URL(s), comma separated. */
  NATS_URL: z.string().min(1),
  /** The node this process serves (a DNS-1123 subdomain). */
  NODE_NAME: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase DNS-1123 subdomain').max(253),
  /** Port of /healthz, /readyz, /metrics; 0 picks a free one. @default 0 */
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  /** File the bound health port is written to. */
  HEALTH_PORT_FILE: z.string().min(1).optional(),
  /** Address the health server binds. @default 127.0.0.1 */
  HEALTH_HOST: z.string().min(1).default('127.0.0.1'),
  /** @default info */
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  /** Publish finished spans to `SL_SPANS` so the CLI can show traces. @default true */
  PUBLISH_SPANS: z.stringbool().default(true),
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
  const otelEnv: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('OTEL_')) otelEnv[k] = v;
  return { ...config, otelEnv };
}
