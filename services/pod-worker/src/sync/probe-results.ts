/**
 * The part of a pod's probe results that runtime SyncPod reads: liveness and startup (a Failure
 * kills the container); readiness only matters to the status. And which pods have results at all.
 *
 * Models kubeGenericRuntimeManager's livenessManager/startupManager reads in computePodActions.
 */
import type { Pod, ProbeResultsByType } from '@splitlet/api';

/** `{probes}` for a SyncPodRequest, or nothing when there are no liveness or startup results. */
export function probesForRuntime(p: ProbeResultsByType | undefined): { probes?: ProbeResultsByType } {
  if (p === undefined || (p.liveness === undefined && p.startup === undefined)) return {};
  return { probes: { ...(p.liveness !== undefined ? { liveness: p.liveness } : {}), ...(p.startup !== undefined ? { startup: p.startup } : {}) } };
}

/** Whether any regular or sidecar init container of the pod has a probe (only those have results). */
export function hasProbes(pod: Pod): boolean {
  const probed = (c: { livenessProbe?: unknown; readinessProbe?: unknown; startupProbe?: unknown }): boolean =>
    c.livenessProbe !== undefined || c.readinessProbe !== undefined || c.startupProbe !== undefined;
  return pod.spec.containers.some(probed) || (pod.spec.initContainers ?? []).some((c) => c.restartPolicy === 'Always' && probed(c));
}
