/**
 * The pod's QoS class.
 *
 * Models pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS).
 */
import type { PodSpec } from '@splitlet/api';
import { resourceAmount } from './quantity.js';

/**
 * A v1 QoS class.
 *
 * Models k8s.io/api/core/v1 PodQOSClass.
 */
export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = new Set(['cpu', 'memory']);

/**
 * `Guaranteed` when every container (regular and init) has non-zero cpu and memory limits and the
 * summed requests equal the summed limits; `BestEffort` when no container requests or limits cpu or
 * memory; `Burstable` otherwise. Requests default to limits first, as API defaulting does.
 *
 * Models qos.ComputePodQOS.
 */
export function getPodQos(pod: { spec: PodSpec }): QosClass {
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let isGuaranteed = true;
  const all = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  for (const c of all) {
    const lim = c.resources?.limits ?? {};
    const req = { ...lim, ...(c.resources?.requests ?? {}) };
    for (const [name, q] of Object.entries(req)) {
      if (!QOS_RESOURCES.has(name)) continue;
      const v = resourceAmount(name, q);
      if (v > 0) requests.set(name, (requests.get(name) ?? 0) + v);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(lim)) {
      if (!QOS_RESOURCES.has(name)) continue;
      const v = resourceAmount(name, q);
      if (v > 0) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0) + v);
      }
    }
    if (!found.has('memory') || !found.has('cpu')) isGuaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (isGuaranteed) {
    for (const [name, req] of requests) {
      if (limits.get(name) !== req) {
        isGuaranteed = false;
        break;
      }
    }
  }
  return isGuaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}
