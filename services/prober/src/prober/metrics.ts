/**
 * The prober's metrics, with the kubelet's names and labels (served on the kubelet's
 * /metrics/probes; here on the process's /metrics).
 *
 * Models pkg/kubelet/prober/prober_manager.go (ProberResults, ProberDuration) and worker.go (which
 * result counts where; the series of a worker are deleted when it ends).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { DefBuckets } from '@splitlet/telemetry';

/** The labels of one worker's series. */
export interface WorkerLabels {
  readonly probe_type: string;
  readonly container: string;
  readonly pod: string;
  readonly namespace: string;
  readonly pod_uid: string;
}

/** The prober's instruments, per worker. */
export interface ProberMetrics {
  /** One run: prober_probe_total{result}; prober_probe_duration_seconds for success and unknown. */
  observe(labels: WorkerLabels, result: 'Success' | 'Failure' | 'Unknown', seconds: number): void;
  /** Deletes a worker's series (the worker ended). */
  forget(labels: WorkerLabels): void;
}

const RESULT_LABEL = { Success: 'successful', Failure: 'failed', Unknown: 'unknown' } as const;

/** Registers the prober metrics on `registry`. Call once per registry. */
export function createProberMetrics(registry: Registry): ProberMetrics {
  const total = new Counter({
    name: 'prober_probe_total',
    help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
    labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'prober_probe_duration_seconds',
    help: 'Duration in seconds for a probe response.',
    labelNames: ['probe_type', 'container', 'pod', 'namespace'],
    buckets: [...DefBuckets],
    registers: [registry],
  });
  const durationLabels = (l: WorkerLabels) => ({ probe_type: l.probe_type, container: l.container, pod: l.pod, namespace: l.namespace });
  return {
    observe(labels, result, seconds) {
      total.inc({ ...labels, result: RESULT_LABEL[result] });
      if (result !== 'Failure') duration.observe(durationLabels(labels), seconds);
    },
    forget(labels) {
      for (const result of Object.values(RESULT_LABEL)) total.remove({ ...labels, result });
      duration.remove(durationLabels(labels));
    },
  };
}
