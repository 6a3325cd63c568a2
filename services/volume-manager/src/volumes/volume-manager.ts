/**
 * The node's pod volumes: desired state arrives as requests (mount / unmount / cleanup), the actual
 * state of world is kept in memory and persisted to `sl_volumes`.
 *
 * Models pkg/kubelet/volumemanager (volume_manager.go WaitForAttachAndMount / WaitForUnmount,
 * cache/actual_state_of_world.go, reconciler), pkg/volume/emptydir/empty_dir.go (SetUpAt,
 * TearDownAt, calculateEmptyDirMemorySize), pkg/volume/hostpath/host_path.go, and
 * kubelet_pods.go (makePodDataDirs, cleanupOrphanedPodDirs), pkg/volume/downwardapi (through
 * downward-api-volume.ts and atomic-writer.ts) and volume_linux.go SetVolumeOwnership (fsGroup).
 *
 * ```
 * mount(pod)      makePodDataDirs → per volume SetUp (span `volume.mount <name>`) → ASW + sl_volumes
 *                 any failure → FailedMount events, sl_volumes{error}, error reply (retryable)
 * unmount(uid)    TearDown every volume (unmount tmpfs, remove emptyDir dirs) → ASW unmounted;
 *                 removeContent → the pod dir is removed and the sl_volumes key deleted
 * cleanup(keep)   pod dirs not in keep, not mounted in ASW and without mount points → removed
 * ```
 *
 * Concurrency: one operation per pod UID at a time (a {@link KeyedMutex}); different pods run in
 * parallel. Every operation is idempotent: a repeated mount returns the same paths.
 *
 * One file on purpose: the actual state of world and the reconcile steps that change it (mount, unmount, cleanup) share one lock and one cache; each volume plugin is a module of its own.
 */
import { cpus, totalmem } from 'node:os';
import { access, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Tracer } from '@opentelemetry/api';
import { KubeletError, errorMessage } from '@splitlet/api';
import type { BoundPod, Fence, KubeEvent, MountedVolumes, PodVolumeState, Volume, VolumeCleanupReply, VolumeMountReply, VolumeUnmountReply } from '@splitlet/api';
import { FenceKeeper, type DownwardApiContext } from '@splitlet/kube';
import { KeyedMutex } from '@splitlet/service';
import { podSpanAttributes, withSpan } from '@splitlet/telemetry';
import type { Logger } from '@splitlet/telemetry';
import type { ApiObjectReader, ApiObjectRef, Clock, EventRecorder, Mounter, VolumeMetrics, VolumeStateStore } from '../ports.js';
import { configMapVolumePayload, isApiObjectVolume, projectedVolumePayload, secretVolumePayload, volumeObjectRefs } from './api-volumes.js';
import { writeAtomically, type ProjectedFile } from './atomic-writer.js';
import { downwardApiInputs, downwardApiPayload } from './downward-api-volume.js';
import { setUpHostPath } from './host-path.js';
import type { HostPathTypeChecker } from './host-path.js';
import { listPodsFromDisk, makeEmptyDir, makePodDataDirs, PluginNames, removeAllOneFilesystem } from './pod-dirs.js';
import type { PodPaths } from './pod-dirs.js';
import { parseByteQuantity } from './quantity.js';
import { podFsGroup, setVolumeOwnership } from './volume-ownership.js';

/** Error codes of volume operations (on the wire as WireError.code). */
export const VolumeErrorCodes = {
  /** A volume could not be set up. Retryable: the pod-worker tries again on its next sync. */
  FailedMount: 'FailedMount',
  /** The pod's data directories could not be made. Retryable. */
  Failed: 'Failed',
  /** A teardown or removal failed. Retryable. */
  FailedUnmount: 'FailedUnmount',
  /** The request names a pod or volume that cannot be a directory name. Not retryable. */
  InvalidRequest: 'InvalidRequest',
} as const;

