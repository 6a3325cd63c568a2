/**
 * The grace period a kill request asks for, and the rule that a pending kill's grace only shrinks.
 *
 * Models pkg/kubelet/pod_workers.go (calculateEffectiveGracePeriod; "the grace period only ever
 * decreases").
 */
import type { KillRequest } from '@splitlet/api';
import { calculateEffectiveGracePeriod } from '@splitlet/kube';

/** The effective grace period (seconds) of a request: its override, the pod's deletion grace, or its spec. */
export function killGracePeriod(request: KillRequest): number {
  if (request.pod === undefined) return Math.max(1, request.gracePeriodOverride ?? 1);
  return calculateEffectiveGracePeriod({ current: 0, pod: request.pod, override: request.gracePeriodOverride }).gracePeriod;
}

/**
 * The pending request updated to the shorter grace of `incoming`, or undefined when `incoming` does
 * not shorten it (the pending kill, its reason and pod, otherwise stay as they were).
 */
export function shortenedKill(pending: KillRequest, incoming: KillRequest): KillRequest | undefined {
  const next = killGracePeriod(incoming);
  if (next >= killGracePeriod(pending)) return undefined;
  return { ...pending, gracePeriodOverride: next };
}
