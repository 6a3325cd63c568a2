/**
 * The status manager's cache rules, as pure functions of (cached record, update, now).
 *
 * Models pkg/kubelet/status/status_manager.go: updateStatusInternal (lastTransitionTime, startTime,
 * checkContainerStateTransition, "ignoring same status", versions), mergePodStatus (a terminal phase
 * is delayed while containers could still run), TerminatePod (missing container statuses become
 * ContainerStatusUnknown, a non-terminal phase becomes Failed), and generateAPIPodStatus's rule that
 * a terminal phase is never left.
 *
 * Without an API server the record in `sl_status` is both the kubelet's cache and what it would have
 * reported, so the terminal hold lives in the record:
 *
 *     set(Running) ─▶ status Running
 *     set(Failed, containers could run) ─▶ status Running, heldTerminal Failed      (mergePodStatus)
 *     set(Failed, none can run) / terminated ─▶ status Failed, heldTerminal cleared
 */
import type { BoundPod, ContainerStatus, PodStatus, PodStatusRecord, PodStatusUpdate } from '@splitlet/api';
import { CONTAINER_STATUS_UNKNOWN, isStaticPod, jsonEqual, rfc3339, updateLastTransitionTime } from '@splitlet/kube';

/** Why an update did not change the record. */
export type SkipReason = 'unchanged' | 'illegal-transition' | 'unknown-pod';

/** The outcome of applying one update. */
export type StatusDecision =
  { readonly kind: 'write'; readonly record: PodStatusRecord } | { readonly kind: 'delete' } | { readonly kind: 'skip'; readonly reason: SkipReason; readonly detail?: string };

type TerminalPhase = 'Succeeded' | 'Failed';
type Held = NonNullable<PodStatusRecord['heldTerminal']>;