/** The volume source a volume uses, as the kubelet's plugin manager would pick it. */
export type VolumeType = 'emptyDir' | 'hostPath' | 'configMap' | 'secret' | 'projected' | 'downwardAPI' | 'persistentVolumeClaim' | (string & {});

/** Volume types whose content comes from API objects (configMaps, secrets), re-projected when they change. */
const OBJECT_VOLUME_TYPES: readonly string[] = ['configMap', 'secret', 'projected'];
/** Volume types this node has no plugin for (attachable: a failure leaves them "unattached"). */
const UNSUPPORTED_VOLUME_TYPES: readonly string[] = ['persistentVolumeClaim'];
const KNOWN_SOURCE_KEYS: readonly string[] = ['emptyDir', 'hostPath', 'downwardAPI', ...OBJECT_VOLUME_TYPES, ...UNSUPPORTED_VOLUME_TYPES];
/** Plugins whose volume directories live under the pod dir and go at teardown. */
const POD_LOCAL_PLUGINS = [PluginNames.emptyDir, PluginNames.downwardAPI, PluginNames.configMap, PluginNames.secret, PluginNames.projected] as const;
/** The plugin (and directory) of each volume type the node sets up in the pod directory. */
const OBJECT_VOLUME_PLUGINS: Readonly<Record<string, string>> = { configMap: PluginNames.configMap, secret: PluginNames.secret, projected: PluginNames.projected };

/**
 * The source type of a volume: the first set source field; a volume with none is an emptyDir (API
 * defaulting); an unknown source key (nfs, iscsi, csi…) is reported as itself.
 */
export function volumeType(v: Volume): VolumeType {
  for (const k of KNOWN_SOURCE_KEYS) {
    if ((v as Record<string, unknown>)[k] !== undefined && (v as Record<string, unknown>)[k] !== null) return k;
  }
  const other = Object.keys(v).find((k) => k !== 'name' && (v as Record<string, unknown>)[k] !== undefined && (v as Record<string, unknown>)[k] !== null);
  return other ?? 'emptyDir';
}

/** The kubelet plugin name of a volume type, for metrics. */
export function pluginName(t: VolumeType): string {
  if (t === 'emptyDir') return PluginNames.emptyDir;
  if (t === 'hostPath') return PluginNames.hostPath;
  if (t === 'downwardAPI') return PluginNames.downwardAPI;
  const own = OBJECT_VOLUME_PLUGINS[t];
  if (own !== undefined) return own;
  const kebab = t.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return `kubernetes.io/${kebab}`;
}

/** Dependencies of {@link VolumeManager}. */
export interface VolumeManagerDeps {
  readonly nodeName: string;
  readonly paths: PodPaths;
  readonly mounter: Mounter;
  readonly store: VolumeStateStore;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  /** May `emptyDir.medium: Memory` mount a tmpfs? (needs CAP_SYS_ADMIN) */
  readonly allowTmpfs: boolean;
  readonly metrics?: VolumeMetrics;
  /** Size of a Memory emptyDir with neither a sizeLimit nor a pod memory limit. @default the node's total memory */
  readonly defaultTmpfsBytes?: number;
  /** The hostPath type checker (a test seam). @default the real filesystem checker */
  readonly hostPathChecker?: (path: string) => HostPathTypeChecker;
  /** Node allocatable, for downwardAPI `resourceFieldRef` items of containers without limits. @default the host's cpus and memory */
  readonly nodeAllocatable?: DownwardApiContext['nodeAllocatable'];
  /**
   * The configMaps and secrets of configMap / secret / projected volumes, read on the node (cluster
   * mode). Absent: standalone mode, and those volumes fail with the kubelet's no-client error.
   */
  readonly objects?: ApiObjectReader;
}

/** An entry of the actual state of world; replaced as a whole, never changed in place (the totals count it). */
interface AswEntry {
  readonly state: Readonly<PodVolumeState>;
  /** The pod's `spec.volumes` as JSON, to recognise a repeated mount of the same pod. */
  readonly volumesKey: string;
  /** Plugin per mounted volume, for metrics. */
  readonly plugins: ReadonlyMap<string, string>;
}

