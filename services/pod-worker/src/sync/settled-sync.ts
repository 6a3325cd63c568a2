/**
 * When a sync of a pod in state `sync` cannot change anything, and what this instance remembers to
 * know it: a **settled** pod's next SyncPod skips the volume mount and the runtime SyncPod, and
 * sends its status only when status-manager would not already hold it.
 *
 * A pod is settled when its last full SyncPod on this instance, under the current lease epoch,
 * succeeded (no error, no backoff, not terminal) and nothing it read has changed since:
 *
 *   - the same desired revision, no kill request, the worker record this instance last wrote
 *     (same revision), still in state `sync`;
 *   - the runtime status the sync is based on equals, timestamps aside, the status cri-adapter's
 *     SyncPod reply returned, and computePodActions on it (the function cri-adapter runs) has
 *     nothing to do — a container that exited during that SyncPod is not settled;
 *   - the same probe results (liveness and startup feed computePodActions, readiness the status);
 *   - only volumes the kubelet sets up once (emptyDir, hostPath): configMap, secret, projected and
 *     downwardAPI volumes are remounted at every sync (WaitForAttachAndMount → ReprocessPod), so a
 *     pod with one always syncs fully; no activeDeadlineSeconds (a time-based input).
 *
 * The status of a settled sync is still generated (from the same inputs a full sync uses, at the
 * same `now`: every time-based field of generateAPIPodStatus is re-evaluated) and sent unless
 * {@link statusHeld}: status-manager's record equals it — so status-manager would skip it as
 * unchanged — and equals, condition times aside, the last status set this instance sent for the
 * pod in this epoch, so no set of ours is still on its way to change the record. Every other case
 * (a record status-manager lost, refused, held back, changed, or rolled back to an older set it got
 * redelivered; a set still in flight) sends the status.
 *
 * The memory is per instance and per lease epoch ({@link SyncMemory} hangs off the partition
 * guard): after a restart or a takeover the first sync of every pod is a full one.
 *
 * Models nothing in the kubelet: its SyncPod runs in process against its own caches, so a sync
 * with nothing to do is cheap there already; here the same no-op costs bus round trips.
 */
import type { BoundPod, DesiredPod, KillRequest, PodStatus, PodStatusRecord, ProbeResultsByType, RuntimePodStatus, WorkerRecord } from '@splitlet/api';
import { canonicalJson, computePodActions } from '@splitlet/kube';
import type { Versioned } from '../ports.js';
import { RecordMemory } from './record-memory.js';
import { probesForRuntime } from './probe-results.js';
import type { WorkerStateDecision } from './worker-decisions.js';

/** What a pod's last full, successful SyncPod on this instance (this epoch) ended with. */
export interface SettledSync {
  /** The desired record's revision the sync ran for. */
  readonly desiredRevision: number;
  /** The revision of the worker record this instance wrote since (the sync's own, or a later settled sync's). */
  readonly workerRevision: number;
  /** {@link runtimeKey} of cri-adapter's SyncPod reply. */
  readonly runtime: string;
  /** {@link probesKey} of the probe results the sync read. */
  readonly probes: string;
}

/** How many pods known to have no worker record (deleted ones) {@link SyncMemory} keeps, the latest. */
export const MAX_KNOWN_ABSENT = 1024;

/**
 * What this instance remembers about the pods of one partition under one lease epoch. Only the
 * partition's owner writes their worker records and sends their statuses, so within the epoch the
 * memory can only be behind on what others did: the runtime, the probes and status-manager's record
 * are read at every sync, and the desired record and the kill whenever a poke says they changed
 * (record-memory.ts).
 */
export class SyncMemory {
  /** Pods whose last full SyncPod left them settled. */
  readonly settled = new Map<string, SettledSync>();
  /** The last status set sent per pod (canonical JSON, condition times aside). */
  readonly #sent = new Map<string, string>();
  /** The worker records this instance wrote (or read) in this epoch; null: known absent. */
  readonly #workers = new Map<string, Versioned<WorkerRecord> | null>();
  /** The pods whose entry in #workers is null, oldest first: at most {@link MAX_KNOWN_ABSENT}. */
  readonly #absent = new Set<string>();
  /** The desired records and kill requests this instance read in this epoch, and what pokes said since. */
  readonly desired = new RecordMemory<DesiredPod>();
  readonly kill = new RecordMemory<KillRequest>();

  /** The pod's worker record when this instance knows it (it is the only writer in its epoch); undefined: read KV. */
  worker(uid: string): Versioned<WorkerRecord> | null | undefined {
    return this.#workers.get(uid);
  }

