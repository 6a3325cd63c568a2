/**
 * The pod-worker's Prometheus metrics, with the kubelet's names, labels and buckets
 * (KUBELET.md §9), plus splitlet's own partition gauges.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { DefBuckets, podStartupDurationBuckets } from '@splitlet/telemetry';
import type { SyncMetrics } from '../ports.js';

/** Registers the histograms on `registry` and returns the SyncMetrics port over them. */
export function createPromSyncMetrics(registry: Registry): SyncMetrics {
  const workerDuration = new Histogram({
    name: 'kubelet_pod_worker_duration_seconds',
    help: 'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
    labelNames: ['operation_type'],
    buckets: [...DefBuckets],
    registers: [registry],
  });
  const workerStart = new Histogram({
    name: 'kubelet_pod_worker_start_duration_seconds',
    help: 'Duration in seconds from kubelet seeing a pod to starting a worker.',
    buckets: [...DefBuckets],
    registers: [registry],
  });
  const podStart = new Histogram({
    name: 'kubelet_pod_start_duration_seconds',
    help: 'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
    buckets: [...podStartupDurationBuckets],
    registers: [registry],
  });
  const podStartSli = new Histogram({
    name: 'kubelet_pod_start_sli_duration_seconds',
    help: 'Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
    buckets: [...podStartupDurationBuckets],
    registers: [registry],
  });
  const podStartTotal = new Histogram({
    name: 'kubelet_pod_start_total_duration_seconds',
    help: 'Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
    buckets: [...podStartupDurationBuckets],
    registers: [registry],
  });
  const settledSyncs = new Counter({
    name: 'splitlet_pod_worker_settled_syncs_total',
    help: 'Syncs of settled pods: no volume mount and no runtime SyncPod; status_sent says whether the status was sent (status-manager did not hold it yet).',
    labelNames: ['status_sent'],
    registers: [registry],
  });
  return {
    observeWorkerDuration: (op, s) => workerDuration.observe({ operation_type: op }, s),
    observeSettledSync: (statusSent) => settledSyncs.inc({ status_sent: String(statusSent) }),
    observeWorkerStart: (s) => workerStart.observe(s),
    observePodStart: (s) => podStart.observe(s),
    observePodStartSli: (sli, total) => {
      podStartSli.observe(sli);
      podStartTotal.observe(total);
    },
  };
}

/** `splitlet_pod_worker_partitions_owned` and `splitlet_pod_worker_syncs_in_flight`, read on scrape. */
export function registerPartitionGauges(registry: Registry, read: { owned: () => number; inFlight: () => number }): void {
  new Gauge({
    name: 'splitlet_pod_worker_partitions_owned',
    help: 'Partitions whose lease this pod-worker instance holds.',
    registers: [registry],
    collect() {
      this.set(read.owned());
    },
  });
  new Gauge({
    name: 'splitlet_pod_worker_syncs_in_flight',
    help: 'Pod syncs running in this instance.',
    registers: [registry],
    collect() {
      this.set(read.inFlight());
    },
  });
}
