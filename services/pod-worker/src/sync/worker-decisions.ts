/**
 * The pure part of a sync: what a pod worker does with what it read from KV. No I/O.
 *
 * Models pkg/kubelet/pod_workers.go (UpdatePod's rules, calculateEffectiveGracePeriod's use,
 * isPodStatusCacheTerminal) applied to the latest desired record and kill request instead of a
 * queue of UpdatePodOptions.
 *
 *   state   sync ──(kill | deletionTimestamp | terminal phase)──► terminating ──(killPod ok)──► terminated ──► finished
 *   grace   min(previous, deletionGracePeriodSeconds, kill override), else spec grace; ≥ 1 s
 */
import type { BoundPod, DesiredPod, KillRequest, PodPhase, RuntimePodStatus, SyncPodType, WorkerRecord } from '@splitlet/api';
import { calculateEffectiveGracePeriod } from '@splitlet/kube';
import type { Versioned } from '../ports.js';

/** What the sync should do, before it reads the runtime. */
export type Classification =
  | { readonly action: 'none'; readonly why: string }
  /** A finished worker whose pod is no longer desired and has a kill: forget it. */
  | { readonly action: 'remove'; readonly kill: Versioned<KillRequest> }
  /** A runtime pod with no spec (orphan): SyncTerminatingRuntimePod. */
  | { readonly action: 'terminateRuntimePod'; readonly kill: Versioned<KillRequest> }
  /** A pod to move through its worker states. */
  | { readonly action: 'run'; readonly pod: BoundPod };

const TERMINAL_PHASES: ReadonlySet<PodPhase | undefined> = new Set<PodPhase | undefined>(['Succeeded', 'Failed']);

/** True for Succeeded and Failed. */
export function isTerminalPhase(phase: PodPhase | undefined): boolean {
  return TERMINAL_PHASES.has(phase);
}

/**
 * Step 1 of a sync: a finished worker ignores everything except a kill whose pod is no longer
 * desired; an orphan kill terminates the runtime pod; a rejected pod or a pod with neither a desired
 * record nor a kill needs nothing; anything else runs.
 */
export function classify(record: WorkerRecord | undefined, desired: Versioned<DesiredPod> | null, kill: Versioned<KillRequest> | null): Classification {
  if (record?.finished === true) {
    if (kill !== null && desired === null) return { action: 'remove', kill };
    return { action: 'none', why: 'worker finished' };
  }
  const pod = desired?.value.pod ?? kill?.value.pod;
  if (kill !== null && pod === undefined) {
    if (kill.value.runningPod !== undefined) return { action: 'terminateRuntimePod', kill };
    return { action: 'none', why: 'kill request without a pod or a running pod' };
  }
  if (pod === undefined) return { action: 'none', why: 'pod neither desired nor killed' };
  if (kill === null && desired?.value.rejected !== undefined) return { action: 'none', why: 'pod was rejected by admission' };
  return { action: 'run', pod };
}

/** True when the runtime shows a running container or a ready sandbox (isPodStatusCacheTerminal negated). */
export function runtimeHasActivity(status: RuntimePodStatus): boolean {
  return status.containers.some((c) => c.state === 'CONTAINER_RUNNING') || status.sandboxes.some((s) => s.state === 'SANDBOX_READY');
}

/** Inputs of {@link nextWorkerState}. */
export interface WorkerStateInput {
  readonly uid: string;
  readonly pod: BoundPod;
  readonly record: WorkerRecord | undefined;
  readonly desired: Versioned<DesiredPod> | null;
  readonly kill: Versioned<KillRequest> | null;
  /** The status-manager's phase for the pod (its cached API status), if any. */
  readonly apiPhase: PodPhase | undefined;
  readonly runtimeStatus: RuntimePodStatus;
  readonly now: number;
  readonly epoch: number;
}

/** The worker record to sync with, and how the sync is labelled. */
export interface WorkerStateDecision {
  readonly record: WorkerRecord;
  /** `create`/`update`/`sync` for a state sync (a new desired revision carries its own type), `kill` otherwise. */
  readonly updateType: SyncPodType;
  /** This sync moved the pod into terminating. */
  readonly enteredTerminating: boolean;
  /** The desired record changed since the last completed sync. */
  readonly newDesired: boolean;
}

/**
 * Step 2 of a sync (UpdatePod): creates the worker record on first sight (a pod whose phase is
 * already terminal and whose runtime shows nothing running starts as terminated — the kubelet
 * restart case), moves `sync` to `terminating` on a kill, a deletionTimestamp or a terminal API
 * phase, and keeps the grace period for a terminating pod at the minimum seen so far.
 */
export function nextWorkerState(input: WorkerStateInput): WorkerStateDecision {
  const { pod, desired, kill, now } = input;
  const nowIso = new Date(now).toISOString();
  let record: WorkerRecord;
  if (input.record === undefined) {
    record = {
      type: 'kubelet.podworker.WorkerRecord.v1',
      uid: input.uid,
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      state: 'sync',
      finished: false,
      reasons: {},
      epoch: input.epoch,
    };
    const phase = pod.status?.phase ?? input.apiPhase;
    if ((isTerminalPhase(phase) || isTerminalPhase(input.apiPhase)) && !runtimeHasActivity(input.runtimeStatus)) {
      record = { ...record, state: 'terminated', terminatingAt: nowIso, terminatedAt: nowIso };
    }
  } else {
    record = { ...input.record, reasons: { ...input.record.reasons }, name: pod.metadata.name, namespace: pod.metadata.namespace, epoch: input.epoch };
  }

  let enteredTerminating = false;
  if (record.state === 'sync') {
    const deleted = pod.metadata.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null;
    const killed = kill !== null;
    if (killed || deleted || isTerminalPhase(desired?.value.pod.status?.phase)) {
      record = { ...record, state: 'terminating', terminatingAt: nowIso };
      enteredTerminating = true;
      if (deleted || kill?.value.reason === 'removed') record.deleted = true;
      if (kill?.value.evict === true) record.evicted = true;
    }
  } else if (record.state === 'terminating' && kill !== null) {
    if (kill.value.reason === 'removed') record.deleted = true;
    if (kill.value.evict === true) record.evicted = true;
  }

  if (record.state === 'terminating') {
    const { gracePeriod } = calculateEffectiveGracePeriod({
      current: record.gracePeriod ?? 0,
      pod,
      override: kill?.value.gracePeriodOverride,
    });
    record.gracePeriod = gracePeriod;
  }

  const newDesired = desired !== null && desired.revision !== input.record?.syncedRevision;
  let updateType: SyncPodType;
  if (record.state !== 'sync') updateType = 'kill';
  else if (newDesired && desired !== null) updateType = desired.value.updateType;
  else updateType = 'sync';
  return { record, updateType, enteredTerminating, newDesired };
}

/** Moves a record into terminating after SyncPod reported a terminal phase (completeSync). */
export function toTerminating(record: WorkerRecord, pod: BoundPod, kill: KillRequest | undefined, now: number): WorkerRecord {
  const next: WorkerRecord = { ...record, state: 'terminating', terminatingAt: new Date(now).toISOString() };
  next.gracePeriod = calculateEffectiveGracePeriod({ current: record.gracePeriod ?? 0, pod, override: kill?.gracePeriodOverride }).gracePeriod;
  return next;
}

/** Moves a record into terminated after SyncTerminatingPod succeeded (completeTerminating). */
export function toTerminated(record: WorkerRecord, now: number): WorkerRecord {
  return { ...record, state: 'terminated', terminatedAt: new Date(now).toISOString() };
}
