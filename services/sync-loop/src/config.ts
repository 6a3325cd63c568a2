/**
 * The sync-loop process's configuration, read from the environment (the only reader of `process.env`).
 */
import { statfsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { z } from 'zod';
import { DEFAULT_PARTITIONS } from '@splitlet/api';
import { loadConfig, type Env, NodeProcessEnv, otelEnv } from '@splitlet/service';

const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$/, 'must be a resource quantity, e.g. 4, 3500m, 8Gi');

/** Size of the root filesystem, the default allocatable ephemeral storage. */
function rootFsBytes(): string {
  try {
    const s = statfsSync('/');
    return String(Number(s.blocks) * Number(s.bsize));
  } catch {
    // No statfs (exotic platform): no ephemeral storage is allocatable unless configured.
    return '0';
  }
}

/** The environment variables sync-loop reads. */
export const SyncLoopEnv = z.object({
  ...NodeProcessEnv,
  /** Allocatable CPU. @default the number of CPUs */
  NODE_CPU: quantity.default(() => String(cpus().length)),
  /** Allocatable memory (bytes or a quantity). @default the total memory */
  NODE_MEMORY: quantity.default(() => String(totalmem())),
  /** Allocatable ephemeral storage (bytes or a quantity). @default the size of the root filesystem */
  NODE_EPHEMERAL_STORAGE: quantity.default(rootFsBytes),
  /** maxPods. @default 110 */
  NODE_MAX_PODS: z.coerce.number().int().min(1).default(110),
  /** Node labels as a JSON object. @default {"kubernetes.io/os":"linux","kubernetes.io/hostname":<node>} */
  NODE_LABELS: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (s === undefined || s === '') return undefined;
      try {
        return z.record(z.string(), z.string()).parse(JSON.parse(s));
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object of string labels' });
        return z.NEVER;
      }
    }),
  /** Pod-worker partitions (fixed for the life of the node's streams). @default DEFAULT_PARTITIONS */
  PARTITIONS: z.coerce.number().int().min(1).max(4096).default(DEFAULT_PARTITIONS),
  /** The work-queue tick (syncTicker). @default 1000 */
  SYNC_TICK_MS: z.coerce.number().int().positive().default(1000),
  /** housekeepingPeriod. @default 2000 */
  HOUSEKEEPING_MS: z.coerce.number().int().positive().default(2000),
  /** ContainerGCPeriod: container garbage collection runs at start, then this long after each run. @default 60000 */
  CONTAINER_GC_PERIOD_MS: z.coerce.number().int().positive().default(60_000),
  /** --minimum-container-ttl-duration: a dead container is collected only once it is this old. @default 0 */
  MINIMUM_CONTAINER_TTL_MS: z.coerce.number().int().min(0, 'invalid minimum garbage collection age: must not be negative').default(0),
  /** --maximum-dead-containers-per-container; less than zero: no limit. @default 1 */
  MAX_DEAD_CONTAINERS_PER_CONTAINER: z.coerce.number().int().default(1),
  /** --maximum-dead-containers on the node; less than zero: no limit. @default -1 */
  MAX_DEAD_CONTAINERS: z.coerce.number().int().default(-1),
});

/** sync-loop's typed configuration plus the `OTEL_*` variables for `startTelemetry`. */
export type SyncLoopConfig = Omit<z.output<typeof SyncLoopEnv>, 'NODE_LABELS'> & {
  readonly NODE_LABELS: Readonly<Record<string, string>>;
  readonly otelEnv: Env;
};

/**
 * Parses the environment. Throws `ConfigError` naming every bad variable.
 * @param env @default process.env
 */
export function readConfig(env: Env = process.env): SyncLoopConfig {
  const config = loadConfig(SyncLoopEnv, env);
  const labels = config.NODE_LABELS ?? { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': config.NODE_NAME };
  return { ...config, NODE_LABELS: labels, otelEnv: otelEnv(env) };
}
