/**
 * The kubelet's volume metrics on a prom-client registry.
 *
 * Models pkg/volume/util/metrics.go (`storage_operation_duration_seconds`) and
 * pkg/kubelet/volumemanager/metrics (`volume_manager_total_volumes`). The kubelet exports these
 * without the `kubelet_` prefix, so the names here are the upstream ones.
 */
import { Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { VolumeMetrics } from '../ports.js';

/** Upstream buckets of storage_operation_duration_seconds. */
export const storageOperationBuckets: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600];

/** Registers the volume metrics on `registry`. */
export function promVolumeMetrics(registry: Registry): VolumeMetrics {
  const duration = new Histogram({
    name: 'storage_operation_duration_seconds',
    help: 'Storage operation duration',
    labelNames: ['volume_plugin', 'operation_name', 'status', 'migrated'],
    buckets: [...storageOperationBuckets],
    registers: [registry],
  });
  const totals = new Gauge({
    name: 'volume_manager_total_volumes',
    help: 'Number of volumes in Volume Manager',
    labelNames: ['plugin_name', 'state'],
    registers: [registry],
  });
  return {
    observeOperation: (operation, plugin, ok, seconds) =>
      duration.observe({ volume_plugin: plugin, operation_name: operation, status: ok ? 'success' : 'fail-unknown', migrated: 'false' }, seconds),
    setTotals: (byPlugin) => {
      totals.reset();
      for (const [plugin, n] of byPlugin) {
        totals.set({ plugin_name: plugin, state: 'actual_state_of_world' }, n);
        totals.set({ plugin_name: plugin, state: 'desired_state_of_world' }, n);
      }
    },
  };
}
