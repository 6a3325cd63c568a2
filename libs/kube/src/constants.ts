/**
 * Kubelet constants the pod path depends on: periods, backoffs and annotation keys.
 *
 * Models pkg/kubelet/kubelet.go, pkg/kubelet/pod_workers.go and pkg/kubelet/types/pod_update.go.
 */

/**
 * Loop periods and backoffs, in milliseconds.
 *
 * Models pkg/kubelet/kubelet.go (constants block) and pkg/kubelet/pod_workers.go.
 */
export const KubeletPeriods = {
  /** `resyncInterval` = `syncFrequency`: a successful sync is requeued after jitter(1m, 0.5). */
  resyncIntervalMs: 60_000,
  /** `backOffPeriod`: a failed sync is requeued after jitter(10s, 0.5); also the crash-loop initial backoff. */
  backOffPeriodMs: 10_000,
  /** `MaxContainerBackOff`: the crash-loop backoff cap. */
  maxContainerBackOffMs: 300_000,
  /** The crash-loop backoff entry is forgotten after this long without an update (`HasExpiredFunc`). */
  crashLoopBackOffExpiryMs: 600_000,
  /** `backOffOnTransientErrorPeriod`: requeue after a "network is not ready" error. */
  networkNotReadyBackOffMs: 1_000,
  /** `housekeepingPeriod`. */
  housekeepingPeriodMs: 2_000,
  /** `housekeepingWarningDuration`: a slower housekeeping run is logged as an error. */
  housekeepingWarningMs: 1_000,
  /** `genericPlegRelistPeriod`. */
  plegRelistPeriodMs: 1_000,
  /** `genericPlegRelistThreshold`: PLEG is unhealthy when the last relist is older than this. */
  plegRelistThresholdMs: 180_000,
  /** Status manager `syncPeriod`: every status is re-checked against the API this often. */
  statusSyncPeriodMs: 10_000,
  /** The syncLoop ticker that checks the work queue. */
  syncLoopTickMs: 1_000,
  /** Image pull backoff (`imageBackOff`), initial and max. */
  imageBackOffInitialMs: 10_000,
  imageBackOffMaxMs: 300_000,
  /** `ContainerGCPeriod`: container garbage collection runs at start, then this long after each run. */
  containerGCPeriodMs: 60_000,
  /** `minimumGracePeriodInSeconds` for killContainer, in seconds. */
  minimumKillGracePeriodSeconds: 2,
} as const;

/**
 * Jitter factors the pod workers apply to their requeue delays.
 *
 * Models pkg/kubelet/pod_workers.go (workerResyncIntervalJitterFactor, workerBackOffPeriodJitterFactor).
 */
export const WorkerJitter = {
  resync: 0.5,
  backOff: 0.5,
} as const;

/**
 * Annotation keys the kubelet owns.
 *
 * Models pkg/kubelet/types/pod_update.go.
 */
export const ConfigAnnotations = {
  /** Where a pod came from: `file`, `http` or `api`. */
  source: 'kubernetes.io/config.source',
  /** The static pod's hash (its UID). */
  hash: 'kubernetes.io/config.hash',
  /** Set on a mirror pod to the static pod's hash. */
  mirror: 'kubernetes.io/config.mirror',
  /** RFC3339Nano time PodConfig first saw the pod. */
  seen: 'kubernetes.io/config.seen',
} as const;

/**
 * Pod source names, as stamped in {@link ConfigAnnotations.source}.
 *
 * Models pkg/kubelet/types/pod_update.go (FileSource, HTTPSource, ApiserverSource, AllSource).
 */
export const PodSources = {
  file: 'file',
  http: 'http',
  api: 'api',
  /** splitlet's own: pods applied over the bus (not static, like the API server's). */
  bus: 'bus',
  all: '*',
} as const;

/**
 * The error text the pod workers look for to requeue after 1 s instead of 10 s.
 *
 * Models pkg/kubelet/pod_workers.go (NetworkNotReadyErrorMsg).
 */
export const NETWORK_NOT_READY_ERROR_MSG = 'network is not ready';
