/**
 * Effective resource requests of a pod, as the scheduler and the kubelet's admission compute them.
 *
 * Models k8s.io/component-helpers/resource/helpers.go (PodRequests) and
 * pkg/scheduler/framework/types.go (computePodResourceRequest).
 */
import type { Container, PodSpec } from '@splitlet/api';
import { resourceAmount } from './quantity.js';

/**
 * Integer amounts per resource name: millicores for `cpu`, bytes or counts for the rest.
 *
 * Models pkg/scheduler/framework/types.go (Resource: MilliCPU, Memory, EphemeralStorage, ScalarResources).
 */
export type ResourceAmounts = Record<string, number>;

/**
 * A container's requests as the API server's defaulting leaves them: a resource with a limit and
 * no request requests its limit.
 *
 * Models pkg/apis/core/v1/defaults.go (SetDefaults_Pod: requests default to limits).
 */
export function containerRequests(container: Pick<Container, 'resources'>): ResourceAmounts {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const out: ResourceAmounts = {};
  for (const [name, q] of Object.entries({ ...limits, ...requests })) out[name] = resourceAmount(name, q);
  return out;
}

/**
 * The pod's effective requests: max(sum of regular containers + sum of sidecars, each init container's
 * request + the sidecars started before it), plus `spec.overhead`. Sidecars (init containers with
 * `restartPolicy: Always`) add up because they keep running.
 *
 * Models resourcehelper.PodRequests (with the SidecarContainers rules).
 */
export function podRequests(pod: { spec: PodSpec }): ResourceAmounts {
  const reqs: ResourceAmounts = {};
  for (const c of pod.spec.containers) addTo(reqs, containerRequests(c));

  const restartableInitReqs: ResourceAmounts = {};
  const initReqs: ResourceAmounts = {};
  for (const c of pod.spec.initContainers ?? []) {
    let cReqs = containerRequests(c);
    if (c.restartPolicy === 'Always') {
      addTo(restartableInitReqs, cReqs);
      cReqs = { ...restartableInitReqs };
    } else {
      const tmp = { ...cReqs };
      addTo(tmp, restartableInitReqs);
      cReqs = tmp;
    }
    maxInto(initReqs, cReqs);
  }
  addTo(reqs, restartableInitReqs);
  maxInto(reqs, initReqs);

  const overhead = (pod.spec as { overhead?: Record<string, string | number> }).overhead;
  if (overhead !== undefined) {
    const o: ResourceAmounts = {};
    for (const [name, q] of Object.entries(overhead)) o[name] = resourceAmount(name, q);
    addTo(reqs, o);
  }
  return reqs;
}

function addTo(into: ResourceAmounts, add: ResourceAmounts): void {
  for (const [k, v] of Object.entries(add)) into[k] = (into[k] ?? 0) + v;
}

function maxInto(into: ResourceAmounts, other: ResourceAmounts): void {
  for (const [k, v] of Object.entries(other)) {
    const cur = into[k];
    if (cur === undefined || v > cur) into[k] = v;
  }
}
