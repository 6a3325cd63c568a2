/**
 * A pod's runtime record with one sandbox's part replaced: what a runtime container event says.
 *
 * A CRI container event carries one sandbox's status and the statuses of that sandbox's containers
 * (containerd's generateAndSendContainerEvent). The kubelet's evented PLEG makes the pod's whole
 * status of it (GeneratePodStatus), losing the pod's other sandboxes; here it replaces only its
 * own part of the record the PLEG already has, so a pod whose sandbox was re-created keeps its
 * older sandbox and that sandbox's exited containers, as a relist would show them.
 */
import type { RuntimePodStatus } from '@splitlet/api';
import { containersNewestFirst, podSandboxIPs, sandboxesNewestFirst } from '@splitlet/kube';

/**
 * `current` with sandbox `sandboxId` and its containers replaced by those of `part` (none: the
 * sandbox was deleted). `undefined` when nothing of the pod is left. Sandboxes and containers stay
 * newest first; the IPs are the newest sandbox's when it is ready (as GetPodStatus computes them).
 */
export function withSandboxPart(current: RuntimePodStatus | undefined, uid: string, sandboxId: string, part: RuntimePodStatus): RuntimePodStatus | undefined {
  const sandboxes = sandboxesNewestFirst({ sandboxes: [...(current?.sandboxes ?? []).filter((s) => s.id !== sandboxId), ...part.sandboxes] });
  const containers = containersNewestFirst({ containers: [...(current?.containers ?? []).filter((c) => c.sandboxId !== sandboxId), ...part.containers] });
  if (sandboxes.length === 0 && containers.length === 0) return undefined;
  return {
    uid,
    name: part.name || (current?.name ?? ''),
    namespace: part.namespace || (current?.namespace ?? ''),
    ips: podSandboxIPs(sandboxes),
    sandboxes,
    containers,
  };
}