/** True for Succeeded and Failed. Models podutil.IsPodPhaseTerminal. */
export function isTerminalPhase(phase: string | undefined): phase is TerminalPhase {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** The status as the kubelet's own cache holds it: the record's status with a held terminal phase applied. */
export function effectiveStatus(record: Pick<PodStatusRecord, 'status' | 'heldTerminal'>): PodStatus {
  return record.heldTerminal === undefined ? record.status : withPhase(record.status, record.heldTerminal);
}

/**
 * Applies a status update to the cached record. `set` and `terminated` give a new record (version+1)
 * or a skip; `removed` gives a delete. Never mutates its inputs.
 *
 * @throws Error when a `set` carries no status, or neither the update nor the record has the pod
 *   (a malformed update: the caller dead-letters it).
 */
export function applyStatusUpdate(cached: PodStatusRecord | undefined, update: PodStatusUpdate, now: number): StatusDecision {
  switch (update.kind) {
    case 'removed':
      return { kind: 'delete' };
    case 'set': {
      if (update.status === undefined) throw new Error(`a 'set' status update for pod ${update.uid} carries no status`);
      const pod = update.pod ?? cached?.pod;
      if (pod === undefined) throw new Error(`a 'set' status update for pod ${update.uid} carries no pod, and none is cached`);
      return setPodStatus(cached, pod, update, update.status, update.couldHaveRunningContainers, now);
    }
    case 'terminated':
      return terminatePod(cached, update, now);
  }
}

/** SetPodStatus + updateStatusInternal (+ the API view of mergePodStatus). */
function setPodStatus(
  cached: PodStatusRecord | undefined,
  pod: BoundPod,
  update: PodStatusUpdate,
  requested: PodStatus,
  couldHaveRunningContainers: boolean,
  now: number,
): StatusDecision {
  const next = mergeIntoCache(cached, pod, requested, now);
  if (next.kind === 'skip') return next;
  const status = next.status;
  const reported = cached?.status ?? pod.status ?? {};

  // mergePodStatus: delay the transition to a terminal phase while a container could still run.
  let written = status;
  let held: Held | undefined;
  if (isTerminalPhase(status.phase) && !isTerminalPhase(reported.phase) && couldHaveRunningContainers) {
    held = heldOf(status, status.phase);
    written = withPhase(status, { phase: reported.phase ?? 'Pending', reason: reported.reason, message: reported.message });
  }
  if (cached !== undefined && jsonEqual(cached.status, written) && jsonEqual(cached.heldTerminal, held)) {
    return { kind: 'skip', reason: 'unchanged' };
  }
  return { kind: 'write', record: makeRecord(cached, pod, update, written, held, cached?.finished ?? false, now) };
}

/**
 * The cache half of updateStatusInternal: never leave a terminal phase, reject illegal container
 * transitions, keep lastTransitionTime of unchanged conditions, set startTime once.
 */
function mergeIntoCache(
  cached: PodStatusRecord | undefined,
  pod: BoundPod,
  requested: PodStatus,
  now: number,
): { kind: 'ok'; status: PodStatus } | { kind: 'skip'; reason: SkipReason; detail: string } {
  const old = cached === undefined ? (pod.status ?? {}) : effectiveStatus(cached);
  let status: PodStatus = structuredClone(requested);

  // generateAPIPodStatus: a pod whose phase is terminal in the status manager stays terminal.
  if (isTerminalPhase(old.phase) && !isTerminalPhase(status.phase)) {
    status = withPhase(status, { phase: old.phase, reason: old.reason, message: old.message });
  }

  const restartPolicy = pod.spec.restartPolicy ?? 'Always';
  const illegal =
    checkContainerStateTransition(old.containerStatuses, status.containerStatuses, restartPolicy) ??
    checkContainerStateTransition(old.initContainerStatuses, status.initContainerStatuses, restartPolicy);
  if (illegal !== undefined) return { kind: 'skip', reason: 'illegal-transition', detail: illegal };

  for (const c of status.conditions ?? []) status = updateLastTransitionTime(status, old, c.type, now);

  if (old.startTime !== undefined && old.startTime !== '') status = { ...status, startTime: old.startTime };
  else if (status.startTime === undefined || status.startTime === '') status = { ...status, startTime: rfc3339(now) };
  return { kind: 'ok', status };
}

/**
 * TerminatePod: the worker finished. A held terminal phase is applied; once the pod has initialized,
 * any container without a terminated state is reported ContainerStatusUnknown (exit 137), and so are
 * init containers that had started; a non-static pod that is not terminal becomes Failed.
 * A `terminated` update that carries a status first applies it as the final `set`.
 */
function terminatePod(cached: PodStatusRecord | undefined, update: PodStatusUpdate, now: number): StatusDecision {
  const pod = update.pod ?? cached?.pod;
  if (pod === undefined) return { kind: 'skip', reason: 'unknown-pod', detail: `no cached status and no pod for ${update.uid}` };
  let base: PodStatus;
  if (update.status !== undefined) {
    const merged = mergeIntoCache(cached, pod, update.status, now);
    base = merged.kind === 'ok' ? merged.status : cached === undefined ? (pod.status ?? {}) : effectiveStatus(cached);
  } else {
    base = cached === undefined ? (pod.status ?? {}) : effectiveStatus(cached);
  }
  let status: PodStatus = structuredClone(base);

  const unknown = (): NonNullable<ContainerStatus['state']> => ({
    terminated: { reason: CONTAINER_STATUS_UNKNOWN, message: 'The container could not be located when the pod was terminated', exitCode: 137 },
  });
  if (hasPodInitialized(pod, status)) {
    status.containerStatuses = status.containerStatuses?.map((c) => (c.state?.terminated !== undefined ? c : { ...c, state: unknown() }));
  }
  if (status.initContainerStatuses !== undefined) {
    const started = initializedContainers(status.initContainerStatuses);
    status.initContainerStatuses = status.initContainerStatuses.map((c, i) => (i < started && c.state?.terminated === undefined ? { ...c, state: unknown() } : c));
  }
  if (!isStaticPod(pod) && !isTerminalPhase(status.phase)) status = { ...status, phase: 'Failed' };

  const old = cached?.status ?? pod.status ?? {};
  for (const c of status.conditions ?? []) status = updateLastTransitionTime(status, old, c.type, now);
  if (old.startTime !== undefined && old.startTime !== '') status = { ...status, startTime: old.startTime };
  else if (status.startTime === undefined || status.startTime === '') status = { ...status, startTime: rfc3339(now) };

  if (cached !== undefined && cached.finished && cached.heldTerminal === undefined && jsonEqual(cached.status, status)) {
    return { kind: 'skip', reason: 'unchanged' };
  }
  return { kind: 'write', record: makeRecord(cached, pod, update, status, undefined, true, now) };
}

/**
 * An error message when a terminated container would become non-terminated where its restart
 * policy forbids it, else undefined. Models checkContainerStateTransition.
 */
export function checkContainerStateTransition(
  oldStatuses: readonly ContainerStatus[] | undefined,
  newStatuses: readonly ContainerStatus[] | undefined,
  restartPolicy: string,
): string | undefined {
  if (restartPolicy === 'Always') return undefined;
  for (const o of oldStatuses ?? []) {
    const term = o.state?.terminated;
    if (term === undefined) continue;
    if (term.exitCode !== 0 && restartPolicy === 'OnFailure') continue;
    for (const n of newStatuses ?? []) {
      if (n.name === o.name && n.state?.terminated === undefined) {
        return `terminated container ${n.name} attempted illegal transition to non-terminated state`;
      }
    }
  }
  return undefined;
}

/** Models status_manager.go hasPodInitialized (against the cached status). */
function hasPodInitialized(pod: BoundPod, status: PodStatus): boolean {
  if ((pod.spec.initContainers ?? []).length === 0) return true;
  for (const s of status.containerStatuses ?? []) {
    if (s.lastState?.terminated !== undefined || s.state?.waiting === undefined) return true;
  }
  const inits = status.initContainerStatuses ?? [];
  const last = inits[inits.length - 1];
  if (last !== undefined) {
    if (last.lastState?.terminated?.exitCode === 0) return true;
    if (last.state?.terminated?.exitCode === 0) return true;
  }
  return false;
}

/**
 * How many leading init container statuses have attempted to start: all but the trailing ones that
 * are waiting without a previous termination; at least one. Models initializedContainers.
 */
function initializedContainers(statuses: readonly ContainerStatus[]): number {
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i]!;
    if (s.state?.waiting === undefined || s.lastState?.terminated !== undefined) return i + 1;
  }
  return statuses.length > 0 ? 1 : 0;
}