interface VolumeFailure {
  name: string;
  message: string;
  /** No plugin can attach it (unsupported type), so it is also "unattached". */
  unattached: boolean;
}

/** Volume-manager's domain object. Create one per process; see the file comment for the contract. */
export class VolumeManager {
  readonly #d: VolumeManagerDeps;
  readonly #fences = new FenceKeeper();
  readonly #mutex: KeyedMutex;
  readonly #asw = new Map<string, AswEntry>();
  /**
   * Mounted volumes per plugin over the mounted entries of {@link #asw}, kept up to date by
   * {@link #aswSet} / {@link #aswDelete} so that publishing the totals does not walk every pod.
   */
  readonly #mountedByPlugin = new Map<string, number>();
  /** Mounted pods with configMap / secret / projected volumes, re-projected when their objects change. */
  readonly #objectPods = new Map<string, BoundPod>();
  /**
   * The pods with a key in `sl_volumes`. This process is the bucket's only writer (one
   * volume-manager per node): loaded by {@link reconstruct}, then kept by its own puts and deletes,
   * so housekeeping's cleanup need not list the bucket every time.
   */
  readonly #stored = new Set<string>();
  /** Whether {@link #stored} has been loaded from the bucket (by reconstruct, else the first cleanup). */
  #storedLoaded = false;
  /** State writes of mounts that replied before the write ended. */
  readonly #writing = new Set<Promise<void>>();

