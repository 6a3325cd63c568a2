/**
 * The pod start SLI: creation → every regular container running, without the time spent pulling
 * images.
 *
 * Models pkg/kubelet/util/pod_startup_latency_tracker.go (RecordImageStartedPulling keeps the first
 * pull start, RecordImageFinishedPulling the last pull end; ObservedPodOnWatch observes
 * podStartSLOduration = (running − created) − (lastFinishedPulling − firstStartedPulling)). The
 * window is kept in the pod's worker record (so another replica can finish the observation) from
 * what cri-adapter reports per runtime SyncPod, until the SLI is observed.
 */

/** An image-pull window, ms since the epoch; either end may be unknown. */
export interface PullWindow {
  readonly imagePullStartedAt?: number | undefined;
  readonly imagePullFinishedAt?: number | undefined;
}

/**
 * `record` with `reported` folded in: the earliest pull start and the latest pull end. Returns
 * `record` itself when nothing changes.
 */
export function mergePullWindow<T extends PullWindow>(record: T, reported: PullWindow): T {
  const start = minDefined(record.imagePullStartedAt, reported.imagePullStartedAt);
  const end = maxDefined(record.imagePullFinishedAt, reported.imagePullFinishedAt);
  if (start === record.imagePullStartedAt && end === record.imagePullFinishedAt) return record;
  return {
    ...record,
    ...(start !== undefined ? { imagePullStartedAt: start } : {}),
    ...(end !== undefined ? { imagePullFinishedAt: end } : {}),
  };
}

/**
 * pod_start_total_duration_seconds (`total`: running − created) and pod_start_sli_duration_seconds
 * (`sli`: the total less the pull window). A window without both ends, or one that ends before it
 * starts, counts as no pull. Neither value is negative.
 */
export function podStartDurations(createdMs: number, runningMs: number, window: PullWindow): { totalSeconds: number; sliSeconds: number } {
  const totalMs = Math.max(0, runningMs - createdMs);
  const { imagePullStartedAt: start, imagePullFinishedAt: end } = window;
  const pullMs = start !== undefined && end !== undefined && end > start ? end - start : 0;
  return { totalSeconds: totalMs / 1000, sliSeconds: Math.max(0, totalMs - pullMs) / 1000 };
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

function maxDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}
