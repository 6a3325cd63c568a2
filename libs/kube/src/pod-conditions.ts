/**
 * The pod conditions the kubelet owns: PodReadyToStartContainers, Initialized, Ready,
 * ContainersReady (PodScheduled is always True), and their lastTransitionTime bookkeeping.
 *
 * Models pkg/kubelet/status/generate.go `[master]` and pkg/kubelet/status/status_manager.go
 * (updateLastTransitionTime).
 */
import type { ContainerStatus, PodCondition, PodPhase, PodSpec, PodStatus, RuntimePodStatus } from '@splitlet/api';
import { hasAnyRegularContainerStarted } from './get-phase.js';
import { podSandboxChanged } from './pod-sandbox-changed.js';
import { rfc3339 } from './time-format.js';

/** Condition reasons the kubelet writes. Models status/generate.go constants. */
export const ConditionReasons = {
  UnknownContainerStatuses: 'UnknownContainerStatuses',
  PodCompleted: 'PodCompleted',
  PodFailed: 'PodFailed',
  ContainersNotReady: 'ContainersNotReady',
  ContainersNotInitialized: 'ContainersNotInitialized',
  ReadinessGatesNotReady: 'ReadinessGatesNotReady',
} as const;

/**
 * The condition types the kubelet generates, in the order it appends them.
 *
 * Models pkg/kubelet/kubelet_pods.go (the append order in generateAPIPodStatus).
 */
export const KubeletConditionTypes = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'] as const;

type SpecPod = { spec: PodSpec };

function goList(names: readonly string[]): string {
  return `[${names.join(' ')}]`;
}

function cond(type: string, status: PodCondition['status'], reason?: string, message?: string): PodCondition {
  const c: PodCondition = { type, status };
  if (reason !== undefined && reason !== '') c.reason = reason;
  if (message !== undefined && message !== '') c.message = message;
  return c;
}

/**
 * ContainersReady: True when every regular container and sidecar has a status with `ready`;
 * False `ContainersNotReady` "containers with unknown status: [a], containers with unready status: [b]";
 * for a Succeeded pod with all statuses known, or any Failed pod, False `PodCompleted` / `PodFailed`;
 * False `UnknownContainerStatuses` when `statuses` is undefined.
 *
 * Models status.GenerateContainersReadyCondition.
 */
export function generateContainersReadyCondition(pod: SpecPod, statuses: readonly ContainerStatus[] | undefined, phase: PodPhase): PodCondition {
  if (statuses === undefined) return cond('ContainersReady', 'False', ConditionReasons.UnknownContainerStatuses);
  const unknown: string[] = [];
  const unready: string[] = [];
  const check = (name: string): void => {
    const s = statuses.find((x) => x.name === name);
    if (s === undefined) unknown.push(name);
    else if (!s.ready) unready.push(name);
  };
  for (const c of pod.spec.initContainers ?? []) if (c.restartPolicy === 'Always') check(c.name);
  for (const c of pod.spec.containers) check(c.name);
  if (phase === 'Succeeded' && unknown.length === 0) return cond('ContainersReady', 'False', ConditionReasons.PodCompleted);
  if (phase === 'Failed') return cond('ContainersReady', 'False', ConditionReasons.PodFailed);
  const msgs: string[] = [];
  if (unknown.length > 0) msgs.push(`containers with unknown status: ${goList(unknown)}`);
  if (unready.length > 0) msgs.push(`containers with unready status: ${goList(unready)}`);
  if (msgs.length > 0) return cond('ContainersReady', 'False', ConditionReasons.ContainersNotReady, msgs.join(', '));
  return cond('ContainersReady', 'True');
}

/**
 * Ready: ContainersReady's status, reason and message when that is not True; else False
 * `ReadinessGatesNotReady` when a readiness gate's condition (looked up in `conditions`) is missing
 * or not True; else True.
 *
 * Models status.GeneratePodReadyCondition.
 */
