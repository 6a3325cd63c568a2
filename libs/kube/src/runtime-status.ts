/**
 * Lookups on the runtime's view of a pod (kubecontainer.PodStatus).
 *
 * Models pkg/kubelet/container/runtime.go (PodStatus.FindContainerStatusByName, the newest-first
 * ordering GetPodStatus produces) and kuberuntime_manager.go (sandbox ordering).
 */
import type { RuntimeContainerStatus, RuntimePodStatus, RuntimeSandboxStatus } from '@splitlet/api';

/**
 * The latest instance (largest `createdAt`; the first one on a tie) of the named container, or
 * `undefined` when the runtime has none.
 *
 * Models PodStatus.FindContainerStatusByName (statuses are sorted newest first).
 */
export function containerStatusFor(name: string, runtimeStatus: Pick<RuntimePodStatus, 'containers'>): RuntimeContainerStatus | undefined {
  let best: RuntimeContainerStatus | undefined;
  for (const c of runtimeStatus.containers) {
    if (c.name === name && (best === undefined || c.createdAt > best.createdAt)) best = c;
  }
  return best;
}

/**
 * The container with the given runtime id, or `undefined`.
 *
 * Models kubecontainer.Pod.FindContainerByID.
 */
export function findRuntimeContainer(runtimeStatus: Pick<RuntimePodStatus, 'containers'>, id: string): RuntimeContainerStatus | undefined {
  return runtimeStatus.containers.find((c) => c.id === id);
}

/**
 * The container instances newest first (by `createdAt`, stable on ties).
 *
 * Models SortContainerStatusesByCreationTime (reversed), as GetPodStatus orders them.
 */
export function containersNewestFirst(runtimeStatus: Pick<RuntimePodStatus, 'containers'>): RuntimeContainerStatus[] {
  return runtimeStatus.containers
    .map((c, i) => ({ c, i }))
    .sort((a, b) => (b.c.createdAt === a.c.createdAt ? a.i - b.i : b.c.createdAt - a.c.createdAt))
    .map((e) => e.c);
}

/**
 * The sandboxes newest first (by `createdAt`, stable on ties): `[0]` is the one the kubelet uses.
 *
 * Models kubeGenericRuntimeManager.GetPodStatus (sandbox statuses sorted by creation time, newest first).
 */
export function sandboxesNewestFirst(runtimeStatus: Pick<RuntimePodStatus, 'sandboxes'>): RuntimeSandboxStatus[] {
  return runtimeStatus.sandboxes
    .map((s, i) => ({ s, i }))
    .sort((a, b) => (b.s.createdAt === a.s.createdAt ? a.i - b.i : b.s.createdAt - a.s.createdAt))
    .map((e) => e.s);
}

/**
 * The pod IPs from its newest sandbox (`sandboxes` newest first), if that sandbox is ready: its IP
 * then its additional IPs.
 *
 * Models kubeGenericRuntimeManager.determinePodSandboxIPs (as GetPodStatus applies it).
 */
export function podSandboxIPs(sandboxes: readonly RuntimeSandboxStatus[]): string[] {
  const latest = sandboxes[0];
  if (latest === undefined || latest.state !== 'SANDBOX_READY') return [];
  return [latest.ip ?? '', ...(latest.additionalIps ?? [])].filter((ip) => ip !== '');
}

/**
 * The pod IPs a new runtime status should carry: its own, unless it has none and no sandbox is
 * ready (the pod was torn down) — then the IPs `before` had, because the API expects a completed
 * pod's IP to stay in its status after the pod is dead.
 *
 * Models GenericPLEG.getPodIPs (pkg/kubelet/pleg/generic.go).
 */
export function podIPsAfterTeardown(before: Pick<RuntimePodStatus, 'ips'> | undefined, now: Pick<RuntimePodStatus, 'ips' | 'sandboxes'>): string[] {
  if (now.ips.length > 0) return now.ips;
  if (before === undefined || before.ips.length === 0) return now.ips;
  if (now.sandboxes.some((s) => s.state === 'SANDBOX_READY')) return now.ips;
  return before.ips;
}
