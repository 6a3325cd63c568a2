/**
 * What the runtime manager must do to move a pod from its runtime state to its spec: kill, (re)create
 * the sandbox, start init / regular / ephemeral containers, kill individual containers.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodActions, podActions,
 * containerChanged, shouldRestartOnFailure, containerSucceeded), kuberuntime_container.go
 * (computeInitContainerActions, findNextInitContainerToRun, hasAnyRegularContainerCreated,
 * isInitContainerFailed) and pkg/kubelet/container/helpers.go (ShouldContainerBeRestarted), with
 * the SidecarContainers path (LegacySidecarContainers off).
 */
import type { Container, Pod, RuntimeContainerStatus, RuntimePodStatus } from '@splitlet/api';
import { hashContainer } from './hash-container.js';
import { podSandboxChanged } from './pod-sandbox-changed.js';
import type { ProbeResults } from './probe-results.js';
import { containerStatusFor } from './runtime-status.js';

/**
 * Why a container is killed (containerKillReason).
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (containerKillReason).
 */
export type ContainerKillReason = '' | 'StartupProbe' | 'LivenessProbe' | 'FailedPostStartHook' | 'Unknown';

/**
 * One container to kill: its name, spec, the Killing event message and the reason.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (containerToKillInfo).
 */
export interface ContainerToKill {
  readonly name: string;
  readonly container: Container;
  readonly message: string;
  readonly reason: ContainerKillReason;
}

/**
 * The plan for one runtime SyncPod. Indices point into the pod spec lists.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (podActions).
 */
export interface PodActions {
  /** Stop every container and the sandbox(es). */
  killPod: boolean;
  /** Create a new sandbox (after killing the pod); init containers are purged first. */
  createSandbox: boolean;
  /** The existing sandbox to start containers in (or the one being replaced). */
  sandboxId: string;
  /** The attempt number of the sandbox to create. */
  attempt: number;
  /** Init containers to start, in spec order (`spec.initContainers` indices). */
  initContainersToStart: number[];
  /** Regular containers to start (`spec.containers` indices). */
  containersToStart: number[];
  /** Ephemeral containers to start (`spec.ephemeralContainers` indices). */
  ephemeralContainersToStart: number[];
  /** Containers to kill, by runtime container id. */
  containersToKill: Record<string, ContainerToKill>;
}

/** Kubelet container state strings, for messages (`kubecontainer.State`). */
const STATE_TEXT: Record<RuntimeContainerStatus['state'], string> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

function shouldRestartOnFailure(pod: Pod): boolean {
  return pod.spec.restartPolicy !== 'Never';
}

