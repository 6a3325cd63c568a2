/**
 * The span attributes that name a pod, with the OpenTelemetry Kubernetes semantic-convention keys
 * (`k8s.pod.uid`, `k8s.pod.name`, `k8s.namespace.name`), so every process tags its pod spans alike
 * and a trace can be searched by any of them.
 */
import type { Attributes } from '@opentelemetry/api';

/** What names a pod: a pod's `metadata`, or a running pod's reference. */
export interface PodIdentity {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
}

/** The pod's semantic-convention span attributes. */
export function podSpanAttributes(pod: PodIdentity): Attributes {
  return { 'k8s.pod.uid': pod.uid, 'k8s.pod.name': pod.name, 'k8s.namespace.name': pod.namespace };
}
