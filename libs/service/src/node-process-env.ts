/**
 * The variables every splitlet node process reads (docs/architecture.md, "the process contract"):
 * one definition, spread into each service's schema, so the processes cannot drift apart in names,
 * defaults or validation.
 */
import { z } from 'zod';
import { checkStreamMaxAges, type StreamMaxAges } from '@splitlet/bus';
import type { Env } from './load-config.js';
import { parseGoDuration } from './kubelet-config.js';

/** A node name: a lowercase DNS-1123 subdomain, as the kubelet's `--hostname-override`. */
export const NodeNameSchema = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase DNS-1123 subdomain');

/** How often a process removes old delete markers from the buckets it writes, and how old they must be (the defaults). */
export const DELETE_MARKER_COMPACTION = { everyMs: 10 * 60_000, olderThanMs: 30 * 60_000 } as const;

/**
 * `STREAM_MAX_AGE`: the operator's stream max ages, `STREAM=DURATION` comma-separated
 * (`SL_SPANS=10m,SL_STATUS=30m`; Go durations: `90s`, `2m`, `1h30m`); empty or unset: the declared
 * ones. Throws an Error naming the entry on an unknown stream, a bad or non-positive duration, a
 * stream given twice, or an age under the stream's floor (docs/architecture.md, "Limits of the bus").
 */
export function parseStreamMaxAges(text: string | undefined): StreamMaxAges {
  const out: Record<string, number> = {};
  for (const raw of (text ?? '').split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new Error(`"${entry}" is not STREAM=DURATION (e.g. SL_SPANS=10m)`);
    const name = entry.slice(0, eq).trim();
    const value = entry.slice(eq + 1).trim();
    const ms = parseGoDuration(value);
    if (ms === undefined) throw new Error(`${name}: "${value}" is not a duration such as 90s, 10m or 1h30m`);
    if (name in out) throw new Error(`${name} is given twice`);
    out[name] = ms;
  }
  checkStreamMaxAges(out);
  return out;
}

/** The log levels a process accepts in `LOG_LEVEL`. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/**
 * The variables of every splitlet process, also those without a bus (sim-runtime), as a zod shape
 * to spread into a service's `z.object({...})`: `HEALTH_PORT` (0: a free port), `HEALTH_PORT_FILE`,
 * `HEALTH_HOST` (127.0.0.1) and `LOG_LEVEL` (info).
 */
export const ProcessEnv = {
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  HEALTH_PORT_FILE: z.string().min(1).optional(),
  HEALTH_HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
} as const;

/** The parsed {@link ProcessEnv} variables. */
export type ProcessSettings = z.output<z.ZodObject<typeof ProcessEnv>>;

/**
 * The variables of every node process on the bus: {@link ProcessEnv} plus `NATS_URL` (one or more
 * URLs, comma-separated), `NATS_USER` / `NATS_PASSWORD` (the process's NATS identity), `NODE_NAME`, `PUBLISH_SPANS` (true: finished spans also go to
 * `SL_SPANS` so `splitlet trace` works without a collector) and the removal of old KV delete markers
 * (`DELETE_MARKER_COMPACTION_INTERVAL_MS` 10 min, `DELETE_MARKER_MIN_AGE_MS` 30 min) and the streams'
 * max ages (`STREAM_MAX_AGE`, {@link parseStreamMaxAges}). Spread it into a service's schema.
 */
export const NodeProcessEnv = {
  NATS_URL: z.string().min(1),
  /** The process's NATS identity (docs/architecture.md, "Identities and permissions"); unset: no authentication. */
  NATS_USER: z.string().min(1).optional(),
  /** Its password; required with NATS_USER. Never logged. */
  NATS_PASSWORD: z.string().min(1).optional(),
  NODE_NAME: NodeNameSchema,
  ...ProcessEnv,
  PUBLISH_SPANS: z.stringbool().default(true),
  /** How often the process removes old delete markers from the buckets it writes (ms). */
  DELETE_MARKER_COMPACTION_INTERVAL_MS: z.coerce.number().int().min(1000).default(DELETE_MARKER_COMPACTION.everyMs),
  /** How old a delete marker must be to be removed (ms). */
  DELETE_MARKER_MIN_AGE_MS: z.coerce.number().int().min(0).default(DELETE_MARKER_COMPACTION.olderThanMs),
  /** The operator's stream max ages ({@link parseStreamMaxAges}); every process must be given the same. */
  STREAM_MAX_AGE: z
    .string()
    .optional()
    .transform((s, ctx) => {
      try {
        return parseStreamMaxAges(s);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    }),
} as const;

/** The parsed {@link NodeProcessEnv} variables. */
export type NodeProcessSettings = z.output<z.ZodObject<typeof NodeProcessEnv>>;

/** The `OTEL_*` variables of `env`, for `startTelemetry` (the SDK's own configuration). */
export function otelEnv(env: Env): Env {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('OTEL_')) out[k] = v;
  return out;
}

/** `NATS_URL` as the server list the NATS client takes. */
export function natsServers(natsUrl: string): string[] {
  return natsUrl
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
