/**
 * The PLEG's metrics, with the kubelet's names, types and buckets.
 *
 * Models pkg/kubelet/metrics/metrics.go (PLEGRelistDuration, PLEGRelistInterval, PLEGLastSeen,
 * PLEGDiscardEvents, EventedPLEGConnLatency; the connection counters are cri-adapter's, which holds
 * the runtime's event stream).
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
  /** kubelet_evented_pleg_connection_latency_seconds: a runtime event's creation to pleg applying it. */
  readonly eventedLatency: Histogram;
  /** splitlet_pleg_evented: 1 while the runtime's events drive pleg (the long relist period), else 0. */
  readonly evented: Gauge;
  /** splitlet_pleg_event_stream_resyncs_total{reason}: full relists because runtime events may have been missed. */
  readonly eventResyncs: Counter<'reason'>;
  /** splitlet_pleg_stale_reports_total: runtime reports dropped as older than a relist applied before them. */
  readonly staleReports: Counter;
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
    eventedLatency: new Histogram({
      name: 'kubelet_evented_pleg_connection_latency_seconds',
      help: 'The latency of streaming connection with the CRI runtime, measured in seconds.',
      buckets: [...DefBuckets],
      registers: [registry],
    }),
    evented: new Gauge({
      name: 'splitlet_pleg_evented',
      help: "1 while the runtime's container events drive the PLEG (relisting every evented period), 0 while it relists every period.",
      registers: [registry],
    }),
    eventResyncs: new Counter({
      name: 'splitlet_pleg_event_stream_resyncs_total',
      help: 'Full relists asked for because runtime events may have been missed (new_stream, gap, down, timeout).',
      labelNames: ['reason'],
      registers: [registry],
    }),
    staleReports: new Counter({
      name: 'splitlet_pleg_stale_reports_total',
      help: 'Runtime event reports dropped because a relist applied before them was newer.',
      registers: [registry],
    }),
  };
}
