/**
 * Which pod and which part of its spec an event is about.
 *
 * Models pkg/kubelet/container/ref.go (GenerateContainerRef, fieldPath) and
 * kuberuntime_container.go (recordContainerEvent).
 */
import type { BoundPod, Container } from '@splitlet/api';
import type { EventPodRef, EventRecorder } from '../ports.js';

/** The event identity of a pod. */
export function podRef(pod: { metadata: { name: string; namespace: string; uid: string } }): EventPodRef {
  return { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid };
}

/**
 * `spec.containers{<name>}`, `spec.initContainers{<name>}` or `spec.ephemeralContainers{<name>}`,
 * by where the container is declared (regular containers when the pod has no such name, as for a
 * container restored from its labels).
 *
 * Models ref.fieldPath.
 */
export function containerFieldPath(pod: BoundPod | undefined, container: Pick<Container, 'name'>, isInit = false): string {
  const name = container.name;
  if (pod !== undefined) {
    if (pod.spec.containers.some((c) => c.name === name)) return `spec.containers{${name}}`;
    if ((pod.spec.initContainers ?? []).some((c) => c.name === name)) return `spec.initContainers{${name}}`;
    if ((pod.spec.ephemeralContainers ?? []).some((c) => c.name === name)) return `spec.ephemeralContainers{${name}}`;
  }
  return isInit ? `spec.initContainers{${name}}` : `spec.containers{${name}}`;
}

/**
 * Records a container event. A container id in the message is replaced by the container name, as
 * the kubelet does.
 *
 * Models kubeGenericRuntimeManager.recordContainerEvent.
 */
export function recordContainerEvent(
  recorder: EventRecorder,
  pod: EventPodRef,
  fieldPath: string,
  containerName: string,
  containerId: string,
  eventType: 'Normal' | 'Warning',
  reason: string,
  message: string,
): void {
  const text = containerId !== '' ? message.replaceAll(containerId, containerName) : message;
  recorder.record({ pod, fieldPath, eventType, reason, message: text });
}
