/**
 * The status-manager process's configuration, read from the environment (the only reader of `process.env`).
 */
import { z } from 'zod';
import { NodeProcessEnv, type Env } from '@splitlet/service';

/** The environment variables status-manager reads. */
export const StatusManagerEnv = z.object({
  ...NodeProcessEnv,
  /** Status updates handled at once (updates of one pod stay in order). @default 32 */
  STATUS_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(32),
  /** The API server's kubeconfig (cluster mode); unset: standalone, statuses stay on the bus. */
  KUBECONFIG: z.string().min(1).optional(),
});

/** status-manager's typed configuration. */
export type StatusManagerConfig = z.output<typeof StatusManagerEnv>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
