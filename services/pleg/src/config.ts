/**
 * The pleg process's configuration, read from the environment (the only reader of `process.env`).
 */
import { z } from 'zod';
import { DEFAULT_PARTITIONS } from '@splitlet/api';
import { loadConfig, type Env } from '@splitlet/service';

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** The environment variables pleg reads. */
export const PlegEnv = z.object({
  /** NATS server URL(s), comma separated. */
  NATS_URL: z.string().min(1),
  /** The node this pleg serves (a DNS-1123 subdomain). */
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
  /** genericPlegRelistPeriod. @default 1000 */
  RELIST_PERIOD_MS: z.coerce.number().int().positive().default(1000),
  /** genericPlegRelistThreshold: unhealthy when the last successful relist is older. @default 180000 */
  RELIST_THRESHOLD_MS: z.coerce.number().int().positive().default(180_000),
  /** Deadline of the relist request to cri-adapter. @default 10000 */
  RUNTIME_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Pod-worker partitions of the node (the key layout of `sl_desired`). @default DEFAULT_PARTITIONS */
  PARTITIONS: z.coerce.number().int().min(1).max(4096).default(DEFAULT_PARTITIONS),
});

/** pleg's typed configuration plus the `OTEL_*` variables for `startTelemetry`. */
export type PlegConfig = z.output<typeof PlegEnv> & { readonly otelEnv: Env };

/**
 * Parses the environment. Throws `ConfigError` naming every bad variable.
 * @param env @default process.env
 */
export function readConfig(env: Env = process.env): PlegConfig {
  const config = loadConfig(PlegEnv, env);
  const otelEnv: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('OTEL_')) otelEnv[k] = v;
  return { ...config, otelEnv };
}