export function generatePodReadyCondition(pod: SpecPod, conditions: readonly PodCondition[], statuses: readonly ContainerStatus[] | undefined, phase: PodPhase): PodCondition {
  const containersReady = generateContainersReadyCondition(pod, statuses, phase);
  if (containersReady.status !== 'True') {
    return cond('Ready', containersReady.status, containersReady.reason, containersReady.message);
  }
  const msgs: string[] = [];
  for (const rg of pod.spec.readinessGates ?? []) {
    const c = conditions.find((x) => x.type === rg.conditionType);
    if (c === undefined) msgs.push(`corresponding condition of pod readiness gate ${JSON.stringify(rg.conditionType)} does not exist.`);
    else if (c.status !== 'True') msgs.push(`the status of pod readiness gate ${JSON.stringify(rg.conditionType)} is not "True", but ${c.status}`);
  }
  if (msgs.length > 0) return cond('Ready', 'False', ConditionReasons.ReadinessGatesNotReady, msgs.join(', '));
  return cond('Ready', 'True');
}

/**
 * Initialized: False `UnknownContainerStatuses` when `statuses` is undefined and there are init
 * containers; True `PodCompleted` for a Succeeded pod whose init statuses are all known; True when a
 * regular container has started; False `ContainersNotInitialized` "containers with unknown status:
 * [..], containers with incomplete status: [..]" while a regular init container is not `ready`
 * (exited 0) or a sidecar has not `started`; True otherwise.
 *
 * Models status.GeneratePodInitializedCondition.
 */
export function generatePodInitializedCondition(pod: SpecPod, statuses: readonly ContainerStatus[] | undefined, phase: PodPhase): PodCondition {
  const inits = pod.spec.initContainers ?? [];
  if (statuses === undefined && inits.length > 0) return cond('Initialized', 'False', ConditionReasons.UnknownContainerStatuses);
  const all = statuses ?? [];
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of inits) {
    const s = all.find((x) => x.name === c.name);
    if (s === undefined) {
      unknown.push(c.name);
      continue;
    }
    const initialized = c.restartPolicy === 'Always' ? s.started === true : s.ready;
    if (!initialized) incomplete.push(c.name);
  }
  if (phase === 'Succeeded' && unknown.length === 0) return cond('Initialized', 'True', ConditionReasons.PodCompleted);
  if (hasAnyRegularContainerStarted(pod.spec, all)) return cond('Initialized', 'True');
  const msgs: string[] = [];
  if (unknown.length > 0) msgs.push(`containers with unknown status: ${goList(unknown)}`);
  if (incomplete.length > 0) msgs.push(`containers with incomplete status: ${goList(incomplete)}`);
  if (msgs.length > 0) return cond('Initialized', 'False', ConditionReasons.ContainersNotInitialized, msgs.join(', '));
  return cond('Initialized', 'True');
}

/**
 * PodReadyToStartContainers: True when no new sandbox is needed (a READY sandbox with networking
 * exists), else False.
 *
 * Models status.GeneratePodReadyToStartContainersCondition.
 */
export function generatePodReadyToStartContainersCondition(pod: { spec: { hostNetwork?: boolean | undefined } }, runtimeStatus: Pick<RuntimePodStatus, 'sandboxes'>): PodCondition {
  return cond('PodReadyToStartContainers', podSandboxChanged(pod, runtimeStatus).changed ? 'False' : 'True');
}

/**
 * Returns `status` with the `conditionType` condition's `lastTransitionTime` set: kept from
 * `oldStatus` when the old condition exists with the same status, else `now` (RFC3339). `status` is
 * not mutated; without such a condition it is returned as is.
 *
 * Models statusManager's updateLastTransitionTime.
 */
export function updateLastTransitionTime(status: PodStatus, oldStatus: PodStatus | undefined, conditionType: string, now: number): PodStatus {
  const conditions = status.conditions;
  const idx = conditions?.findIndex((c) => c.type === conditionType) ?? -1;
  if (conditions === undefined || idx < 0) return status;
  const c = conditions[idx]!;
  const old = oldStatus?.conditions?.find((x) => x.type === conditionType);
  const lastTransitionTime = old !== undefined && old.status === c.status ? (old.lastTransitionTime ?? null) : rfc3339(now);
  const next = [...conditions];
  next[idx] = { ...c, lastTransitionTime };
  return { ...status, conditions: next };
}