function isRestartable(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

function containerChanged(c: Container, status: RuntimeContainerStatus): boolean {
  return status.hash !== hashContainer(c);
}

/**
 * Whether a non-running container should be (re)started: never once the pod has a
 * deletionTimestamp; always when it has no status, or is Created or Unknown; never when running;
 * after an exit, per `restartPolicy` (Never → no; OnFailure → only on a non-zero exit; Always → yes).
 *
 * Models kubecontainer.ShouldContainerBeRestarted.
 */
export function shouldContainerBeRestarted(container: Container, pod: Pod, runtimeStatus: Pick<RuntimePodStatus, 'containers'>): boolean {
  if (pod.metadata.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null) return false;
  const status = containerStatusFor(container.name, runtimeStatus);
  if (status === undefined) return true;
  if (status.state === 'CONTAINER_RUNNING') return false;
  if (status.state === 'CONTAINER_UNKNOWN' || status.state === 'CONTAINER_CREATED') return true;
  if (pod.spec.restartPolicy === 'Never') return false;
  if (pod.spec.restartPolicy === 'OnFailure' && (status.exitCode ?? 0) === 0) return false;
  return true;
}

/**
 * An init container failed when it was OOM-killed, exited non-zero, or is in an unknown state.
 *
 * Models kuberuntime.isInitContainerFailed.
 */
export function isInitContainerFailed(status: RuntimeContainerStatus): boolean {
  if (status.reason === 'OOMKilled') return true;
  if (status.state === 'CONTAINER_EXITED' && (status.exitCode ?? 0) !== 0) return true;
  return status.state === 'CONTAINER_UNKNOWN';
}

/**
 * The legacy (non-sidecar) init walk: `done` when there are no init containers or a regular container
 * runs, or the last init container exited; otherwise `next` (an index) is the init container to start
 * and `failed` the status of the last failed one when that is why.
 *
 * Models kuberuntime.findNextInitContainerToRun.
 */
export function findNextInitContainerToRun(pod: Pod, runtimeStatus: Pick<RuntimePodStatus, 'containers'>): { failed?: RuntimeContainerStatus; next?: number; done: boolean } {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return { done: true };
  for (const c of pod.spec.containers) {
    if (containerStatusFor(c.name, runtimeStatus)?.state === 'CONTAINER_RUNNING') return { done: true };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = containerStatusFor(inits[i]!.name, runtimeStatus);
    if (s !== undefined && isInitContainerFailed(s)) return { failed: s, next: i, done: false };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = containerStatusFor(inits[i]!.name, runtimeStatus);
    if (s === undefined) continue;
    if (s.state === 'CONTAINER_RUNNING') return { done: false };
    if (s.state === 'CONTAINER_EXITED') {
      if (i === inits.length - 1) return { done: true };
      return { next: i + 1, done: false };
    }
  }
  return { next: 0, done: false };
}

function hasAnyRegularContainerCreated(pod: Pod, runtimeStatus: Pick<RuntimePodStatus, 'containers'>): boolean {
  return pod.spec.containers.some((c) => {
    const s = containerStatusFor(c.name, runtimeStatus)?.state;
    return s === 'CONTAINER_CREATED' || s === 'CONTAINER_RUNNING' || s === 'CONTAINER_EXITED';
  });
}

/**
 * Computes the actions for one runtime SyncPod.
 *
 * Sandbox: when {@link podSandboxChanged} says so, kill the pod and recreate it, except under
 * `restartPolicy: Never` with an earlier attempt and container statuses (kill only), or when no
 * container is left to start and the pod had initialized (kill only); a recreated pod restarts from
 * `initContainers[0]`, or all regular containers not already succeeded under OnFailure.
 * Otherwise: ephemeral containers without a status start; init containers are walked
 * (see computeInitContainerActions: failed under Never → kill the pod; sidecars restarted, killed on a
 * failed startup/liveness probe or a changed definition; the next init container starts once the
 * previous one succeeded or the previous sidecar `started`); after initialization, regular containers
 * that are not running start when {@link shouldContainerBeRestarted}; a running one whose hash
 * changed is killed "Container %s definition changed" and restarted whatever the policy; liveness or
 * startup Failure kills it ("Container %s failed liveness probe") and restarts it when the policy
 * allows (", will be restarted"); nothing kept and nothing to start → kill the pod.
 *
 * Models kubeGenericRuntimeManager.computePodActions.
 */
export function computePodActions(pod: Pod, runtimeStatus: RuntimePodStatus, probes: ProbeResults = {}): PodActions {
  const sandbox = podSandboxChanged(pod, runtimeStatus);
  const changes: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: {},
  };

  if (sandbox.changed) {
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && runtimeStatus.containers.length !== 0) {
      changes.createSandbox = false;
      return changes;
    }
    const toStart: number[] = [];
    pod.spec.containers.forEach((c, idx) => {
      if (pod.spec.restartPolicy === 'OnFailure') {
        const s = containerStatusFor(c.name, runtimeStatus);
        if (s !== undefined && s.state === 'CONTAINER_EXITED' && (s.exitCode ?? 0) === 0) return;
      }
      toStart.push(idx);
    });
    if (toStart.length === 0 && hasAnyRegularContainerCreated(pod, runtimeStatus)) {
      changes.createSandbox = false;
      return changes;
    }
    if ((pod.spec.initContainers ?? []).length !== 0) {
      changes.initContainersToStart = [0];
      return changes;
    }
    changes.containersToStart = toStart;
    return changes;
  }

  (pod.spec.ephemeralContainers ?? []).forEach((c, i) => {
    if (containerStatusFor(c.name, runtimeStatus) === undefined) changes.ephemeralContainersToStart.push(i);
  });

  const initialized = computeInitContainerActions(pod, runtimeStatus, changes, probes);
  if (changes.killPod || !initialized) return changes;

  let keepCount = 0;
  pod.spec.containers.forEach((container, idx) => {
    const status = containerStatusFor(container.name, runtimeStatus);
    if (status === undefined || status.state !== 'CONTAINER_RUNNING') {
      if (shouldContainerBeRestarted(container, pod, runtimeStatus)) {
        changes.containersToStart.push(idx);
        if (status !== undefined && status.state === 'CONTAINER_UNKNOWN') {
          changes.containersToKill[status.id] = {
            name: status.name,
            container,
            message: `Container is in ${JSON.stringify(STATE_TEXT[status.state])} state, try killing it before restart`,
            reason: 'Unknown',
          };
        }
      }
      return;
    }
    let message: string;
    let reason: ContainerKillReason = '';
    let restart = shouldRestartOnFailure(pod);
    if (containerChanged(container, status)) {
      message = `Container ${container.name} definition changed`;
      restart = true;
    } else if (probes.liveness?.[status.id] === 'Failure') {
      message = `Container ${container.name} failed liveness probe`;
      reason = 'LivenessProbe';
    } else if (probes.startup?.[status.id] === 'Failure') {
      message = `Container ${container.name} failed startup probe`;
      reason = 'StartupProbe';
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      changes.containersToStart.push(idx);
    }
    changes.containersToKill[status.id] = { name: status.name, container, message, reason };
  });

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    changes.initContainersToStart = [];
  }
  return changes;
}

