/**
 * The narrow interfaces sync-loop consumes (declared by the consumer).
 */
import type { Context } from '@opentelemetry/api';
import type {
  DesiredPod,
  KillRequest,
  KubeEvent,
  PodSource,
  PodStatusUpdate,
  RuntimeCacheEntry,
  RuntimeGarbageCollectReply,
  RuntimeGarbageCollectRequest,
  SyncPodType,
  WorkerRecord,
} from '@splitlet/api';

/** The desired pods (`sl_desired`), which sync-loop alone writes. */
export interface DesiredStore {
  /** Every desired pod of this node (the pod manager is rebuilt from it at start). */
  list(): Promise<DesiredPod[]>;
  /** Latest wins. */
  put(desired: DesiredPod): Promise<void>;
  delete(uid: string): Promise<void>;
}

/** A stored kill request and its revision (for compare-and-swap). */
export interface StoredKill {
  readonly value: KillRequest;
  readonly revision: number;
}

/** Kill requests (`sl_kill`): sync-loop creates them, the pod-worker that carried one out deletes it. */
export interface KillStore {
  /** Creates the request; false when one is already pending for the pod (the first kill wins). */
  create(request: KillRequest): Promise<boolean>;
  get(uid: string): Promise<StoredKill | undefined>;
  /** Compare-and-swap; false when the request moved on (changed or deleted) meanwhile. */
  update(request: KillRequest, revision: number): Promise<boolean>;
}

/** Pokes the pod's partition on `SL_WORK` (HandlePod* → UpdatePod → dispatch to the pod worker). */
export interface WorkPoker {
  /** Publishes a WorkPoke; `ctx` (default: the active context) becomes the poke's trace parent. */
  poke(uid: string, kind: SyncPodType, ctx?: Context): Promise<void>;
}

/** Status updates to status-manager (`SL_STATUS`). */
export interface StatusSink {
  publish(update: PodStatusUpdate): Promise<void>;
}

/** Kubernetes-style events (`SL_EVENTS`). */
export interface EventRecorder {
  record(event: KubeEvent): Promise<void>;
}

/** volume-manager's orphaned pod directory cleanup. */
export interface VolumeCleaner {
  /** Removes the pod directories of every UID not in `keep`; returns the removed UIDs. */
  cleanup(keep: readonly string[]): Promise<readonly string[]>;
}

/** cri-adapter's container garbage collection (`sl.<node>.rpc.runtime.garbageCollect`). */
export interface RuntimeGarbageCollector {
  /** One run; rejects when the request could not be served (no reply, no responder). */
  garbageCollect(request: RuntimeGarbageCollectRequest): Promise<RuntimeGarbageCollectReply>;
}

/** Which sources were seen (kubelet sourcesReady), persisted across restarts in `sl_node`. */
export interface SourcesSnapshot {
  /** Every source config-source runs (from the latest PodUpdate). */
  readonly sources: readonly PodSource[];
  /** The sources that sent at least one update. */
  readonly seen: readonly PodSource[];
}

/** The sync-loop's node record (`sl_node`). */
export interface SourcesStore {
  load(): Promise<SourcesSnapshot | undefined>;
  save(snapshot: SourcesSnapshot): Promise<void>;
}

/**
 * The last applied update's `seq` of the publishers that came before the newest (oldest first),
 * persisted across restarts in `sl_node` (see applied-updates.ts).
 */
export interface AppliedUpdatesStore {
  load(): Promise<ReadonlyArray<readonly [publisher: string, seq: number]>>;
  save(last: ReadonlyArray<readonly [publisher: string, seq: number]>): Promise<void>;
}

/** A read-only, in-memory view of a KV bucket kept current by a watch. */
export interface KvView<T> {
  get(uid: string): T | undefined;
  values(): Iterable<T>;
  readonly size: number;
}

/** The views sync-loop reads (never writes): pod workers' state, the runtime cache, pending kills. */
export interface ClusterViews {
  readonly workers: KvView<WorkerRecord>;
  readonly runtime: KvView<RuntimeCacheEntry>;
  readonly kills: KvView<KillRequest>;
}
