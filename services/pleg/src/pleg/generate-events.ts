/**
 * Container-state diffing between two relists: the pure core of the generic PLEG.
 *
 * Models pkg/kubelet/pleg/generic.go (plegContainerState, convertState, generateEvents,
 * getContainersFromPods, computeEvents).
 */
import type { ContainerRuntimeState, PlegEventType, RuntimePodStatus } from '@splitlet/api';

/** The PLEG's view of a container (or sandbox) state. Models generic.go `plegContainerState`. */
export const PlegContainerStates = {
  running: 'running',
  exited: 'exited',
  unknown: 'unknown',
  nonExistent: 'non-existent',
} as const;
export type PlegContainerState = (typeof PlegContainerStates)[keyof typeof PlegContainerStates];

/** One lifecycle event before it is stamped for the bus. */
export interface PlegEvent {
  readonly uid: string;
  readonly event: PlegEventType;
  /** The container (or sandbox) id. */
  readonly data: string;
  /** The container name; absent for a sandbox. */
  readonly containerName?: string;
}

/**
 * A runtime container state as the PLEG sees it: CREATED counts as unknown (the kubelet does not use
 * the created state yet).
 *
 * Models generic.go convertState.
 */
export function convertState(state: ContainerRuntimeState): PlegContainerState {
  switch (state) {
    case 'CONTAINER_CREATED':
      return PlegContainerStates.unknown;
    case 'CONTAINER_RUNNING':
      return PlegContainerStates.running;
    case 'CONTAINER_EXITED':
      return PlegContainerStates.exited;
    case 'CONTAINER_UNKNOWN':
      return PlegContainerStates.unknown;
  }
}

/**
 * A sandbox treated as a container: READY is running, NOTREADY is exited.
 *
 * Models kuberuntime's sandboxToKubeContainer (SandboxToContainerState) as seen by getContainersFromPods.
 */
export function convertSandboxState(state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY'): PlegContainerState {
  return state === 'SANDBOX_READY' ? PlegContainerStates.running : PlegContainerStates.exited;
}

/**
 * The events for one container whose state went from `oldState` to `newState` (none when equal):
 * running → ContainerStarted; exited → ContainerDied; unknown → ContainerChanged; gone → ContainerRemoved,
 * preceded by ContainerDied unless the container had already been reported exited.
 *
 * Models generic.go generateEvents.
 */
export function generateEvents(uid: string, cid: string, oldState: PlegContainerState, newState: PlegContainerState, containerName?: string): PlegEvent[] {
  if (newState === oldState) return [];
  const ev = (event: PlegEventType): PlegEvent => (containerName === undefined ? { uid, event, data: cid } : { uid, event, data: cid, containerName });
  switch (newState) {
    case PlegContainerStates.running:
      return [ev('ContainerStarted')];
    case PlegContainerStates.exited:
      return [ev('ContainerDied')];
    case PlegContainerStates.unknown:
      return [ev('ContainerChanged')];
    case PlegContainerStates.nonExistent:
      // An exited container was already reported dead.
      return oldState === PlegContainerStates.exited ? [ev('ContainerRemoved')] : [ev('ContainerDied'), ev('ContainerRemoved')];
  }
}

interface Tracked {
  readonly id: string;
  readonly name?: string;
  readonly state: PlegContainerState;
}

/** Containers then sandboxes of a pod, as PLEG-tracked entries. */
function tracked(pod: RuntimePodStatus | undefined): Tracked[] {
  if (pod === undefined) return [];
  return [
    ...pod.containers.map((c) => ({ id: c.id, name: c.name, state: convertState(c.state) })),
    ...pod.sandboxes.map((s) => ({ id: s.id, state: convertSandboxState(s.state) })),
  ];
}

/**
 * Every event between the previous and the current observation of one pod: the containers of both
 * (old first, then new, each id once, containers before sandboxes), each diffed with
 * {@link generateEvents}. `undefined` means the pod was absent from that relist.
 *
 * Models the per-pod loop of GenericPLEG.Relist (getContainersFromPods + computeEvents).
 */
export function computePodEvents(oldPod: RuntimePodStatus | undefined, newPod: RuntimePodStatus | undefined): PlegEvent[] {
  const uid = oldPod?.uid ?? newPod?.uid;
  if (uid === undefined) return [];
  const oldById = new Map(tracked(oldPod).map((t) => [t.id, t]));
  const newById = new Map(tracked(newPod).map((t) => [t.id, t]));
  const seen = new Set<string>();
  const events: PlegEvent[] = [];
  for (const t of [...tracked(oldPod), ...tracked(newPod)]) {
    if (seen.has(t.id)) continue;
    seen.add(t.id);
    const before = oldById.get(t.id)?.state ?? PlegContainerStates.nonExistent;
    const after = newById.get(t.id)?.state ?? PlegContainerStates.nonExistent;
    events.push(...generateEvents(uid, t.id, before, after, newById.get(t.id)?.name ?? oldById.get(t.id)?.name));
  }
  return events;
}
