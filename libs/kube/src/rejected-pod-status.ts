/**
 * The status the kubelet writes for a pod it refused to admit.
 *
 * Models pkg/kubelet/kubelet.go (Kubelet.rejectPod).
 */
import type { Pod, PodStatus } from '@splitlet/api';
import { getPodQos } from './qos.js';

/**
 * `{phase: Failed, reason, message: "Pod was rejected: " + message, qosClass}`; the QoS class is the
 * one already in the pod's status, else computed.
 *
 * Models Kubelet.rejectPod (the SetPodStatus part; the Warning event carries `reason` and `message`).
 */
export function rejectedPodStatus(pod: Pod, reason: string, message: string): PodStatus {
  return {
    qosClass: pod.status?.qosClass ?? getPodQos(pod),
    phase: 'Failed',
    reason,
    message: `Pod was rejected: ${message}`,
  };
}