  constructor(deps: VolumeManagerDeps) {
    this.#d = deps;
    this.#mutex = new KeyedMutex(deps.clock);
    deps.objects?.onChange((ref) => this.#objectChanged(ref));
  }

  /**
   * Rebuilds the actual state of world from `sl_volumes` (after a restart), so that cleanup keeps
   * pods whose volumes are still mounted and unmount knows their volumes.
   *
   * Models volumemanager reconstruct (syncStates) in spirit: the kubelet rebuilds from disk.
   */
  async reconstruct(): Promise<number> {
    const states = await this.#d.store.list();
    for (const s of states) this.#stored.add(s.uid);
    this.#storedLoaded = true;
    for (const s of states) {
      if (this.#asw.has(s.uid)) continue;
      const plugins = new Map<string, string>();
      for (const name of Object.keys(s.volumes)) plugins.set(name, 'unknown');
      this.#aswSet(s.uid, { state: s, volumesKey: '', plugins });
    }
    this.#publishTotals();
    return states.length;
  }

  /** For health by progress: how long the oldest in-flight operation has been running. */
  oldestOperationMs(): number {
    return this.#mutex.oldestRunningMs();
  }

  /** The in-memory actual state for `uid` (a copy), if any. */
  actualState(uid: string): PodVolumeState | undefined {
    const e = this.#asw.get(uid);
    return e === undefined ? undefined : structuredClone(e.state);
  }

  /**
   * Makes the pod's data dirs and sets up every volume. Idempotent: a repeated mount of an already
   * mounted pod with the same volumes returns the recorded paths without touching the disk.
   * Throws KubeletError `FencedOff` (stale fence), `Failed` (data dirs), `FailedMount` (any volume;
   * retryable), `InvalidRequest`.
   */
  async mount(pod: BoundPod, fence: Fence): Promise<VolumeMountReply> {
    const uid = pod.metadata.uid;
    this.#fences.check(fence);
    const podDir = this.#podDir(uid);
    // A successful mount replies once the volumes are set up, and keeps the pod's lock until its
    // state is in `sl_volumes` (the write's outcome never changed the reply): the caller does not
    // wait for the write, and the pod's next operation still comes after it.
    let replyEarly!: (reply: VolumeMountReply) => void;
    const early = new Promise<VolumeMountReply>((resolve) => (replyEarly = resolve));
    const done = this.#mutex.run(uid, async (): Promise<VolumeMountReply> => {
      this.#fences.check(fence);
      const volumes = pod.spec.volumes ?? [];
      // A downwardAPI volume also depends on the pod's labels and annotations: a change re-projects it.
      const volumesKey = JSON.stringify(volumes) + (volumes.some((v) => volumeType(v) === 'downwardAPI') ? downwardApiInputs(pod) : '');
      const cached = this.#asw.get(uid);
      // configMap / secret / projected volumes are projected again at every mount (the kubelet's
      // remount at each sync); the atomic writer leaves unchanged content alone.
      const objectVolumes = this.#d.objects !== undefined && volumes.some(isApiObjectVolume);
      if (objectVolumes) {
        this.#objectPods.set(uid, pod);
        this.#d.objects?.hold(uid, volumeObjectRefs(pod));
      }
      if (!objectVolumes && cached !== undefined && cached.state.mounted && cached.volumesKey === volumesKey && (await exists(podDir))) {
        return { type: 'kubelet.volume.MountReply.v1', podDir, volumes: structuredClone(cached.state.volumes) };
      }
      try {
        await makePodDataDirs(this.#d.paths, uid);
      } catch (e) {
        const message = `error making pod data directories: ${errorMessage(e)}`;
        await this.#recordPodEvent(pod, 'Failed', message);
        throw new KubeletError(VolumeErrorCodes.Failed, message, { retryable: true, cause: e });
      }
      const mounted: MountedVolumes = {};
      const plugins = new Map<string, string>();
      const failures: VolumeFailure[] = [];
      for (const v of volumes) {
        const type = volumeType(v);
        const plugin = pluginName(type);
        const started = this.#d.clock.now();
        try {
          const hostPath = await withSpan(
            this.#d.tracer,
            `volume.mount ${v.name}`,
            { attributes: { ...podSpanAttributes(pod.metadata), 'k8s.volume.name': v.name, 'k8s.volume.type': type } },
            () => this.#setUp(pod, v, type),
          );
          mounted[v.name] = { hostPath };
          plugins.set(v.name, plugin);
          this.#d.metrics?.observeOperation('volume_mount', plugin, true, (this.#d.clock.now() - started) / 1000);
        } catch (e) {
          this.#d.metrics?.observeOperation('volume_mount', plugin, false, (this.#d.clock.now() - started) / 1000);
          failures.push({ name: v.name, message: errorMessage(e), unattached: UNSUPPORTED_VOLUME_TYPES.includes(type) || !KNOWN_SOURCE_KEYS.includes(type) });
        }
      }
      const state: PodVolumeState = {
        type: 'kubelet.volume.PodVolumeState.v1',
        uid,
        podDir,
        mounted: failures.length === 0,
        volumes: mounted,
        updatedAt: new Date(this.#d.clock.now()).toISOString(),
      };
      if (failures.length > 0) {
        const setUpErrors = failures.map((f) => `MountVolume.SetUp failed for volume ${JSON.stringify(f.name)} : ${f.message}`);
        const unmounted = volumes
          .map((v) => v.name)
          .filter((n) => mounted[n] === undefined)
          .sort();
        const unattached = failures
          .filter((f) => f.unattached)
          .map((f) => f.name)
          .sort();
        // WaitForAttachAndMount's error; the pod-worker's FailedMount event adds "Unable to attach or mount volumes: ".
        const message = `unmounted volumes=[${unmounted.join(' ')}], unattached volumes=[${unattached.join(' ')}]: ${setUpErrors.join('; ')}`;
        state.error = message;
        this.#aswSet(uid, { state, volumesKey, plugins });
        this.#publishTotals();
        await this.#store(state);
        for (const msg of setUpErrors) await this.#recordPodEvent(pod, 'FailedMount', msg);
        this.#d.logger.warn('mount failed', { uid, pod: `${pod.metadata.namespace}/${pod.metadata.name}`, error: message });
        throw new KubeletError(VolumeErrorCodes.FailedMount, message, { retryable: true });
      }
      this.#aswSet(uid, { state, volumesKey, plugins });
      this.#publishTotals();
      const reply: VolumeMountReply = { type: 'kubelet.volume.MountReply.v1', podDir, volumes: structuredClone(mounted) };
      replyEarly(reply);
      await this.#track(this.#store(state));
      this.#d.logger.debug('pod volumes mounted', { uid, volumes: Object.keys(mounted) });
      return reply;
    });
    return Promise.race([early, done]);
  }

  /** Resolves once every state write a mount replied before has ended (the process's shutdown waits for it). */
  async settled(): Promise<void> {
    while (this.#writing.size > 0) await Promise.all([...this.#writing]);
  }

  #track(write: Promise<void>): Promise<void> {
    this.#writing.add(write);
    return write.finally(() => this.#writing.delete(write));
  }

  /**
   * Tears down every volume of the pod (unmounts tmpfs, removes emptyDir directories; hostPath
   * targets are never touched) and marks the state unmounted. With `removeContent` the whole pod
   * directory is removed too and the `sl_volumes` key deleted. Idempotent; an unknown pod is a no-op.
   *
   * Models volumeManager.WaitForUnmount + emptyDir TearDownAt + removeOrphanedPodDir.
   */
  async unmount(uid: string, removeContent: boolean, fence: Fence): Promise<VolumeUnmountReply> {
    this.#fences.check(fence);
    const podDir = this.#podDir(uid);
    return this.#mutex.run(uid, async () => {
      this.#fences.check(fence);
      const names = new Set<string>();
      const known = this.#asw.get(uid)?.state ?? (await this.#d.store.get(uid));
      for (const n of Object.keys(known?.volumes ?? {})) names.add(n);
      const started = this.#d.clock.now();
      try {
        for (const m of await this.#d.mounter.mountPointsUnder(podDir)) await this.#d.mounter.unmount(m);
        for (const plugin of POD_LOCAL_PLUGINS) {
          const root = this.#d.paths.podPluginVolumesDir(uid, plugin);
          for (const n of await listDir(root)) {
            names.add(n);
            await removeAllOneFilesystem(join(root, n));
          }
        }
        if (removeContent) {
          const left = await this.#d.mounter.mountPointsUnder(podDir);
          if (left.length > 0) throw new Error(`mount points remain under ${podDir}: ${left.join(', ')}`);
          await removeAllOneFilesystem(podDir);
        }
        this.#d.metrics?.observeOperation('volume_unmount', PluginNames.emptyDir, true, (this.#d.clock.now() - started) / 1000);
      } catch (e) {
        this.#d.metrics?.observeOperation('volume_unmount', PluginNames.emptyDir, false, (this.#d.clock.now() - started) / 1000);
        throw new KubeletError(VolumeErrorCodes.FailedUnmount, `UnmountVolume.TearDown failed for pod ${JSON.stringify(uid)}: ${errorMessage(e)}`, { retryable: true, cause: e });
      }
      this.#aswDelete(uid);
      this.#objectPods.delete(uid);
      this.#d.objects?.hold(uid, []);
      this.#publishTotals();
      if (removeContent) {
        await this.#deleteState(uid);
      } else if (known !== null && known !== undefined) {
        await this.#store({ type: 'kubelet.volume.PodVolumeState.v1', uid, podDir, mounted: false, volumes: {}, updatedAt: new Date(this.#d.clock.now()).toISOString() });
      } else if (await exists(podDir)) {
        await this.#store({ type: 'kubelet.volume.PodVolumeState.v1', uid, podDir, mounted: false, volumes: {}, updatedAt: new Date(this.#d.clock.now()).toISOString() });
      }
      return { type: 'kubelet.volume.UnmountReply.v1', unmounted: [...names].sort() };
    });
  }

  /**
   * Removes the directories of pods that are not in `keep`, whose volumes are not mounted (actual
   * state of world) and that have no mount point below them; deletes their `sl_volumes` keys (also
   * the keys of such pods whose directory is already gone).
   * Never follows a symlink, never crosses into another filesystem. A pod that cannot be removed is
   * logged and skipped (the next housekeeping retries).
   *
   * Models Kubelet.cleanupOrphanedPodDirs.
   */
  async cleanup(keep: readonly string[]): Promise<VolumeCleanupReply> {
    const keepSet = new Set(keep);
    const removed: string[] = [];
    for (const uid of await listPodsFromDisk(this.#d.paths)) {
      if (keepSet.has(uid)) continue;
      await this.#mutex.run(uid, async () => {
        if (keepSet.has(uid)) return;
        if (this.#asw.get(uid)?.state.mounted === true) {
          this.#d.logger.info('orphaned pod found, but volumes are not cleaned up', { uid });
          return;
        }
        const podDir = this.#d.paths.podDir(uid);
        try {
          const mounts = await this.#d.mounter.mountPointsUnder(podDir);
          if (mounts.length > 0) {
            this.#d.logger.warn('orphaned pod found, but volume paths are still mounted', { uid, mounts });
            return;
          }
          await removeAllOneFilesystem(podDir);
          this.#aswDelete(uid);
          this.#objectPods.delete(uid);
          this.#d.objects?.hold(uid, []);
          await this.#deleteState(uid);
          removed.push(uid);
        } catch (e) {
          this.#d.logger.error('failed to remove orphaned pod dir', { uid, podDir, err: errorMessage(e) });
        }
      });
    }
    // States whose pod directory is already gone (removed by hand, or a crash between the removal
    // and the key delete): drop them too, under the same rules.
    const onDisk = new Set(await listPodsFromDisk(this.#d.paths));
    if (!this.#storedLoaded) {
      for (const state of await this.#d.store.list()) this.#stored.add(state.uid);
      this.#storedLoaded = true;
    }
    for (const uid of [...this.#stored]) {
      if (keepSet.has(uid) || onDisk.has(uid) || removed.includes(uid)) continue;
      await this.#mutex.run(uid, async () => {
        if (!this.#stored.has(uid) || this.#asw.get(uid)?.state.mounted === true) return;
        try {
          await this.#deleteState(uid);
          this.#aswDelete(uid);
          removed.push(uid);
        } catch (e) {
          this.#d.logger.error('failed to delete the volume state of an orphaned pod', { uid, err: errorMessage(e) });
        }
      });
    }
    if (removed.length > 0) {
      this.#publishTotals();
      this.#d.logger.info('removed orphaned pod dirs', { removed });
    }
    return { type: 'kubelet.volume.CleanupReply.v1', removed };
  }

  #podDir(uid: string): string {
    try {
      return this.#d.paths.podDir(uid);
    } catch (e) {
      throw new KubeletError(VolumeErrorCodes.InvalidRequest, errorMessage(e), { retryable: false });
    }
  }

  /** Sets up one volume; resolves to the host path the container should mount. */
  async #setUp(pod: BoundPod, v: Volume, type: VolumeType): Promise<string> {
    const uid = pod.metadata.uid;
    switch (type) {
      case 'emptyDir': {
        const dir = this.#d.paths.podVolumeDir(uid, PluginNames.emptyDir, v.name);
        const existed = await exists(dir);
        await makeEmptyDir(dir);
        if (v.emptyDir?.medium === 'Memory') {
          if (!this.#d.allowTmpfs) throw new Error('a memory-backed emptyDir needs a tmpfs mount, which is not allowed on this node (ALLOW_TMPFS=false)');
          const mounts = await this.#d.mounter.mountPointsUnder(dir);
          if (!mounts.includes(dir)) {
            await this.#d.mounter.mountTmpfs(dir, this.#tmpfsSize(pod, v));
            await makeEmptyDir(dir);
          }
        }
        // fsGroup is applied when the volume is first set up (the kubelet's emptyDir keeps a ready
        // marker and skips a set-up volume), so files the containers made later keep their owners.
        const fsGroup = podFsGroup(pod.spec.securityContext);
        if (fsGroup !== undefined && !existed) await setVolumeOwnership(dir, fsGroup.fsGroup, fsGroup.policy);
        return dir;
      }
      case 'downwardAPI': {
        const dir = this.#d.paths.podVolumeDir(uid, PluginNames.downwardAPI, v.name);
        const payload = downwardApiPayload(pod, v.downwardAPI, this.#downwardApiContext());
        await mkdir(dir, { recursive: true, mode: 0o755 });
        const written = await writeAtomically(dir, payload, new Date(this.#d.clock.now()));
        // A downwardAPI volume is read-only: fsGroup gives group read, never group write.
        const fsGroup = podFsGroup(pod.spec.securityContext);
        if (fsGroup !== undefined && written) await setVolumeOwnership(dir, fsGroup.fsGroup, 'Always', true);
        return dir;
      }
      case 'configMap':
      case 'secret':
      case 'projected': {
        const dir = this.#d.paths.podVolumeDir(uid, OBJECT_VOLUME_PLUGINS[type] as string, v.name);
        // The object first: a missing one fails the volume before anything is made (kubelet SetUpAt).
        const payload = await this.#objectPayload(pod, v, type);
        await mkdir(dir, { recursive: true, mode: 0o755 });
        if (type !== 'configMap' && this.#d.allowTmpfs) {
          // Secret and projected volumes are memory-backed, as the kubelet wraps them: secret values never touch the disk.
          const mounts = await this.#d.mounter.mountPointsUnder(dir);
          if (!mounts.includes(dir)) await this.#d.mounter.mountTmpfs(dir, this.#tmpfsSize(pod, { name: v.name }));
        }
        const written = await writeAtomically(dir, payload, new Date(this.#d.clock.now()));
        // Read-only volumes: fsGroup gives group read, never group write.
        const fsGroup = podFsGroup(pod.spec.securityContext);
        if (fsGroup !== undefined && written) await setVolumeOwnership(dir, fsGroup.fsGroup, 'Always', true);
        return dir;
      }
      case 'hostPath': {
        const hp = v.hostPath;
        if (hp === undefined) throw new Error('hostPath volume without a path');
        await setUpHostPath(hp.path, hp.type, this.#d.hostPathChecker);
        return hp.path;
      }
      default:
        if (UNSUPPORTED_VOLUME_TYPES.includes(type)) throw new Error(`${type} volumes are not supported by this node yet`);
        throw new Error(`no volume plugin matched: ${type} volumes are not supported`);
    }
  }

  #objectPayload(pod: BoundPod, v: Volume, type: VolumeType): Promise<Map<string, ProjectedFile>> {
    if (type === 'configMap') return configMapVolumePayload(pod, v.configMap, this.#d.objects);
    if (type === 'secret') return secretVolumePayload(pod, v.secret, this.#d.objects);
    return projectedVolumePayload(pod, v.name, v.projected, this.#d.objects, this.#downwardApiContext());
  }

  /** A watched configMap or secret changed: project the volumes of the mounted pods that use it again. */
  #objectChanged(ref: ApiObjectRef): void {
    for (const uid of this.#d.objects?.holders(ref) ?? []) {
      void this.#mutex
        .run(uid, async () => {
          const pod = this.#objectPods.get(uid);
          if (pod === undefined || this.#asw.get(uid)?.state.mounted !== true) return;
          for (const v of pod.spec.volumes ?? []) {
            const type = volumeType(v);
            if (!OBJECT_VOLUME_TYPES.includes(type)) continue;
            try {
              await withSpan(
                this.#d.tracer,
                `volume.mount ${v.name}`,
                { attributes: { ...podSpanAttributes(pod.metadata), 'k8s.volume.name': v.name, 'k8s.volume.type': type } },
                () => this.#setUp(pod, v, type),
              );
            } catch (e) {
              // The volume keeps its last content, as the kubelet's failed remount does.
              const message = `MountVolume.SetUp failed for volume ${JSON.stringify(v.name)} : ${errorMessage(e)}`;
              this.#d.logger.warn('volume update failed', { uid, pod: `${pod.metadata.namespace}/${pod.metadata.name}`, volume: v.name, error: message });
              await this.#recordPodEvent(pod, 'FailedMount', message);
            }
          }
        })
        .catch((e: unknown) => this.#d.logger.error('volume update failed', { uid, err: errorMessage(e) }));
    }
  }

  #downwardApiContext(): DownwardApiContext {
    // Volumes may only project metadata and resources (API validation), never IPs.
    return { podIP: '', podIPs: [], hostIPs: [], nodeAllocatable: this.#d.nodeAllocatable ?? { milliCpu: cpus().length * 1000, memoryBytes: totalmem() } };
  }

  /**
   * The tmpfs size: the smaller of `sizeLimit` and the pod's memory limit (when every container sets
   * one), else the default (the node's memory).
   *
   * Models emptydir.calculateEmptyDirMemorySize.
   */
  #tmpfsSize(pod: BoundPod, v: Volume): number {
    const fallback = this.#d.defaultTmpfsBytes ?? totalmem();
    const containers = pod.spec.containers;
    const limits = containers.map((c) => c.resources?.limits?.['memory']);
    let podLimit: number | undefined;
    if (limits.length > 0 && limits.every((l) => l !== undefined)) {
      podLimit = limits.reduce<number>((sum, l) => sum + parseByteQuantity(l), 0);
    }
    const sizeLimit = v.emptyDir?.sizeLimit === undefined ? undefined : parseByteQuantity(v.emptyDir.sizeLimit);
    const candidates = [sizeLimit, podLimit].filter((n): n is number => n !== undefined && n > 0);
    return candidates.length > 0 ? Math.min(...candidates) : fallback;
  }

  async #store(state: PodVolumeState): Promise<void> {
    // Known stored before the put: a put that fails may still have landed, and cleanup then deletes it.
    this.#stored.add(state.uid);
    try {
      await this.#d.store.put(state);
    } catch (e) {
      // The reply still tells the caller the truth; the next operation rewrites the state.
      this.#d.logger.error('could not write volume state', { uid: state.uid, err: errorMessage(e) });
    }
  }

  /** Deletes `uid`'s key in `sl_volumes`; it stays known stored while the delete can fail. */
  async #deleteState(uid: string): Promise<void> {
    await this.#d.store.delete(uid);
    this.#stored.delete(uid);
  }

  async #recordPodEvent(pod: BoundPod, reason: string, message: string): Promise<void> {
    const event: KubeEvent = {
      type: 'kubelet.events.Event.v1',
      eventType: 'Warning',
      reason,
      message,
      involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
      source: { component: 'kubelet', host: this.#d.nodeName },
      timestamp: new Date(this.#d.clock.now()).toISOString(),
    };
    try {
      await this.#d.events.record(event, pod.metadata.uid);
    } catch (e) {
      this.#d.logger.error('could not record event', { uid: pod.metadata.uid, reason, err: errorMessage(e) });
    }
  }

  /** Stores `uid`'s entry in the actual state of world, keeping the per-plugin totals. */
  #aswSet(uid: string, entry: AswEntry): void {
    this.#aswDelete(uid);
    this.#asw.set(uid, entry);
    this.#count(entry, 1);
  }

  /** Drops `uid`'s entry from the actual state of world, keeping the per-plugin totals. */
  #aswDelete(uid: string): void {
    const e = this.#asw.get(uid);
    if (e === undefined) return;
    this.#asw.delete(uid);
    this.#count(e, -1);
  }

  /** Adds (`by` 1) or removes (`by` -1) a mounted entry's volumes from the per-plugin totals. */
  #count(e: AswEntry, by: 1 | -1): void {
    if (!e.state.mounted) return;
    for (const p of e.plugins.values()) {
      const n = (this.#mountedByPlugin.get(p) ?? 0) + by;
      if (n === 0) this.#mountedByPlugin.delete(p);
      else this.#mountedByPlugin.set(p, n);
    }
  }

  /** `volume_manager_total_volumes`: mounted volumes per plugin (entries are replaced, never changed in place). */
  #publishTotals(): void {
    this.#d.metrics?.setTotals(new Map(this.#mountedByPlugin));
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw e;
  }
}
