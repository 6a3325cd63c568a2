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
  /**
   * Cluster mode: the kubeconfig of the API server to report to (pod statuses, deletions, the Node
   * and its Lease). Unset: standalone mode, the statuses stay in `sl_status`.
   */
  KUBECONFIG: z.string().min(1).optional(),
  /** `containerRuntimeVersion` the Node reports (cluster mode). @default unknown */
  CONTAINER_RUNTIME_VERSION: z.string().min(1).optional(),
  /** nodeStatusUpdateFrequency: how often the Node's status is computed and patched when it changed. */
  NODE_STATUS_UPDATE_FREQUENCY_MS: z.coerce.number().int().positive().default(10_000),
  /** nodeStatusReportFrequency: the Node's status is patched at least this often even unchanged. */
  NODE_STATUS_REPORT_FREQUENCY_MS: z.coerce.number().int().positive().default(300_000),
  /** nodeLeaseDurationSeconds: the Lease's duration; it is renewed every quarter of it. */
  NODE_LEASE_DURATION_SECONDS: z.coerce.number().int().positive().default(40),
  /**
   * kubeAPIQPS / kubeAPIBurst: the requests per second (and the burst above that) status-manager
   * sends the API server for pods (status patches, reads, deletions, mirror pods). A request waits
   * for its turn; the Node's status and Lease are not held behind pod traffic.
   */
  KUBE_API_QPS: z.coerce.number().int().positive().default(50),
  KUBE_API_BURST: z.coerce.number().int().positive().default(100),
  /**
   * eventRecordQPS / eventBurst: the events posted per second (and the burst above that); 0: no limit.
   * Whole numbers, as the kubelet's: an event waits at most a second for its token, well within its
   * delivery's ack wait.
   */
  EVENT_RECORD_QPS: z.coerce.number().int().min(0).default(50),
  EVENT_BURST: z.coerce.number().int().positive().default(100),
});

/** status-manager's typed configuration. */
export type StatusManagerConfig = z.output<typeof StatusManagerEnv>;

/** The process environment, for `runNodeProcess` (this module is the only reader of `process.env`). */
export function processEnv(): Env {
  return process.env;
}
