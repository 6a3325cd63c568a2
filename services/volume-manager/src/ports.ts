/**
 * The narrow interfaces volume-manager consumes. The domain (`src/volumes`) depends only on these,
 * a clock and a logger; `src/adapters` implements them over NATS and the host.
 */
import type { KubeEvent, NodeCapacity, PodVolumeState } from '@splitlet/api';

/**
 * Mounts that need privileges (tmpfs for `emptyDir.medium: Memory`).
 *
 * Models k8s.io/mount-utils Interface (Mount, Unmount, IsLikelyNotMountPoint), reduced to what the
 * emptyDir plugin uses.
 */
export interface Mounter {
  /** Mounts a tmpfs of `sizeBytes` on `dir` (which exists). */
  mountTmpfs(dir: string, sizeBytes: number): Promise<void>;
  /** Unmounts whatever is mounted on `dir`. */
  unmount(dir: string): Promise<void>;
  /** Every mount point at or below `dir` (absolute, normalised), deepest first. */
  mountPointsUnder(dir: string): Promise<string[]>;
}

/**
 * The actual state of world, persisted: bucket `sl_volumes`, key `<node>.<uid>`, one writer
 * (this process).
 */
export interface VolumeStateStore {
  put(state: PodVolumeState): Promise<void>;
  get(uid: string): Promise<PodVolumeState | null>;
  delete(uid: string): Promise<void>;
  /** Every state this node has stored (to rebuild the actual state of world after a restart). */
  list(): Promise<PodVolumeState[]>;
}

/** Records a Kubernetes event (fire and forget from the domain's view; failures are the adapter's to log). */
export interface EventRecorder {
  record(event: KubeEvent, uid: string): Promise<void>;
}

/** Wall-clock time, injectable for tests. */
export interface Clock {
  now(): number;
}

/**
 * The volume metrics the kubelet exports (pkg/volume/util/metrics.go, volumemanager/metrics).
 */
export interface VolumeMetrics {
  /** `storage_operation_duration_seconds{operation_name, volume_plugin, status, migrated}`. */
  observeOperation(operation: 'volume_mount' | 'volume_unmount', plugin: string, ok: boolean, seconds: number): void;
  /** `volume_manager_total_volumes{plugin_name, state}`: volumes per plugin in the actual state of world. */
  setTotals(byPlugin: ReadonlyMap<string, number>): void;
}

/** The node's own facts, measured where this process runs (it is node-local). */
export interface NodeProbe {
  /** Logical CPUs of the machine (cadvisor's NumCores). */
  cpuCount(): number;
  /** Total memory in bytes (cadvisor's MemoryCapacity). */
  memoryBytes(): number;
  /** Size in bytes of the filesystem holding `path` (or its nearest existing parent). */
  filesystemBytes(path: string): Promise<number>;
}

/** Where the node's capacity is published: bucket `sl_node_capacity`, key `<node>`, one writer (this process). */
export interface NodeCapacityStore {
  put(capacity: NodeCapacity): Promise<void>;
}

/** A configMap or secret a volume reads. */
export interface ApiObjectRef {
  readonly kind: 'configmap' | 'secret';
  readonly namespace: string;
  readonly name: string;
}

/**
 * The API objects volumes read, on the node (cluster mode; absent in standalone mode): a watch-based
 * cache, so a read is local once the object is watched, and a change is pushed. Values are only
 * ever held here and written into the pod's volume: never logged, traced or published.
 */
export interface ApiObjectReader {
  /** The object's values by key (configMap `data` + `binaryData`, secret `data`, decoded). Rejects: NotFound (`configmap "x" not found`), or the cache's error. */
  read(ref: ApiObjectRef): Promise<Map<string, Buffer>>;
  /** True for a read's NotFound rejection. */
  isNotFound(e: unknown): boolean;
  /** Keeps exactly `refs` watched on behalf of `holder` (a pod UID). */
  hold(holder: string, refs: readonly ApiObjectRef[]): void;
  /** The holders of `ref`. */
  holders(ref: ApiObjectRef): string[];
  /** Called after a watched object changed. */
  onChange(listener: (ref: ApiObjectRef) => void): void;
}