  /** The pod's worker record is `v` (read, written or deleted by this instance); undefined: unknown (a write that may or may not have happened). */
  setWorker(uid: string, v: Versioned<WorkerRecord> | null | undefined): void {
    this.#absent.delete(uid);
    if (v === undefined) {
      this.#workers.delete(uid);
      return;
    }
    this.#workers.set(uid, v);
    if (v !== null) return;
    // A deleted pod's record stays known absent (a late poke for it reads nothing), but churn under
    // one lease epoch must not grow the map: past the bound the oldest is forgotten, which only
    // means its next sync, if any, reads KV.
    this.#absent.add(uid);
    if (this.#absent.size <= MAX_KNOWN_ABSENT) return;
    const [oldest] = this.#absent;
    this.#absent.delete(oldest!);
    this.#workers.delete(oldest!);
  }

  /** A status set for the pod is about to be sent: until it is known sent, the last one is unknown. */
  sending(uid: string): void {
    this.#sent.delete(uid);
  }

  /** The status set `status` was sent for the pod. */
  sent(uid: string, status: PodStatus): void {
    this.#sent.set(uid, statusKey(status));
  }

  /** {@link statusKey} of the last status set sent for the pod in this epoch, if any. */
  lastSent(uid: string): string | undefined {
    return this.#sent.get(uid);
  }

  /** Forgets everything about the pod (it left state `sync`, or was forgotten); its next sync reads its desired record and kill request. */
  forget(uid: string): void {
    this.settled.delete(uid);
    this.#sent.delete(uid);
    this.desired.forget(uid);
    this.kill.forget(uid);
  }
}

/** Inputs of {@link settledDecision}: what the sync read. */
export interface SettledInput {
  readonly memory: SyncMemory;
  readonly uid: string;
  readonly pod: BoundPod;
  readonly desiredRevision: number | undefined;
  readonly killed: boolean;
  readonly worker: Versioned<WorkerRecord> | null;
  readonly decision: WorkerStateDecision;
  readonly runtimeStatus: RuntimePodStatus;
  readonly probes: ProbeResultsByType | undefined;
}

/** Whether a sync may skip the volume mount and the runtime SyncPod, and if not, why. */
export type SettledDecision = { readonly settled: true } | { readonly settled: false; readonly why: string };

/** Decides whether the pod is settled (see the file comment). Pure. */
export function settledDecision(i: SettledInput): SettledDecision {
  const last = i.memory.settled.get(i.uid);
  const no = (why: string): SettledDecision => ({ settled: false, why });
  if (last === undefined) return no('no settled SyncPod in this epoch');
  if (i.killed) return no('a kill request');
  if (i.desiredRevision !== last.desiredRevision) return no('a new desired revision');
  if (i.worker === null || i.worker.revision !== last.workerRevision) return no('the worker record changed');
  const d = i.decision;
  if (d.record.state !== 'sync' || d.newDesired || d.enteredTerminating || i.worker.value.state !== 'sync') return no('not a plain sync');
  if (!volumesSetUpOnce(i.pod)) return no('volumes remounted at every sync');
  if (i.pod.spec.activeDeadlineSeconds !== undefined && i.pod.spec.activeDeadlineSeconds !== null) return no('activeDeadlineSeconds');
  if (probesKey(i.probes) !== last.probes) return no('probe results changed');
  if (runtimeKey(i.runtimeStatus) !== last.runtime) return no('the runtime status changed');
  if (!noRuntimeActions(i.pod, i.runtimeStatus, i.probes)) return no('computePodActions has work');
  return { settled: true };
}

/**
 * True when status-manager already holds `status` and will keep it: its record (`api`) has this
 * status, no held terminal phase and no finished worker, and the last set this instance sent in
 * the epoch (`lastSent`) equals it condition times aside — status-manager rewrites those times
 * when it applies a set, so a set equal to the record but for them changes nothing there.
 */
export function statusHeld(status: PodStatus, api: PodStatusRecord | undefined, lastSent: string | undefined): boolean {
  if (api === undefined || api.finished || api.heldTerminal !== undefined) return false;
  if (lastSent === undefined || lastSent !== statusKey(api.status)) return false;
  return canonicalJson(api.status) === canonicalJson(status);
}

/** A pod status as canonical JSON without the times status-manager sets itself (conditions' lastTransitionTime, startTime). */
export function statusKey(status: PodStatus): string {
  const { startTime: _s, conditions, ...rest } = status;
  return canonicalJson({ ...rest, conditions: (conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c) });
}

/**
 * A runtime status as canonical JSON, timestamps aside (createdAt, startedAt, finishedAt: the
 * same objects read at two moments), sandboxes and containers by id.
 */
export function runtimeKey(s: RuntimePodStatus): string {
  const byId = <T extends { id: string }>(xs: readonly T[]): T[] => [...xs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return canonicalJson({
    uid: s.uid,
    name: s.name,
    namespace: s.namespace,
    ips: s.ips,
    sandboxes: byId(s.sandboxes).map(({ createdAt: _c, ...rest }) => rest),
    containers: byId(s.containers).map(({ createdAt: _c, startedAt: _s, finishedAt: _f, ...rest }) => rest),
  });
}

/** Probe results as canonical JSON (`{}` for none). */
export function probesKey(p: ProbeResultsByType | undefined): string {
  return canonicalJson(p ?? {});
}

/** True when computePodActions (what cri-adapter's SyncPod carries out) has nothing to do. */
export function noRuntimeActions(pod: BoundPod, status: RuntimePodStatus, probes: ProbeResultsByType | undefined): boolean {
  const a = computePodActions(pod, status, probesForRuntime(probes).probes ?? {});
  return (
    !a.killPod &&
    !a.createSandbox &&
    a.initContainersToStart.length === 0 &&
    a.containersToStart.length === 0 &&
    a.ephemeralContainersToStart.length === 0 &&
    Object.keys(a.containersToKill).length === 0
  );
}

/**
 * True when every volume of the pod is one the kubelet sets up once and never remounts at a sync:
 * emptyDir and hostPath.
 */
export function volumesSetUpOnce(pod: BoundPod): boolean {
  return (pod.spec.volumes ?? []).every((v) => Object.entries(v).every(([k, x]) => k === 'name' || k === 'emptyDir' || k === 'hostPath' || x === undefined || x === null));
}
