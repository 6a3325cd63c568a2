/**
 * What a runtime SyncPod reply means for the pod worker: the reasons cache update and whether the
 * sync failed.
 *
 * Models pkg/kubelet/container/sync_result.go (PodSyncResult.Error, SyncResult.Error),
 * pkg/kubelet/reason_cache.go (ReasonCache.Update) and the tail of Kubelet.SyncPod (backoff-only
 * failures are not errors).
 */
import type { ContainerReason, SyncResult } from '@splitlet/api';

/** Start failures that only mean "waiting for a backoff": SyncPod returns no error for them. */
const BACKOFF_ONLY: ReadonlySet<string> = new Set(['CrashLoopBackOff', 'ImagePullBackOff']);

/** `failed to "StartContainer" for "c" with CrashLoopBackOff: "back-off …"` (SyncResult.Error). */
export function syncResultError(r: SyncResult): string {
  return `failed to "${r.action}" for "${r.target}" with ${r.error ?? 'Unknown'}: "${r.message ?? ''}"`;
}

/**
 * The error Kubelet.SyncPod returns for a runtime reply, or undefined: failures that are all
 * CrashLoopBackOff / ImagePullBackOff are not errors (the pod is requeued at the resync interval).
 */
export function runtimeSyncError(results: readonly SyncResult[]): string | undefined {
  const failed = results.filter((r) => r.error !== undefined && r.error !== '');
  if (failed.length === 0) return undefined;
  if (failed.every((r) => BACKOFF_ONLY.has(r.error!))) return undefined;
  const parts = failed.map(syncResultError);
  return parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
}

/**
 * Applies a reply to the reasons cache: a failed StartContainer / InitContainer records
 * `{reason: error, message}` for its container; a successful one removes the entry.
 * Returns a new map.
 */
export function updateReasons(reasons: Readonly<Record<string, ContainerReason>>, results: readonly SyncResult[]): Record<string, ContainerReason> {
  const next: Record<string, ContainerReason> = { ...reasons };
  for (const r of results) {
    if (r.action !== 'StartContainer' && r.action !== 'InitContainer') continue;
    if (r.error !== undefined && r.error !== '') next[r.target] = { reason: r.error, message: r.message ?? '' };
    else delete next[r.target];
  }
  return next;
}

/**
 * The earliest `retryAt` among backoff failures (CrashLoopBackOff, ImagePullBackOff), or undefined.
 *
 * Models kubecontainer.MinBackoffExpiration (kubernetes PR 133066).
 */
export function earliestBackoffExpiry(results: readonly SyncResult[]): number | undefined {
  let min: number | undefined;
  for (const r of results) {
    if (r.error === undefined || !BACKOFF_ONLY.has(r.error) || r.retryAt === undefined) continue;
    if (min === undefined || r.retryAt < min) min = r.retryAt;
  }
  return min;
}
