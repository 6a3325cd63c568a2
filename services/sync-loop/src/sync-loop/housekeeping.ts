/**
 * What one housekeeping pass should do, decided from the desired pods and the views of the pod
 * workers, the runtime cache and the pending kills. Pure: the sync loop carries the plan out.
 *
 * Models pkg/kubelet/kubelet_pods.go HandlePodCleanups (the parts a split kubelet can do here):
 * SyncKnownPods' "terminate workers of pods no longer desired", restart of desired pods unknown to
 * the workers, killing orphaned runtime pods with a 1 s grace, cleanupOrphanedPodDirs' keep set,
 * and the desired/active/working pod gauges.
 */
import type { DesiredPod, KillRequest, RunningPodRef, RuntimeCacheEntry, WorkerRecord, WorkerState } from '@splitlet/api';
import { isStaticPod } from '@splitlet/kube';
import { isActivePod } from './admission.js';

/** What housekeeping reads. */
export interface HousekeepingInput {
  readonly desired: Iterable<DesiredPod>;
  readonly workers: Iterable<WorkerRecord>;
  readonly runtime: Iterable<RuntimeCacheEntry>;
  readonly kills: { get(uid: string): KillRequest | undefined };
  /** Pods removed from config that sync-loop still remembers (for the kill request and the static label). */
  readonly removedPods?: { get(uid: string): DesiredPod['pod'] | undefined };
  readonly now: number;
  /**
   * A desired, active pod with no worker record is restarted only once its desired record is at
   * least this old (the worker may simply not have written its record yet). @default 10000
   */
  readonly restartAfterMs?: number;
  /**
   * When each pod was last sent `create` again: a pod still unknown is sent it again only
   * `restartAfterMs` after that, not at every pass (a burst that keeps the workers busy for longer
   * than restartAfterMs would otherwise get a poke per pod every housekeeping period).
   */
  readonly restartedAt?: { get(uid: string): number | undefined };
}

/** A kill of a worker whose pod is no longer desired. */
export interface RemovedPodKill {
  readonly uid: string;
  readonly runningPod: RunningPodRef;
  readonly pod?: DesiredPod['pod'];
}

/** The `kubelet_working_pods` series: lifecycle × config × static. */
export type WorkingPodKey = `${WorkerState}|${'desired' | 'orphan' | 'runtime_only'}|${'true' | '' | 'unknown'}`;

/** The decisions of one pass. */
export interface HousekeepingPlan {
  /** (a) workers of pods no longer desired, without a pending kill. */
  readonly killRemoved: readonly RemovedPodKill[];
  /** (b) runtime pods that are running (a running container or a ready sandbox) and unknown to config and workers. */
  readonly killOrphaned: readonly RunningPodRef[];
  /** Desired, active pods the workers do not know (UID reuse, a lost poke): sent `create` again. */
  readonly restart: readonly DesiredPod[];
  /** (c) pod UIDs whose directories must stay. */
  readonly keep: readonly string[];
  /** (d) gauges. */
  readonly desiredPods: { readonly regular: number; readonly static: number };
  readonly activePods: { readonly regular: number; readonly static: number };
  readonly workingPods: ReadonlyMap<WorkingPodKey, number>;
}

const LIFECYCLES: readonly WorkerState[] = ['sync', 'terminating', 'terminated'];

/** Every `kubelet_working_pods` series the kubelet reports, all at 0. */
export function emptyWorkingPods(): Map<WorkingPodKey, number> {
  const m = new Map<WorkingPodKey, number>();
  for (const l of LIFECYCLES) {
    for (const k of [`${l}|desired|true`, `${l}|desired|`, `${l}|orphan|true`, `${l}|orphan|`, `${l}|runtime_only|unknown`] as const) {
      m.set(k, 0);
    }
  }
  return m;
}

function isRunning(entry: RuntimeCacheEntry): boolean {
  return entry.status.containers.some((c) => c.state === 'CONTAINER_RUNNING') || entry.status.sandboxes.some((s) => s.state === 'SANDBOX_READY');
}

/** Decides one housekeeping pass. */
export function planHousekeeping(input: HousekeepingInput): HousekeepingPlan {
  const restartAfterMs = input.restartAfterMs ?? 10_000;
  const desired = new Map<string, DesiredPod>();
  for (const d of input.desired) desired.set(d.pod.metadata.uid, d);
  const workers = new Map<string, WorkerRecord>();
  for (const w of input.workers) workers.set(w.uid, w);

  const working = emptyWorkingPods();
  const count = (key: WorkingPodKey): void => {
    working.set(key, (working.get(key) ?? 0) + 1);
  };

  // (a) and the working pods the workers know.
  const killRemoved: RemovedPodKill[] = [];
  for (const w of workers.values()) {
    const d = desired.get(w.uid);
    const kill = input.kills.get(w.uid);
    if (d === undefined && kill === undefined) {
      const pod = input.removedPods?.get(w.uid);
      const k: RemovedPodKill = { uid: w.uid, runningPod: { uid: w.uid, name: w.name, namespace: w.namespace } };
      killRemoved.push(pod === undefined ? k : { ...k, pod });
    }
    if (d !== undefined) {
      count(`${w.state}|desired|${isStaticPod(d.pod) ? 'true' : ''}`);
    } else if (!w.finished) {
      if (kill?.reason === 'orphaned' && kill.pod === undefined) count(`${w.state}|runtime_only|unknown`);
      else {
        const pod = kill?.pod ?? input.removedPods?.get(w.uid);
        count(`${w.state}|orphan|${pod !== undefined && isStaticPod(pod) ? 'true' : ''}`);
      }
    }
  }

  // Desired pods: gauges and restarts of pods the workers do not know.
  let desiredRegular = 0;
  let desiredStatic = 0;
  let activeRegular = 0;
  let activeStatic = 0;
  const restart: DesiredPod[] = [];
  for (const d of desired.values()) {
    const isStatic = isStaticPod(d.pod);
    if (isStatic) desiredStatic++;
    else desiredRegular++;
    const w = workers.get(d.pod.metadata.uid);
    if (!isActivePod(d, w)) continue;
    if (isStatic) activeStatic++;
    else activeRegular++;
    if (w === undefined && input.kills.get(d.pod.metadata.uid) === undefined) {
      const since = Math.max(Date.parse(d.startTime), input.restartedAt?.get(d.pod.metadata.uid) ?? -Infinity);
      if (!Number.isNaN(since) && input.now - since >= restartAfterMs) restart.push(d);
      count(`sync|desired|${isStatic ? 'true' : ''}`);
    }
  }

  // (b) orphaned runtime pods.
  const killOrphaned: RunningPodRef[] = [];
  const running = new Set<string>();
  for (const e of input.runtime) {
    if (!isRunning(e)) continue;
    running.add(e.uid);
    if (desired.has(e.uid) || workers.has(e.uid) || input.kills.get(e.uid) !== undefined) continue;
    killOrphaned.push({ uid: e.uid, name: e.status.name, namespace: e.status.namespace });
    count('terminating|runtime_only|unknown');
  }

  // (c) the pod directories to keep.
  const keep = new Set<string>(desired.keys());
  for (const w of workers.values()) if (!(w.finished && !desired.has(w.uid))) keep.add(w.uid);
  for (const uid of running) keep.add(uid);

  return {
    killRemoved,
    killOrphaned,
    restart,
    keep: [...keep].sort(),
    desiredPods: { regular: desiredRegular, static: desiredStatic },
    activePods: { regular: activeRegular, static: activeStatic },
    workingPods: working,
  };
}
