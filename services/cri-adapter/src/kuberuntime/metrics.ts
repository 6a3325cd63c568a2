/**
 * The kubelet metrics kuberuntime measures: runtime operations (through the CRI instrument hook),
 * started pods and containers, containers per pod, image pull durations.
 *
 * Models pkg/kubelet/metrics/metrics.go (names, labels, buckets) and
 * pkg/kubelet/kuberuntime/instrumented_services.go (recordOperation, recordError).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { CriCallRecord } from '@splitlet/cri';
import type { EventedPlegConnectionMetrics } from '../evented/runtime-event-watcher.js';
import { containersPerPodBuckets, runtimeOperationsBuckets } from '@splitlet/telemetry';

/** The `container_type` label values. */
export type ContainerType = 'container' | 'init_container' | 'ephemeral_container';

/** What kuberuntime reports. Every method is cheap and never throws. */
export interface KubeRuntimeMetrics {
  /** kubelet_runtime_operations_total / _errors_total / _duration_seconds{operation_type}. */
  runtimeCall(record: CriCallRecord): void;
  /** kubelet_started_pods_total. */
  startedPod(): void;
  /** kubelet_started_pods_errors_total. */
  startedPodError(): void;
  /** kubelet_started_containers_total{container_type}. */
  startedContainer(type: ContainerType): void;
  /** kubelet_started_containers_errors_total{container_type,code}. */
  startedContainerError(type: ContainerType, code: string): void;
  /** kubelet_containers_per_pod_count. */
  containersPerPod(count: number): void;
  /** kubelet_image_pull_duration_seconds{image_size_in_bytes}. */
  imagePull(sizeBytes: number, seconds: number): void;
}

/** Buckets of kubelet_image_pull_duration_seconds (metrics.go imagePullDurationBuckets). */
export const imagePullDurationBuckets: readonly number[] = Object.freeze([1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600]);

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const IMAGE_SIZE_BUCKETS: ReadonlyArray<readonly [number, string]> = [
  [0, '0-10MB'],
  [10 * MiB, '10MB-100MB'],
  [100 * MiB, '100MB-500MB'],
  [500 * MiB, '500MB-1GB'],
  [1 * GiB, '1GB-5GB'],
  [5 * GiB, '5GB-10GB'],
  [10 * GiB, '10GB-20GB'],
  [20 * GiB, '20GB-30GB'],
  [30 * GiB, '30GB-40GB'],
  [40 * GiB, '40GB-60GB'],
  [60 * GiB, '60GB-100GB'],
  [100 * GiB, 'GT100GB'],
];

/**
 * The `image_size_in_bytes` label: `N/A` for an unknown (0) size, else the size range.
 *
 * Models metrics.GetImageSizeBucket.
 */
export function imageSizeBucket(sizeBytes: number): string {
  if (sizeBytes === 0) return 'N/A';
  for (let i = IMAGE_SIZE_BUCKETS.length - 1; i >= 0; i--) {
    const b = IMAGE_SIZE_BUCKETS[i];
    if (b !== undefined && sizeBytes > b[0]) return b[1];
  }
  return '';
}

/** Metrics that record nothing (tests). */
export const noopKubeRuntimeMetrics: KubeRuntimeMetrics = Object.freeze({
  runtimeCall: () => undefined,
  startedPod: () => undefined,
  startedPodError: () => undefined,
  startedContainer: () => undefined,
  startedContainerError: () => undefined,
  containersPerPod: () => undefined,
  imagePull: () => undefined,
});

/** Registers the metrics on `registry` (the process's own) and returns the recorder. */
export function createKubeRuntimeMetrics(registry: Registry): KubeRuntimeMetrics {
  const ops = new Counter({
    name: 'kubelet_runtime_operations_total',
    help: 'Cumulative number of runtime operations by operation type.',
    labelNames: ['operation_type'],
    registers: [registry],
  });
  const opErrors = new Counter({
    name: 'kubelet_runtime_operations_errors_total',
    help: 'Cumulative number of runtime operation errors by operation type.',
    labelNames: ['operation_type'],
    registers: [registry],
  });
  const opDuration = new Histogram({
    name: 'kubelet_runtime_operations_duration_seconds',
    help: 'Duration in seconds of runtime operations. Broken down by operation type.',
    labelNames: ['operation_type'],
    buckets: [...runtimeOperationsBuckets],
    registers: [registry],
  });
  const startedPods = new Counter({ name: 'kubelet_started_pods_total', help: 'Cumulative number of pods started', registers: [registry] });
  const startedPodsErrors = new Counter({
    name: 'kubelet_started_pods_errors_total',
    help: 'Cumulative number of errors when starting pods',
    registers: [registry],
  });
  const startedContainers = new Counter({
    name: 'kubelet_started_containers_total',
    help: 'Cumulative number of containers started',
    labelNames: ['container_type'],
    registers: [registry],
  });
  const startedContainersErrors = new Counter({
    name: 'kubelet_started_containers_errors_total',
    help: 'Cumulative number of errors when starting containers',
    labelNames: ['container_type', 'code'],
    registers: [registry],
  });
  const perPod = new Histogram({
    name: 'kubelet_containers_per_pod_count',
    help: 'The number of containers per pod.',
    buckets: [...containersPerPodBuckets],
    registers: [registry],
  });
  const pulls = new Histogram({
    name: 'kubelet_image_pull_duration_seconds',
    help: 'Duration in seconds to pull an image.',
    labelNames: ['image_size_in_bytes'],
    buckets: [...imagePullDurationBuckets],
    registers: [registry],
  });
  return {
    runtimeCall: (r) => {
      ops.inc({ operation_type: r.operation });
      opDuration.observe({ operation_type: r.operation }, r.durationMs / 1000);
      if (r.error !== undefined) opErrors.inc({ operation_type: r.operation });
    },
    startedPod: () => startedPods.inc(),
    startedPodError: () => startedPodsErrors.inc(),
    startedContainer: (type) => startedContainers.inc({ container_type: type }),
    startedContainerError: (type, code) => startedContainersErrors.inc({ container_type: type, code }),
    containersPerPod: (n) => perPod.observe(n),
    imagePull: (size, seconds) => pulls.observe({ image_size_in_bytes: imageSizeBucket(size) }, seconds),
  };
}

/** Connection metrics that record nothing (tests). */
export const noopEventedPlegConnectionMetrics: EventedPlegConnectionMetrics = Object.freeze({ connected: () => undefined, failed: () => undefined });

/**
 * Registers the evented PLEG's connection counters on `registry`: the runtime's event stream is
 * cri-adapter's, so they are counted here (pleg has the latency histogram).
 *
 * Models metrics.go EventedPLEGConn, EventedPLEGConnErr.
 */
export function createEventedPlegConnectionMetrics(registry: Registry): EventedPlegConnectionMetrics {
  const success = new Counter({
    name: 'kubelet_evented_pleg_connection_success_count',
    help: 'The number of times a streaming client was obtained to receive CRI Events.',
    registers: [registry],
  });
  const errors = new Counter({
    name: 'kubelet_evented_pleg_connection_error_count',
    help: 'The number of errors encountered during the establishment of streaming connection with the CRI runtime.',
    registers: [registry],
  });
  return { connected: () => success.inc(), failed: () => errors.inc() };
}