function heldOf(status: PodStatus, phase: TerminalPhase): Held {
  const held: Held = { phase };
  if (status.reason !== undefined) held.reason = status.reason;
  if (status.message !== undefined) held.message = status.message;
  return held;
}

/** `status` with phase, reason and message replaced (an absent reason or message is removed). */
function withPhase(status: PodStatus, p: { phase: NonNullable<PodStatus['phase']>; reason?: string | undefined; message?: string | undefined }): PodStatus {
  const { reason: _r, message: _m, ...rest } = status;
  const out: PodStatus = { ...rest, phase: p.phase };
  if (p.reason !== undefined) out.reason = p.reason;
  if (p.message !== undefined) out.message = p.message;
  return out;
}

function makeRecord(
  cached: PodStatusRecord | undefined,
  pod: BoundPod,
  update: PodStatusUpdate,
  status: PodStatus,
  held: Held | undefined,
  finished: boolean,
  now: number,
): PodStatusRecord {
  const record: PodStatusRecord = {
    type: 'kubelet.status.PodStatusRecord.v1',
    uid: update.uid,
    name: update.name,
    namespace: update.namespace,
    version: (cached?.version ?? 0) + 1,
    pod,
    status,
    finished,
    updatedAt: new Date(now).toISOString(),
  };
  if (held !== undefined) record.heldTerminal = held;
  return record;
}
