/**
 * The PLEG's metrics, with the kubelet's names, types and buckets.
 *
 * Models pkg/kubelet/metrics/metrics.go (PLEGRelistDuration, PLEGRelistInterval, PLEGLastSeen,
 * PLEGDiscardEvents).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { DefBuckets } from '@splitlet/telemetry';

/** The PLEG's instruments. */
export interface PlegMetrics {
  /** kubelet_pleg_relist_duration_seconds. */
  readonly relistDuration: Histogram;
  /** kubelet_pleg_relist_interval_seconds. */
  readonly relistInterval: Histogram;
  /** kubelet_pleg_last_seen_seconds: Unix time of the last successful relist. */
  readonly lastSeen: Gauge;
  /** kubelet_pleg_discard_events: events that could not be delivered. */
  readonly discardEvents: Counter;
  /** splitlet_pleg_relist_errors_total: relists whose runtime request failed (no kubelet equivalent). */
  readonly relistErrors: Counter;
}

/** Registers the PLEG metrics on `registry`. Call once per registry. */
export function createPlegMetrics(registry: Registry): PlegMetrics {
  return {
    relistDuration: new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration in seconds for relisting pods in PLEG.',
      buckets: [...DefBuckets],
      registers: [registry],
    }),
    relistInterval: new Histogram({
      name: 'kubelet_pleg_relist_interval_seconds',
      help: 'Interval in seconds between relisting in PLEG.',
      buckets: [...DefBuckets],
      registers: [registry],
    }),
    lastSeen: new Gauge({
      name: 'kubelet_pleg_last_seen_seconds',
      help: 'Timestamp in seconds when PLEG was last seen active.',
      registers: [registry],
    }),
    discardEvents: new Counter({
      name: 'kubelet_pleg_discard_events',
      help: 'The number of discard events in PLEG.',
      registers: [registry],
    }),
    relistErrors: new Counter({
      name: 'splitlet_pleg_relist_errors_total',
      help: 'Relists that failed because the runtime could not be listed.',
      registers: [registry],
    }),
  };
}
