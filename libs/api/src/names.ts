/**
 * Subjects, streams, consumers and KV buckets: the one place their names are spelled.
 *
 * Every subject starts `sl.<node>.` so several nodes share one NATS account without seeing each other's
 * traffic; where per-pod order matters the pod UID is the last token. A node name is a DNS subdomain
 * (dots allowed), so it is encoded into one token by {@link nodeToken}.
 */

/** Encodes a node name (DNS-1123 subdomain) as a single subject token: `.` becomes `_`, which DNS names never contain. */
export function nodeToken(nodeName: string): string {
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(nodeName) || nodeName.length > 253) {
    throw new Error(`invalid node name ${JSON.stringify(nodeName)}: must be a lowercase DNS-1123 subdomain`);
  }
  return nodeName.replaceAll('.', '_');
}

/** The inverse of {@link nodeToken}. */
export function nodeFromToken(token: string): string {
  return token.replaceAll('_', '.');
}

/** Default number of pod-worker partitions per node. Fixed for the life of a node's streams. */
export const DEFAULT_PARTITIONS = 32;

/** FNV-1a 32-bit of a string's UTF-8 bytes. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const bytes = new TextEncoder().encode(s);
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The partition a pod UID belongs to: `fnv1a32(uid) % partitions`. Every process computes it the same way. */
export function partitionOf(uid: string, partitions: number = DEFAULT_PARTITIONS): number {
  return fnv1a32(uid) % partitions;
}

/** Stream names. Each stream holds every node's subjects of its kind. */
export const Streams = {
  /** PodUpdates from config-source to sync-loop. Limits retention: history of what the sources said. */
  config: 'SL_CONFIG',
  /** Work pokes `{uid, rev}` from sync-loop to the pod-worker owning the partition. WorkQueue retention. */
  work: 'SL_WORK',
  /** PLEG lifecycle events. Limits retention: "why did my pod restart?" */
  pleg: 'SL_PLEG',
  /** Status updates from pod-workers to status-manager. */
  status: 'SL_STATUS',
  /** Kubernetes-style events recorded by any process. */
  events: 'SL_EVENTS',
  /** Messages that could not be processed, with the reason. */
  deadLetter: 'SL_DLQ',
  /** Finished spans kept on the bus so the CLI can show traces without a collector. */
  spans: 'SL_SPANS',
} as const;

/** KV bucket names and their single writers. */
export const Buckets = {
  /** Writer: sync-loop. Key `<node>.<pp>.<uid>` → DesiredPod. Latest put wins. */
  desired: 'sl_desired',
  /** Writer: sync-loop creates, the owning pod-worker deletes after termination. Key `<node>.<pp>.<uid>` → KillRequest. */
  kill: 'sl_kill',
  /** Writer: pod-worker (partition owner). Key `<node>.<pp>.<uid>` → WorkerRecord. */
  worker: 'sl_worker',
  /** Writer: pod-worker. Key `<node>.<pp>` → PartitionLease. Bucket TTL expires dead owners. */
  leases: 'sl_leases',
  /** Writer: each pod-worker instance for its own key. Key `<node>.<instance>` → member heartbeat. */
  members: 'sl_members',
  /** Writer: pleg. Key `<node>.<uid>` → RuntimeCacheEntry; `<node>._relist` → RelistMark. */
  runtime: 'sl_runtime',
  /** Writer: volume-manager. Key `<node>.<uid>` → PodVolumeState. */
  volumes: 'sl_volumes',
  /** Writer: status-manager. Key `<node>.<uid>` → PodStatusRecord. */
  status: 'sl_status',
  /** Writer: prober. Key `<node>.<uid>` → PodProbeResults (the liveness/readiness/startup results managers). */
  probe: 'sl_probe',
  /** Writer: sync-loop. Key `<node>` → sources seen / node config. */
  node: 'sl_node',
  /** Writer: sync-loop (one active per node). Key `<node>` → leader lease. */
  syncLoopLeader: 'sl_syncloop_leader',
  /** Writer: cri-adapter. Key `<node>` → BackoffTables (crash-loop and image-pull backoff survive a restart). */
  criBackoff: 'sl_cri_backoff',
  /**
   * Writer: the node's volume-manager (node-local: it measures the node it runs on). Key `<node>` →
   * NodeCapacity. sync-loop watches it for admission.
   */
  nodeCapacity: 'sl_node_capacity',
  /**
   * Writer: the node's cri-adapter. Key `<node>` → NodeRuntimeStatus, whether the container runtime
   * answers Status with RuntimeReady (status-manager's Ready condition).
   */
  nodeRuntime: 'sl_node_runtime',
  /**
   * Writer: the node's cri-adapter. Key `<node>.<partition>` → FenceEpoch, the newest pod-worker
   * epoch it accepted for the partition, so a restarted cri-adapter still refuses older ones.
   */
  criFences: 'sl_cri_fences',
  /** Writer: config-source (its `api` source). Key `<node>.<namespace>.<name>` → ApiPodRecord. */
  apiPods: 'sl_api_pods',
} as const;

