/**
 * The sync-loop process's configuration, read from the environment (the only reader of
 * `process.env`). The node's capacity is not configured here: the node publishes it
 * (`sl_node_capacity`, written by volume-manager).
 */
import { z } from 'zod';
import { DEFAULT_PARTITIONS } from '@splitlet/api';
import { NodeProcessEnv, type Env } from '@splitlet/service';

/** The environment variables sync-loop reads. */
export const SyncLoopEnv = z
  .object({
    ...NodeProcessEnv,
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
  })
  .transform((c) => ({ ...c, NODE_LABELS: c.NODE_LABELS ?? { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': c.NODE_NAME } }));

/** sync-loop's typed configuration. */
export type SyncLoopConfig = z.output<typeof SyncLoopEnv>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
