/**
 * The events a pod's sync records about the pod (FailedMount, FailedKillPod, Forbidden …), as the
 * kubelet's recorder sends them: involved object the pod, source component `kubelet` on this node.
 *
 * Models the recorder.Eventf calls of pkg/kubelet/kubelet.go (SyncPod, SyncTerminatingPod).
 */
import type { BoundPod, KubeEvent } from '@splitlet/api';

/** A pod event of `eventType` with `reason` and `message`, recorded at `at` (ms since the epoch) by the kubelet of `node`. */
export function podEvent(node: string, pod: BoundPod, eventType: 'Normal' | 'Warning', reason: string, message: string, at: number): KubeEvent {
  return {
    type: 'kubelet.events.Event.v1',
    eventType,
    reason,
    message,
    involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
    source: { component: 'kubelet', host: node },
    timestamp: new Date(at).toISOString(),
  };
}
