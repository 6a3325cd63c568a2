/**
 * The labels and annotations the kubelet puts on sandboxes and containers, and reading them back.
 *
 * Models pkg/kubelet/kuberuntime/labels.go and pkg/kubelet/types/labels.go.
 */
import type { BoundPod, Container, LifecycleHandler } from '@splitlet/api';
import { hashContainer } from '@splitlet/kube';
import { terminationMessagePathOf, terminationMessagePolicyOf } from './termination-message.js';

/** Label and annotation keys (types/labels.go, kuberuntime/labels.go). */
export const RuntimeLabels = {
  podName: 'io.kubernetes.pod.name',
  podNamespace: 'io.kubernetes.pod.namespace',
  podUid: 'io.kubernetes.pod.uid',
  containerName: 'io.kubernetes.container.name',
  containerHash: 'io.kubernetes.container.hash',
  containerRestartCount: 'io.kubernetes.container.restartCount',
  terminationMessagePath: 'io.kubernetes.container.terminationMessagePath',
  terminationMessagePolicy: 'io.kubernetes.container.terminationMessagePolicy',
  preStopHandler: 'io.kubernetes.container.preStopHandler',
  containerPorts: 'io.kubernetes.container.ports',
  podDeletionGracePeriod: 'io.kubernetes.pod.deletionGracePeriod',
  podTerminationGracePeriod: 'io.kubernetes.pod.terminationGracePeriod',
  /**
   * splitlet's own: `"true"` on init containers (regular and sidecar), so a relist without the pod
   * spec can tell init containers apart. Not a kubelet annotation.
   */
  containerInit: 'io.kubernetes.container.init',
} as const;

/**
 * Sandbox labels: the pod's labels plus its name, namespace and uid (these win over pod labels).
 *
 * Models kuberuntime.newPodLabels.
 */
export function newPodLabels(pod: BoundPod): Record<string, string> {
  return {
    ...(pod.metadata.labels ?? {}),
    [RuntimeLabels.podName]: pod.metadata.name,
    [RuntimeLabels.podNamespace]: pod.metadata.namespace,
    [RuntimeLabels.podUid]: pod.metadata.uid,
  };
}

/**
 * Sandbox annotations: the pod's annotations.
 *
 * Models kuberuntime.newPodAnnotations.
 */
export function newPodAnnotations(pod: BoundPod): Record<string, string> {
  return { ...(pod.metadata.annotations ?? {}) };
}

/**
 * Container labels: container name and the pod's name, namespace and uid.
 *
 * Models kuberuntime.newContainerLabels.
 */
export function newContainerLabels(container: Container, pod: BoundPod): Record<string, string> {
  return {
    [RuntimeLabels.podName]: pod.metadata.name,
    [RuntimeLabels.podNamespace]: pod.metadata.namespace,
    [RuntimeLabels.podUid]: pod.metadata.uid,
    [RuntimeLabels.containerName]: container.name,
  };
}

/**
 * Container annotations: the spec hash, restart count, termination message path and policy, the
 * pod's deletion and termination grace periods (when set), the preStop handler and ports as JSON
 * (so a container can be killed correctly without its spec), and splitlet's init marker.
 *
 * Models kuberuntime.newContainerAnnotations.
 */
export function newContainerAnnotations(container: Container, pod: BoundPod, restartCount: number, isInit: boolean): Record<string, string> {
  const a: Record<string, string> = {
    [RuntimeLabels.containerHash]: hashContainer(container),
    [RuntimeLabels.containerRestartCount]: String(restartCount),
    [RuntimeLabels.terminationMessagePath]: terminationMessagePathOf(container),
    [RuntimeLabels.terminationMessagePolicy]: terminationMessagePolicyOf(container),
  };
  const deletionGrace = pod.metadata.deletionGracePeriodSeconds;
  if (deletionGrace !== undefined && deletionGrace !== null) a[RuntimeLabels.podDeletionGracePeriod] = String(deletionGrace);
  const terminationGrace = pod.spec.terminationGracePeriodSeconds;
  if (terminationGrace !== undefined && terminationGrace !== null) a[RuntimeLabels.podTerminationGracePeriod] = String(terminationGrace);
  if (container.lifecycle?.preStop !== undefined) a[RuntimeLabels.preStopHandler] = JSON.stringify(container.lifecycle.preStop);
  if ((container.ports ?? []).length > 0) a[RuntimeLabels.containerPorts] = JSON.stringify(container.ports);
  if (isInit) a[RuntimeLabels.containerInit] = 'true';
  return a;
}

/** What a container's labels and annotations say about it (labeledContainerInfo + annotatedContainerInfo). */
export interface ContainerInfo {
  readonly podName: string;
  readonly podNamespace: string;
  readonly podUid: string;
  readonly containerName: string;
  readonly hash: string;
  readonly restartCount: number;
  readonly init: boolean;
  /** Where the container writes its termination message ('' when not annotated). */
  readonly terminationMessagePath: string;
  /** `File` or `FallbackToLogsOnError` ('' when not annotated). */
  readonly terminationMessagePolicy: string;
  readonly podDeletionGracePeriod?: number;
  readonly podTerminationGracePeriod?: number;
  readonly preStop?: LifecycleHandler;
}

function intOrUndefined(s: string | undefined): number | undefined {
  if (s === undefined || s === '') return undefined;
  const n = Number.parseInt(s, 10);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Reads a container's identity and kill-relevant settings from its labels and annotations (missing
 * or unparsable values become ''/0/undefined, as the kubelet logs and carries on).
 *
 * Models kuberuntime.getContainerInfoFromLabels and getContainerInfoFromAnnotations.
 */
export function containerInfoFrom(labels: Readonly<Record<string, string>>, annotations: Readonly<Record<string, string>>): ContainerInfo {
  let preStop: LifecycleHandler | undefined;
  const rawPreStop = annotations[RuntimeLabels.preStopHandler];
  if (rawPreStop !== undefined) {
    try {
      preStop = JSON.parse(rawPreStop) as LifecycleHandler;
    } catch {
      preStop = undefined;
    }
  }
  const deletion = intOrUndefined(annotations[RuntimeLabels.podDeletionGracePeriod]);
  const termination = intOrUndefined(annotations[RuntimeLabels.podTerminationGracePeriod]);
  return {
    podName: labels[RuntimeLabels.podName] ?? '',
    podNamespace: labels[RuntimeLabels.podNamespace] ?? '',
    podUid: labels[RuntimeLabels.podUid] ?? '',
    containerName: labels[RuntimeLabels.containerName] ?? '',
    hash: annotations[RuntimeLabels.containerHash] ?? '',
    restartCount: intOrUndefined(annotations[RuntimeLabels.containerRestartCount]) ?? 0,
    init: annotations[RuntimeLabels.containerInit] === 'true',
    terminationMessagePath: annotations[RuntimeLabels.terminationMessagePath] ?? '',
    terminationMessagePolicy: annotations[RuntimeLabels.terminationMessagePolicy] ?? '',
    ...(deletion !== undefined ? { podDeletionGracePeriod: deletion } : {}),
    ...(termination !== undefined ? { podTerminationGracePeriod: termination } : {}),
    ...(preStop !== undefined ? { preStop } : {}),
  };
}
