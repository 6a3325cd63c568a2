/**
 * The narrow interfaces the pod-worker's domain code consumes. Adapters (src/adapters) implement
 * them over the bus; tests implement them with in-memory fakes.
 */
import type { Context } from '@opentelemetry/api';
import type {
  DesiredPod,
  KillRequest,
  KubeEvent,
  PartitionLease,
  PodStatusRecord,
  PodStatusUpdate,
  ProbeResultsByType,
  RuntimeCacheEntry,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimePodStatus,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  SyncPodType,
  VolumeMountReply,
  VolumeMountRequest,
  VolumeUnmountReply,
  VolumeUnmountRequest,
  WorkerRecord,
} from '@splitlet/api';
import type { Clock, TimerHandle } from '@splitlet/service';

export type { Clock, TimerHandle };

/** The structured logger the domain code writes through (the telemetry logger satisfies it). */
export interface Log {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A received work poke as the pod workers hold it until a covering sync completes. */
export interface PokeDelivery {
  ack(): void;
  nak(delayMs?: number): void;
  /** Extends the ack deadline (JetStream `+WPI`). */
  working(): void;
  /** The consumer span's context (parent for a sync the poke caused). */
  readonly context?: Context;
}

/** The revisions of the pod's records a poke from sync-loop names (`WorkPoke.desiredRevision`, `killRevision`); undefined: none. */
export interface NamedRevisions {
  readonly desired: number | undefined;
  readonly kill: number | undefined;
}

/** A KV value with the revision it was read at. */
export interface Versioned<T> {
  readonly value: T;
  readonly revision: number;
}

/**
 * The per-pod KV state a sync reads and writes: `sl_desired`, `sl_kill`, `sl_worker` under
 * `<node>.<pp>.<uid>` and `sl_status` under `<node>.<uid>`.
 */
export interface PodStateStore {
  getDesired(partition: number, uid: string): Promise<Versioned<DesiredPod> | null>;
  getKill(partition: number, uid: string): Promise<Versioned<KillRequest> | null>;
  getWorker(partition: number, uid: string): Promise<Versioned<WorkerRecord> | null>;
  /** The status-manager's cached API status (generateAPIPodStatus's old status). */
  getApiStatus(uid: string): Promise<PodStatusRecord | null>;
  /** Unconditional put: the partition owner is the only writer. */
  putWorker(partition: number, record: WorkerRecord): Promise<number>;
  deleteWorker(partition: number, uid: string): Promise<void>;
  /** Deletes the kill request only if it is still at `revision` (a shortened grace moves it on). */
  deleteKill(partition: number, uid: string, revision: number): Promise<void>;
  /** Every pod UID with a desired record, a kill request or a worker record in the partition. */
  listPartitionUids(partition: number): Promise<string[]>;
}

/** The result of {@link RuntimeStatusSource.getNewerThan}. */
export interface CachedRuntimeStatus {
  /** The pod's runtime status; an empty status when the runtime does not know the pod. */
  readonly status: RuntimePodStatus;
  /** The cache time the status is valid at (entry timestamp or relist mark). */
  readonly timestamp: number;
  /** True when the bounded wait expired before the cache got newer than asked. */
  readonly stale: boolean;
  /** The pod's latest runtime episode (a container death pleg traced as a new trace), if any. */
  readonly episode?: RuntimeCacheEntry['episode'];
}

/** The pleg cache as the pod workers read it (podCache.GetNewerThan). */
export interface RuntimeStatusSource {
  /**
   * Resolves with the pod's runtime status once the cache holds data newer than `after`
   * (the pod's entry or the relist mark), or after the bounded wait with `stale: true`.
   * Rejects with the signal's reason when `signal` aborts.
   */
  getNewerThan(uid: string, after: number, signal: AbortSignal): Promise<CachedRuntimeStatus>;
}

/** The prober's results of a pod (`sl_probe`, which the prober alone writes). */
export interface ProbeResultsSource {
  /** The pod's liveness/readiness/startup results by container id; undefined when the prober has none. */
  get(uid: string): Promise<ProbeResultsByType | undefined>;
}

/** cri-adapter's request/reply endpoints. */
export interface RuntimeClient {
  /** Waits up to `timeoutMs` for cri-adapter, also while it is not serving yet; `signal` ends the wait. */
  syncPod(req: RuntimeSyncPodRequest, timeoutMs: number, signal?: AbortSignal): Promise<RuntimeSyncPodReply>;
  killPod(req: RuntimeKillPodRequest, timeoutMs: number, signal?: AbortSignal): Promise<RuntimeKillPodReply>;
}

/** volume-manager's request/reply endpoints. */
export interface VolumeClient {
  /** Waits up to `timeoutMs` for volume-manager, also while it is not serving yet; `signal` ends the wait. */
  mount(req: VolumeMountRequest, timeoutMs: number, signal?: AbortSignal): Promise<VolumeMountReply>;
  unmount(req: VolumeUnmountRequest, timeoutMs: number, signal?: AbortSignal): Promise<VolumeUnmountReply>;
}

/** statusManager.SetPodStatus / TerminatePod / RemovePod, as messages to status-manager. */
export interface StatusSink {
  send(update: PodStatusUpdate): Promise<void>;
}

/** The event recorder. */
export interface EventSink {
  record(event: KubeEvent): Promise<void>;
}

/** The pod-worker's own metrics (kubelet names). */
export interface SyncMetrics {
  /** kubelet_pod_worker_duration_seconds{operation_type}. */
  observeWorkerDuration(operationType: SyncPodType | 'terminated', seconds: number): void;
  /** kubelet_pod_worker_start_duration_seconds. */
  observeWorkerStart(seconds: number): void;
  /** kubelet_pod_start_duration_seconds. */
  observePodStart(seconds: number): void;
  /**
   * kubelet_pod_start_sli_duration_seconds and kubelet_pod_start_total_duration_seconds: creation
   * → every regular container running, without (`sli`) and with (`total`) image pulls.
   */
  observePodStartSli?(sliSeconds: number, totalSeconds: number): void;
  /** splitlet_pod_worker_settled_syncs_total{status_sent}: a settled sync (no mount, no runtime SyncPod). */
  observeSettledSync?(statusSent: boolean): void;
}

/** Metrics that record nothing. */
export const noMetrics: SyncMetrics = {
  observeWorkerDuration: () => undefined,
  observeWorkerStart: () => undefined,
  observePodStart: () => undefined,
  observePodStartSli: () => undefined,
  observeSettledSync: () => undefined,
};

/** The partition lease bucket `sl_leases`. */
export interface LeaseStore {
  get(partition: number): Promise<Versioned<PartitionLease> | null>;
  /** Throws a Conflict error (code `Conflict`) when the key exists. Returns the revision (the epoch). */
  create(partition: number, lease: PartitionLease): Promise<number>;
  /** CAS renew. Throws a Conflict error when the key moved on or is gone. */
  update(partition: number, lease: PartitionLease, revision: number): Promise<number>;
  /** Deletes the lease only while it is still at `revision`. */
  delete(partition: number, revision: number): Promise<void>;
}

/** The member heartbeat bucket `sl_members`. */
export interface MemberStore {
  heartbeat(instance: string): Promise<void>;
  /** Instances whose heartbeat key is present (not yet expired). */
  live(): Promise<string[]>;
  remove(instance: string): Promise<void>;
}

/** A running partition consumer. */
export interface WorkConsumption {
  /** Resolves when the consumer stopped and its in-flight handlers returned. */
  readonly done: Promise<void>;
  /** The time of the last message or heartbeat. */
  lastActivity(): number;
}

/** The work stream: one durable consumer per partition. */
export interface WorkSource {
  /** `onPoke` gets each valid poke's pod, kind, delivery and the revisions it names. */
  consume(partition: number, signal: AbortSignal, onPoke: (uid: string, kind: SyncPodType, delivery: PokeDelivery, named: NamedRevisions) => void): Promise<WorkConsumption>;
}
