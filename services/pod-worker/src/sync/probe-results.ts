/**
 * The part of a pod's probe results that runtime SyncPod reads: liveness and startup (a Failure
 * kills the container); readiness only matters to the status.
 *
 * Models kubeGenericRuntimeManager's livenessManager/startupManager reads in computePodActions.
 */
import type { ProbeResultsByType } from '@splitlet/api';

/** `{probes}` for a SyncPodRequest, or nothing when there are no liveness or startup results. */
export function probesForRuntime(p: ProbeResultsByType | undefined): { probes?: ProbeResultsByType } {
  if (p === undefined || (p.liveness === undefined && p.startup === undefined)) return {};
  return { probes: { ...(p.liveness !== undefined ? { liveness: p.liveness } : {}), ...(p.startup !== undefined ? { startup: p.startup } : {}) } };
}
