import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * `count` upper bounds, the first `start`, each `factor` times the previous; computed by repeated
 * multiplication exactly as Prometheus' Go client (`prometheus.ExponentialBuckets`), so bucket
 * labels match the kubelet's to the last digit.
 *
 * @throws RangeError when `count < 1`, `start <= 0` or `factor <= 1` (where Go panics).
 */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`exponentialBuckets needs a positive integer count, got ${count}`);
  if (!(start > 0)) throw new RangeError(`exponentialBuckets needs a positive start, got ${start}`);
  if (!(factor > 1)) throw new RangeError(`exponentialBuckets needs a factor greater than 1, got ${factor}`);
  const buckets: number[] = [];
  let next = start;
  for (let i = 0; i < count; i++) {
    buckets.push(next);
    next *= factor;
  }
  return buckets;
}

/** Prometheus' default histogram buckets (`prometheus.DefBuckets`), in seconds. */
export const DefBuckets: readonly number[] = Object.freeze([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/** `kubelet_pod_start_duration_seconds` and friends (pkg/kubelet/metrics), in seconds. */
export const podStartupDurationBuckets: readonly number[] = Object.freeze([
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
]);

/** `kubelet_pod_status_sync_duration_seconds` (pkg/kubelet/metrics), in seconds. */
export const podStatusSyncBuckets: readonly number[] = Object.freeze([0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30, 45, 60]);

/** `kubelet_runtime_operations_duration_seconds`: `exponentialBuckets(.005, 2.5, 14)`, in seconds. */
export const runtimeOperationsBuckets: readonly number[] = Object.freeze(exponentialBuckets(0.005, 2.5, 14));

/** `kubelet_containers_per_pod_count`: `exponentialBuckets(1, 2, 5)`. */
export const containersPerPodBuckets: readonly number[] = Object.freeze(exponentialBuckets(1, 2, 5));

/** Options of {@link createMetricsRegistry}. */
export interface MetricsRegistryOptions {
  /** Added as the constant label `service` to every metric of the registry. */
  readonly service: string;
  /** Collect prom-client's default process and Node.js metrics. @default true */
  readonly defaultMetrics?: boolean;
}

/**
 * How often the event loop's delay is sampled for `nodejs_eventloop_lag_*` (prom-client's
 * `eventLoopMonitoringPrecision`, its default 10 ms). Each sample wakes the process: at 10 ms an
 * idle process spent ~0.7 % of a core on it alone (measured here: 0.81 % against 0.10 % without
 * the metric, 0.19 % at 100 ms), ~7 % for the node's ten processes; at 100 ms still ~0.07 % a
 * process (an idle node 0.6 % above 1 s). At 1 s a block of the loop of 1 s or more is always seen
 * and a shorter one in proportion to its length: over a scrape interval a loop that keeps blocking
 * still shows in the histogram.
 */
export const EVENT_LOOP_MONITORING_PRECISION_MS = 1000;

/**
 * Creates a process's own Prometheus registry (never prom-client's global one), with the label
 * `service` on every metric and, by default, the process/Node.js metrics (`process_cpu_seconds_total`,
 * `nodejs_eventloop_lag_seconds`, …, the loop sampled every {@link EVENT_LOOP_MONITORING_PRECISION_MS}).
 * Components register their histograms on it with the bucket constants of this module; `runService`
 * serves it at `/metrics`.
 */
export function createMetricsRegistry(options: MetricsRegistryOptions): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_MONITORING_PRECISION_MS });
  return registry;
}

/** `splitlet_bus_request_duration_seconds`: 0.5 ms (a loopback request) to 60 s (a runtime sync with a pull). */
export const busRequestBuckets: readonly number[] = Object.freeze([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);

/**
 * The bus's measurements (structurally the `BusMetrics` port of `@splitlet/bus`, which does not
 * depend on prom-client).
 */
export interface BusMetricsRecorder {
  delivered(stream: string, consumer: string, deliveryCount: number, pending: number): void;
  deadLettered(subjectTemplate: string): void;
  requestFinished(subjectTemplate: string, outcome: string, seconds: number): void;
}

/**
 * Registers the bus metrics on `registry` and returns the recorder to pass as
 * `connectBus({metrics})`. Call once per registry.
 *
 * - `splitlet_bus_consumer_pending_messages{stream,consumer}` (gauge): messages the server still
 *   held for the durable consumer at its last delivery (consumer lag);
 * - `splitlet_bus_consumer_delivered_total{stream,consumer}` and
 *   `splitlet_bus_consumer_redeliveries_total{stream,consumer}` (counters; a redelivery is a delivery
 *   with a delivery count above 1: nak'ed, or not acked within ack-wait);
 * - `splitlet_bus_dead_letters_total{subject}` (counter, subject template);
 * - `splitlet_bus_request_duration_seconds{subject,outcome}` (histogram, {@link busRequestBuckets};
 *   outcome `ok` or the BusError code).
 */
export function createBusMetrics(registry: Registry): BusMetricsRecorder {
  const pending = new Gauge({
    name: 'splitlet_bus_consumer_pending_messages',
    help: 'Messages the server still held for a durable consumer at its last delivery.',
    labelNames: ['stream', 'consumer'],
    registers: [registry],
  });
  const delivered = new Counter({
    name: 'splitlet_bus_consumer_delivered_total',
    help: 'Messages delivered to a durable consumer, redeliveries included.',
    labelNames: ['stream', 'consumer'],
    registers: [registry],
  });
  const redelivered = new Counter({
    name: 'splitlet_bus_consumer_redeliveries_total',
    help: 'Deliveries of a message that had been delivered before (nak or ack-wait expiry).',
    labelNames: ['stream', 'consumer'],
    registers: [registry],
  });
  const deadLetters = new Counter({
    name: 'splitlet_bus_dead_letters_total',
    help: 'Messages this process copied to its dead-letter subject, by subject template.',
    labelNames: ['subject'],
    registers: [registry],
  });
  const requests = new Histogram({
    name: 'splitlet_bus_request_duration_seconds',
    help: 'Latency of bus requests (request/reply), by subject template and outcome.',
    labelNames: ['subject', 'outcome'],
    buckets: [...busRequestBuckets],
    registers: [registry],
  });
  return {
    delivered(stream, consumer, deliveryCount, pendingNow) {
      const labels = { stream, consumer };
      delivered.inc(labels);
      if (deliveryCount > 1) redelivered.inc(labels);
      pending.set(labels, pendingNow);
    },
    deadLettered(subject) {
      deadLetters.inc({ subject });
    },
    requestFinished(subject, outcome, seconds) {
      requests.observe({ subject, outcome }, seconds);
    },
  };
}
