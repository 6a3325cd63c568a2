/**
 * Whether this node may run a pod's privileged parts.
 *
 * Models pkg/kubelet/util.go (canRunPod) and Kubelet.canRunPod `[1.21]`: privileged containers and
 * host namespaces are refused with reason `Forbidden` unless privileged pods are allowed
 * (`ALLOW_PRIVILEGED=true`; the kubelet's `capabilities.AllowPrivileged` and privileged sources).
 */
import type { Container, Pod } from '@splitlet/api';

/** The soft-admission result. */
export type RunPodResult = { readonly admit: true } | { readonly admit: false; readonly reason: 'Forbidden'; readonly message: string };

function privileged(c: Container): boolean {
  return c.securityContext?.privileged === true;
}

/** Checks privileged containers, init containers, hostNetwork, hostPID and hostIPC, in that order. */
export function canRunPod(pod: Pod, allowPrivileged: boolean): RunPodResult {
  if (allowPrivileged) return { admit: true };
  const uid = pod.metadata.uid ?? '';
  const deny = (what: string): RunPodResult => ({ admit: false, reason: 'Forbidden', message: `pod with UID "${uid}" specified ${what}, but is disallowed` });
  if (pod.spec.containers.some(privileged)) return deny('privileged container');
  if ((pod.spec.initContainers ?? []).some(privileged)) return deny('privileged init container');
  if (pod.spec.hostNetwork === true) return deny('host networking');
  if (pod.spec.hostPID === true) return deny('host PID');
  if (pod.spec.hostIPC === true) return deny('host ipc');
  return { admit: true };
}
