/**
 * Where a pod came from, read from the annotations the config sources stamp.
 *
 * Models pkg/kubelet/types/pod_update.go (GetPodSource, IsStaticPod, IsMirrorPod, IsCriticalPod).
 */
import { ConfigAnnotations, PodSources } from './constants.js';

interface AnnotatedPod {
  metadata: { annotations?: Record<string, string> | undefined };
}

/**
 * The `kubernetes.io/config.source` annotation (`file`, `http`, `api`), or `undefined` when absent.
 *
 * Models kubetypes.GetPodSource.
 */
export function podSource(pod: AnnotatedPod): string | undefined {
  return pod.metadata.annotations?.[ConfigAnnotations.source];
}

/**
 * True for a pod from a file or http source (any source other than the API server and splitlet's
 * bus source, whose pods are API-like: not static, no mirror pod).
 *
 * Models kubetypes.IsStaticPod.
 */
export function isStaticPod(pod: AnnotatedPod): boolean {
  const source = podSource(pod);
  return source !== undefined && source !== PodSources.api && source !== PodSources.bus;
}

/**
 * True for a mirror pod (it carries `kubernetes.io/config.mirror`).
 *
 * Models kubetypes.IsMirrorPod.
 */
export function isMirrorPod(pod: AnnotatedPod): boolean {
  return pod.metadata.annotations?.[ConfigAnnotations.mirror] !== undefined;
}

/**
 * True for a critical pod: a static or mirror pod, or one with priority ≥ 2000000000
 * (SystemCriticalPriority).
 *
 * Models kubetypes.IsCriticalPod.
 */
export function isCriticalPod(pod: AnnotatedPod & { spec?: { priority?: number | undefined } }): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  return (pod.spec?.priority ?? 0) >= 2_000_000_000;
}
