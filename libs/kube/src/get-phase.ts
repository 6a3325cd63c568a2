/**
 * The pod phase from its API container statuses.
 *
 * Models pkg/kubelet/kubelet_pods.go (getPhase) `[1.30]`, with sidecars and podIsTerminal, and
 * pkg/kubelet/container/helpers.go (HasAnyRegularContainerStarted).
 */
import type { ContainerStatus, PodPhase, PodSpec } from '@splitlet/api';
import { isStaticPod } from './pod-source.js';

type PhasePod = { metadata: { annotations?: Record<string, string> | undefined }; spec: PodSpec };

function statusByName(statuses: readonly ContainerStatus[], name: string): ContainerStatus | undefined {
  return statuses.find((s) => s.name === name);
}

/**
 * True when a regular container (not an init container) is running or has terminated.
 *
 * Models kubecontainer.HasAnyRegularContainerStarted.
 */
export function hasAnyRegularContainerStarted(spec: PodSpec, statuses: readonly ContainerStatus[]): boolean {
  const names = new Set(spec.containers.map((c) => c.name));
  return statuses.some((s) => names.has(s.name) && (s.state?.running !== undefined || s.state?.terminated !== undefined));
}

/**
 * Counts init, sidecar and regular containers from `statuses` (init and regular together) and
 * returns, in order: Failed when an init container failed under `restartPolicy: Never`; Pending
 * while initialization is pending and no regular container has started, or any container waits
 * without a previous termination; Running when something runs and every container has a status;
 * when all have stopped: Succeeded/Failed for a terminal non-static pod (`podIsTerminal`), else
 * Running (Always), Succeeded (all exit 0), Failed (Never), Running (OnFailure); Pending otherwise.
 *
 * Models getPhase.
 */
export function getPhase(pod: PhasePod, statuses: readonly ContainerStatus[], podIsTerminal: boolean): PodPhase {
  const spec = pod.spec;
  let pendingInitialization = 0;
  let failedInitialization = 0;
  for (const c of spec.initContainers ?? []) {
    if (c.restartPolicy === 'Always') continue;
    const s = statusByName(statuses, c.name);
    if (s === undefined) {
      pendingInitialization++;
      continue;
    }
    if (s.state?.running !== undefined) pendingInitialization++;
    else if (s.state?.terminated !== undefined) {
      if (s.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (s.state?.waiting !== undefined) {
      const last = s.lastState?.terminated;
      if (last !== undefined) {
        if (last.exitCode !== 0) failedInitialization++;
      } else pendingInitialization++;
    } else pendingInitialization++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of spec.initContainers ?? []) {
    if (c.restartPolicy !== 'Always') continue;
    const s = statusByName(statuses, c.name);
    if (s === undefined) {
      unknown++;
      continue;
    }
    if (s.state?.running !== undefined) {
      if (s.started !== true) pendingInitialization++;
      running++;
    } else if (s.state?.terminated !== undefined) {
      // terminated sidecars do not count
    } else if (s.state?.waiting !== undefined) {
      if (s.lastState?.terminated === undefined) {
        pendingInitialization++;
        waiting++;
      }
    } else {
      pendingInitialization++;
      unknown++;
    }
  }
  for (const c of spec.containers) {
    const s = statusByName(statuses, c.name);
    if (s === undefined) {
      unknown++;
      continue;
    }
    if (s.state?.running !== undefined) running++;
    else if (s.state?.terminated !== undefined) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting !== undefined) {
      if (s.lastState?.terminated !== undefined) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && spec.restartPolicy === 'Never') return 'Failed';
  if ((pendingInitialization > 0 && !hasAnyRegularContainerStarted(spec, statuses)) || waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (spec.restartPolicy === 'Always' || spec.restartPolicy === undefined) return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (spec.restartPolicy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}
