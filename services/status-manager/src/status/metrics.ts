/**
 * The status manager's metrics. Models pkg/kubelet/metrics/metrics.go (PodStatusSyncDuration).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { podStatusSyncBuckets } from '@splitlet/telemetry';

/** The status manager's instruments. */
export interface StatusMetrics {
  /** kubelet_pod_status_sync_duration_seconds: from the status update's `at` to its write. */
  readonly syncDuration: Histogram;
  /** splitlet_status_updates_total{kind,outcome}: updates handled (no kubelet equivalent). */
  readonly updates: Counter<'kind' | 'outcome'>;
}

/** Registers the status manager's metrics on `registry`. Call once per registry. */
export function createStatusMetrics(registry: Registry): StatusMetrics {
  return {
    syncDuration: new Histogram({
      name: 'kubelet_pod_status_sync_duration_seconds',
      help: 'Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the status is written.',
      buckets: [...podStatusSyncBuckets],
      registers: [registry],
    }),
    updates: new Counter({
      name: 'splitlet_status_updates_total',
      help: 'Pod status updates handled, by kind (set, terminated, removed) and outcome (written, deleted, unchanged, stale, illegal-transition, unknown-pod).',
      labelNames: ['kind', 'outcome'],
      registers: [registry],
    }),
  };
}
