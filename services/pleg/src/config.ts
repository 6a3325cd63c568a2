/**
 * The pleg process's configuration, read from the environment (the only reader of `process.env`).
 */
import { z } from 'zod';
import { DEFAULT_PARTITIONS } from '@splitlet/api';
import { NodeProcessEnv, type Env } from '@splitlet/service';

/** The environment variables pleg reads. */
export const PlegEnv = z.object({
  ...NodeProcessEnv,
  /** genericPlegRelistPeriod. @default 1000 */
  RELIST_PERIOD_MS: z.coerce.number().int().positive().default(1000),
  /** genericPlegRelistThreshold: unhealthy when the last successful relist is older. @default 180000 */
  RELIST_THRESHOLD_MS: z.coerce.number().int().positive().default(180_000),
  /** The full relist's period while the runtime's events drive pleg (EventedPLEG relist period). @default 300000 */
  EVENTED_RELIST_PERIOD_MS: z.coerce.number().int().positive().default(300_000),
  /** The health threshold while the runtime's events drive pleg (EventedPLEG relist threshold). @default 600000 */
  EVENTED_RELIST_THRESHOLD_MS: z.coerce.number().int().positive().default(600_000),
  /** Without a message of cri-adapter's event stream for this long, pleg relists every period again. @default 10000 */
  EVENT_STREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Deadline of the relist request to cri-adapter. @default 10000 */
  RUNTIME_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Pod-worker partitions of the node (the key layout of `sl_desired`). @default DEFAULT_PARTITIONS */
  PARTITIONS: z.coerce.number().int().min(1).max(4096).default(DEFAULT_PARTITIONS),
});

/** pleg's typed configuration. */
export type PlegConfig = z.output<typeof PlegEnv>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