/** Subject builders. `node` is the node *name*; it is encoded here. */
export const Subjects = {
  config: (node: string, source: string) => `sl.${nodeToken(node)}.config.${source}`,
  configAll: (node: string) => `sl.${nodeToken(node)}.config.>`,
  work: (node: string, partition: number, uid: string) => `sl.${nodeToken(node)}.work.${partition}.${uid}`,
  workPartition: (node: string, partition: number) => `sl.${nodeToken(node)}.work.${partition}.*`,
  pleg: (node: string, uid: string) => `sl.${nodeToken(node)}.pleg.${uid}`,
  plegAll: (node: string) => `sl.${nodeToken(node)}.pleg.*`,
  /** Core NATS (no stream): ask pleg to relist now, e.g. right after a runtime change. */
  plegRelist: (node: string) => `sl.${nodeToken(node)}.plegrelist`,
  /**
   * Core NATS (no stream), cri-adapter → pleg: what the runtime's event stream (CRI
   * GetContainerEvents) and cri-adapter's operations reported about pod `uid` (RuntimeEventMessage).
   */
  runtimeEvents: (node: string, uid: string) => `sl.${nodeToken(node)}.runtimeevents.${uid}`,
  /** The state of cri-adapter's runtime event stream (live / down, with its last sequence number): the heartbeat of the evented PLEG. */
  runtimeEventStream: (node: string) => `sl.${nodeToken(node)}.runtimeevents._stream`,
  /** Every RuntimeEventMessage of the node (pods and stream state), in the order cri-adapter sent them. */
  runtimeEventsAll: (node: string) => `sl.${nodeToken(node)}.runtimeevents.*`,
  status: (node: string, uid: string) => `sl.${nodeToken(node)}.status.${uid}`,
  statusAll: (node: string) => `sl.${nodeToken(node)}.status.*`,
  events: (node: string, uid: string) => `sl.${nodeToken(node)}.events.${uid}`,
  eventsAll: (node: string) => `sl.${nodeToken(node)}.events.*`,
  deadLetter: (node: string, origin: string) => `sl.${nodeToken(node)}.dlq.${origin}`,
  spans: (node: string, traceId: string) => `sl.${nodeToken(node)}.spans.${traceId}`,
  spansAll: (node: string) => `sl.${nodeToken(node)}.spans.*`,
  /** Request/reply endpoints (NATS services). */
  rpc: {
    runtime: (node: string, op: RuntimeOp) => `sl.${nodeToken(node)}.rpc.runtime.${op}`,
    volume: (node: string, op: VolumeOp) => `sl.${nodeToken(node)}.rpc.volume.${op}`,
    /** config-source's `api` source: `splitlet apply` / `delete` over the bus. */
    config: (node: string, op: ConfigOp) => `sl.${nodeToken(node)}.rpc.config.${op}`,
    /** Container log files, served by cri-adapter on the node (the kubelet's containerLogs). */
    logs: (node: string) => `sl.${nodeToken(node)}.rpc.logs.read`,
  },
} as const;

export const RuntimeOps = ['syncPod', 'killPod', 'getPodStatus', 'relist', 'garbageCollect', 'exec'] as const;
export type RuntimeOp = (typeof RuntimeOps)[number];
export const VolumeOps = ['mount', 'unmount', 'cleanup'] as const;
export type VolumeOp = (typeof VolumeOps)[number];
export const ConfigOps = ['apply', 'delete'] as const;
export type ConfigOp = (typeof ConfigOps)[number];

/** KV keys. */
export const Keys = {
  podInPartition: (node: string, partition: number, uid: string) => `${nodeToken(node)}.${partition}.${uid}`,
  partitionPrefix: (node: string, partition: number) => `${nodeToken(node)}.${partition}.>`,
  nodePrefix: (node: string) => `${nodeToken(node)}.>`,
  pod: (node: string, uid: string) => `${nodeToken(node)}.${uid}`,
  relistMark: (node: string) => `${nodeToken(node)}._relist`,
  lease: (node: string, partition: number) => `${nodeToken(node)}.${partition}`,
  member: (node: string, instance: string) => `${nodeToken(node)}.${instance}`,
  node: (node: string) => nodeToken(node),
  /** `sl_node`: the last config update sync-loop applied from each earlier config-source start. */
  appliedUpdates: (node: string) => `${nodeToken(node)}._applied`,
  /** `sl_cri_fences`: one key per partition of the node. */
  fence: (node: string, partition: number) => `${nodeToken(node)}.${partition}`,
  apiPod: (node: string, namespace: string, name: string) => `${nodeToken(node)}.${namespace}.${name}`,
} as const;

/** Durable consumer names. */
export const Consumers = {
  syncLoopConfig: (node: string) => `sync-loop-config-${nodeToken(node)}`,
  syncLoopPleg: (node: string) => `sync-loop-pleg-${nodeToken(node)}`,
  podWorkerPartition: (node: string, partition: number) => `pod-worker-${nodeToken(node)}-${partition}`,
  statusManager: (node: string) => `status-manager-${nodeToken(node)}`,
  /** status-manager's copy of the node's events, posted to the API server (cluster mode). */
  statusManagerEvents: (node: string) => `status-manager-events-${nodeToken(node)}`,
} as const;
