/**
 * config-source's metrics. The kubelet has none for its sources, so these are `splitlet_` metrics.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ConfigMetrics } from '../ports.js';

/** Registers the metrics on `registry`. */
export function promConfigMetrics(registry: Registry): ConfigMetrics {
  const errors = new Counter({
    name: 'splitlet_config_manifest_errors_total',
    help: 'Manifests (files or URL bodies) that could not be turned into pods, counted once per look',
    labelNames: ['source'],
    registers: [registry],
  });
  const pods = new Gauge({
    name: 'splitlet_config_pods',
    help: 'Pods a source currently contributes to the merged configuration',
    labelNames: ['source'],
    registers: [registry],
  });
  return {
    manifestError: (source) => errors.inc({ source }),
    setPods: (source, count) => pods.set({ source }, count),
  };
}
