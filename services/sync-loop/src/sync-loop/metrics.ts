/**
 * The sync loop's metrics, with the kubelet's names and labels.
 *
 * Models pkg/kubelet/metrics/metrics.go (AdmissionRejectionsTotal, DesiredPodCount, ActivePodCount,
 * WorkingPodCount, OrphanedRuntimePodTotal, RestartedPodTotal).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { DefBuckets } from '@splitlet/telemetry';

/** The sync loop's instruments. */
export interface SyncLoopMetrics {
  readonly admissionRejections: Counter<'reason'>;
  readonly desiredPods: Gauge<'static'>;
  readonly activePods: Gauge<'static'>;
  readonly workingPods: Gauge<'lifecycle' | 'config' | 'static'>;
  readonly orphanedRuntimePods: Counter;
  readonly restartedPods: Counter<'static'>;
  /** splitlet_housekeeping_duration_seconds (the kubelet only logs slow runs). */
  readonly housekeepingDuration: Histogram;
  /** splitlet_config_updates_replayed_total: config updates skipped because they were applied already. */
  readonly replayedUpdates: Counter;
}

/** Registers the sync loop's metrics on `registry`. Call once per registry. */
export function createSyncLoopMetrics(registry: Registry): SyncLoopMetrics {
  const registers = [registry];
  return {
    admissionRejections: new Counter({
      name: 'kubelet_admission_rejections_total',
      help: 'Cumulative number pod admission rejections by the Kubelet.',
      labelNames: ['reason'],
      registers,
    }),
    desiredPods: new Gauge({
      name: 'kubelet_desired_pods',
      help: 'The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.',
      labelNames: ['static'],
      registers,
    }),
    activePods: new Gauge({
      name: 'kubelet_active_pods',
      help: 'The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.',
      labelNames: ['static'],
      registers,
    }),
    workingPods: new Gauge({
      name: 'kubelet_working_pods',
      help: 'Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static.',
      labelNames: ['lifecycle', 'config', 'static'],
      registers,
    }),
    orphanedRuntimePods: new Counter({
      name: 'kubelet_orphaned_runtime_pods_total',
      help: 'Number of pods that have been detected in the container runtime without being already known to the pod worker.',
      registers,
    }),
    restartedPods: new Counter({
      name: 'kubelet_restarted_pods_total',
      help: 'Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them.',
      labelNames: ['static'],
      registers,
    }),
    housekeepingDuration: new Histogram({
      name: 'splitlet_housekeeping_duration_seconds',
      help: 'Duration in seconds of one housekeeping pass (HandlePodCleanups).',
      buckets: [...DefBuckets],
      registers,
    }),
    replayedUpdates: new Counter({
      name: 'splitlet_config_updates_replayed_total',
      help: 'Config updates the bus delivered again after they were applied (nats-server lost their acks); skipped.',
      registers,
    }),
  };
}