/**
 * Fills the init-container part of `changes` and says whether the pod has initialized.
 *
 * Models kubeGenericRuntimeManager.computeInitContainerActions.
 */
function computeInitContainerActions(pod: Pod, runtimeStatus: RuntimePodStatus, changes: PodActions, probes: ProbeResults): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;

  let podHasInitialized = false;
  for (const c of pod.spec.containers) {
    const s = containerStatusFor(c.name, runtimeStatus);
    if (s !== undefined && (s.state === 'CONTAINER_CREATED' || s.state === 'CONTAINER_RUNNING')) {
      podHasInitialized = true;
      break;
    }
    // An exited regular container does not count: after a node reboot every container is exited and
    // the new sandbox must initialize again.
  }

  let isPreviouslyInitialized = podHasInitialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const start: number[] = [];
  const kill = (status: RuntimeContainerStatus, container: Container, message: string, reason: ContainerKillReason): void => {
    changes.containersToKill[status.id] = { name: container.name, container, message, reason };
  };

  for (let i = inits.length - 1; i >= 0; i--) {
    const container = inits[i]!;
    const status = containerStatusFor(container.name, runtimeStatus);
    if (status === undefined) {
      if (isPreviouslyInitialized && isRestartable(container)) start.push(i);
      continue;
    }
    if (isPreviouslyInitialized && !isRestartable(container)) continue;

    switch (status.state) {
      case 'CONTAINER_CREATED':
        start.push(i);
        break;
      case 'CONTAINER_RUNNING': {
        if (!isRestartable(container)) break;
        if (container.startupProbe !== undefined) {
          const startup = probes.startup?.[status.id];
          if (startup === undefined) break;
          if (startup !== 'Success') {
            if (startup === 'Failure') {
              kill(status, container, `Init container ${container.name} failed startup probe`, 'StartupProbe');
              start.push(i);
            }
            break;
          }
        }
        if (i === inits.length - 1) podHasInitialized = true;
        else if (!isPreviouslyInitialized) start.push(i + 1);
        if (containerChanged(container, status)) {
          kill(status, container, `Init container ${container.name} definition changed`, '');
          start.push(i);
          break;
        }
        if (container.livenessProbe !== undefined) {
          const liveness = probes.liveness?.[status.id];
          if (liveness === undefined) break;
          if (liveness === 'Failure') {
            kill(status, container, `Init container ${container.name} failed liveness probe`, 'LivenessProbe');
            start.push(i);
            break;
          }
        }
        break;
      }
      case 'CONTAINER_EXITED':
        if (isRestartable(container)) {
          start.push(i);
        } else {
          if (isInitContainerFailed(status)) {
            if (!restartOnFailure) {
              changes.killPod = true;
              changes.initContainersToStart = [];
              return false;
            }
            start.push(i);
            break;
          }
          if (i === inits.length - 1) podHasInitialized = true;
          else start.push(i + 1);
        }
        break;
      default: {
        const message = `Init container is in ${JSON.stringify(STATE_TEXT[status.state])} state, try killing it before restart`;
        if (isRestartable(container)) {
          kill(status, container, message, 'Unknown');
          start.push(i);
        } else {
          if (!restartOnFailure) {
            changes.killPod = true;
            changes.initContainersToStart = [];
            return false;
          }
          kill(status, container, message, 'Unknown');
          start.push(i);
        }
      }
    }
    if (!isPreviouslyInitialized) isPreviouslyInitialized = true;
  }
  if (!isPreviouslyInitialized) start.push(0);
  changes.initContainersToStart = start.reverse();
  return podHasInitialized;
}
