/**
 * Ordering pods the way HandlePodAdditions processes them.
 *
 * Models pkg/kubelet/util/sliceutils/sliceutils.go (PodsByCreationTime) as
 * used by Kubelet.HandlePodAdditions.
 */
import { parseTime } from './time-format.js';

/**
 * A new array of the pods ordered by `metadata.creationTimestamp`, oldest first; a missing timestamp
 * sorts as the zero time. Stable for equal times (Go's sort is not; stability only removes noise).
 *
 * Models sliceutils.PodsByCreationTime (sort.Sort in Kubelet.HandlePodAdditions).
 */
export function sortPodsByCreationTime<P extends { metadata: { creationTimestamp?: string | null | undefined } }>(pods: readonly P[]): P[] {
  return pods
    .map((pod, i) => ({ pod, i, t: parseTime(pod.metadata.creationTimestamp) ?? Number.NEGATIVE_INFINITY }))
    .sort((a, b) => (a.t === b.t ? a.i - b.i : a.t < b.t ? -1 : 1))
    .map((e) => e.pod);
}
