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
import type { BoundPod, DesiredPod, PodStatus, WorkerRecord } from '@splitlet/api';
import { ConfigAnnotations, parseTime } from '@splitlet/kube';
import type { SyncMetrics } from '../ports.js';

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

/**
 * Observes, once per pod, its first Running (pod_start_duration_seconds, from config.seen, image
 * pulls included) and the first status with every regular container running
 * (pod_start_total_duration_seconds from the creation timestamp, else config.seen, and
 * pod_start_sli_duration_seconds: the same less the record's image-pull window), then forgets
 * the window. Returns the record with what was observed marked.
 *
 * Models PodStartupLatencyTracker.ObservedPodOnWatch.
 */
export function observeRunning(metrics: SyncMetrics, now: number, pod: BoundPod, desired: DesiredPod | undefined, rec: WorkerRecord, status: PodStatus): WorkerRecord {
  let out = rec;
  if (out.runningObserved !== true && status.phase === 'Running') {
    const seen = firstSeen(pod, desired);
    if (seen !== undefined) metrics.observePodStart(Math.max(0, now - seen) / 1000);
    out = { ...out, runningObserved: true };
  }
  if (out.startedObserved !== true && allContainersStarted(pod, status)) {
    const created = parseTime(pod.metadata.creationTimestamp) ?? firstSeen(pod, desired);
    if (created !== undefined) {
      const d = podStartDurations(created, now, out);
      metrics.observePodStartSli?.(d.sliSeconds, d.totalSeconds);
    }
    out = { ...out, startedObserved: true };
    delete out.imagePullStartedAt;
    delete out.imagePullFinishedAt;
  }
  return out;
}

/** config.seen (or, failing that, when the update entered sync-loop), ms since the epoch. */
export function firstSeen(pod: BoundPod, desired: DesiredPod | undefined): number | undefined {
  return parseTime(pod.metadata.annotations?.[ConfigAnnotations.seen]) ?? parseTime(desired?.startTime);
}

/** Every regular container of the spec has a running state in `status` (hasPodStartedSLO). */
function allContainersStarted(pod: BoundPod, status: PodStatus): boolean {
  const running = new Set((status.containerStatuses ?? []).filter((c) => c.state?.running != null).map((c) => c.name));
  return pod.spec.containers.length > 0 && pod.spec.containers.every((c) => running.has(c.name));
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
