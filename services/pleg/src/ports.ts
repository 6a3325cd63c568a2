/**
 * The narrow interfaces pleg consumes (declared by the consumer, kubelet `volumemanager` style).
 */
import type { DesiredPod, PodLifecycleEvent, RelistMark, RuntimeCacheEntry, RuntimePodStatus } from '@splitlet/api';

/** The runtime's pods, as cri-adapter's `relist` returns them (kubecontainer.Runtime.GetPods(all=true) + statuses). */
export interface RuntimeLister {
  /**
   * Every pod the runtime knows, with its sandboxes and containers; with `uids`, only those pods
   * (a pod the runtime does not know is absent). Rejects on a failed or timed-out request.
   */
  relist(uids?: readonly string[]): Promise<readonly RuntimePodStatus[]>;
}

/** What the runtime cache looked like when pleg last wrote it. */
export interface RuntimeCacheSnapshot {
  readonly entries: ReadonlyMap<string, RuntimeCacheEntry>;
  readonly mark: RelistMark | undefined;
}

/** The runtime pod cache (`sl_runtime`), which pleg alone writes. */
export interface RuntimeCacheStore {
  /** Every entry of this node, to start from what the previous pleg saw (no event replay after a restart). */
  load(): Promise<RuntimeCacheSnapshot>;
  /** cache.Set: the pod's status as observed at `entry.timestamp`. Resolves to the entry's revision. */
  put(entry: RuntimeCacheEntry): Promise<number>;
  /** cache.Delete: the pod has no sandbox or container left. */
  delete(uid: string): Promise<void>;
  /** cache.UpdateTime: every pod's entry is at least as new as `mark.timestamp`. */
  putMark(mark: RelistMark): Promise<void>;
}

/** Where lifecycle events go (the kubelet's plegCh). */
export interface LifecycleEventSink {
  /**
   * Publishes one runtime cache write's events of one pod (at least one), in order, together.
   * Rejects with {@link EventsPartlyPublished} when the events took more than one message and the
   * first of them went out; with any other error, none did.
   */
  publish(events: readonly PodLifecycleEvent[]): Promise<void>;
}

/** A publish of a write's events that failed after its first `published` events went out. */
export class EventsPartlyPublished extends Error {
  readonly published: number;
  constructor(published: number, of: number, cause: unknown) {
    super(`${published} of ${of} PLEG events were published before the rest failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'EventsPartlyPublished';
    this.published = published;
  }
}

/**
 * The desired pods (`sl_desired`, sync-loop's bucket), read only to trace a container's death:
 * whether it begins a new episode and which creation trace to link it to.
 */
export interface DesiredPodReader {
  /** The pod's latest desired record; `undefined` when the pod is not desired. Rejects when KV is unavailable. */
  get(uid: string): Promise<DesiredPod | undefined>;
}
