import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import perfHooks from 'node:perf_hooks';
import { Histogram, register as globalRegistry } from 'prom-client';
import {
  DefBuckets,
  EVENT_LOOP_MONITORING_PRECISION_MS,
  containersPerPodBuckets,
  createBusMetrics,
  createMetricsRegistry,
  exponentialBuckets,
  podStartupDurationBuckets,
  podStatusSyncBuckets,
  runtimeOperationsBuckets,
} from '../src/index.js';

describe('buckets', () => {
  it('match the kubelet (KUBELET.md §9)', () => {
    assert.deepEqual(DefBuckets, [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
    assert.deepEqual(podStartupDurationBuckets, [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600]);
    assert.deepEqual(podStatusSyncBuckets, [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30, 45, 60]);
    assert.deepEqual(containersPerPodBuckets, [1, 2, 4, 8, 16]);
    assert.equal(runtimeOperationsBuckets.length, 14);
    assert.equal(runtimeOperationsBuckets[0], 0.005);
    assert.equal(runtimeOperationsBuckets[1], 0.0125);
    // Go's ExponentialBuckets multiplies repeatedly; the last bound is 0.005 * 2.5^13 up to float error.
    assert.ok(Math.abs((runtimeOperationsBuckets[13] ?? 0) - 0.005 * 2.5 ** 13) < 1e-9);
    assert.ok(Object.isFrozen(DefBuckets));
  });

  it('exponentialBuckets rejects what Go panics on', () => {
    assert.deepEqual(exponentialBuckets(1, 3, 3), [1, 3, 9]);
    assert.throws(() => exponentialBuckets(1, 2, 0), RangeError);
    assert.throws(() => exponentialBuckets(0, 2, 3), RangeError);
    assert.throws(() => exponentialBuckets(1, 1, 3), RangeError);
  });
});

describe('createMetricsRegistry', () => {
  it('labels every metric with the service and leaves the global registry alone', async () => {
    const registry = createMetricsRegistry({ service: 'pleg' });
    const h = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration in seconds for relisting pods in PLEG.',
      buckets: [...DefBuckets],
      registers: [registry],
    });
    h.observe(0.02);
    const text = await registry.metrics();
    assert.match(text, /kubelet_pleg_relist_duration_seconds_bucket\{le="0.025",service="pleg"\} 1/);
    assert.match(text, /process_cpu_user_seconds_total\{service="pleg"\}/);
    assert.doesNotMatch(await globalRegistry.metrics(), /kubelet_pleg/);
  });

  it('samples the event loop delay every EVENT_LOOP_MONITORING_PRECISION_MS, not every 10 ms (each sample wakes the process)', () => {
    const original = perfHooks.monitorEventLoopDelay;
    const resolutions: Array<number | undefined> = [];
    perfHooks.monitorEventLoopDelay = (o) => {
      resolutions.push(o?.resolution);
      return original(o);
    };
    try {
      createMetricsRegistry({ service: 'idle' });
    } finally {
      perfHooks.monitorEventLoopDelay = original;
    }
    assert.deepEqual(resolutions, [EVENT_LOOP_MONITORING_PRECISION_MS]);
    assert.equal(EVENT_LOOP_MONITORING_PRECISION_MS, 1000);
  });

  it('can skip the default metrics', async () => {
    const registry = createMetricsRegistry({ service: 'x', defaultMetrics: false });
    assert.equal((await registry.metrics()).trim(), '');
  });
});

describe('createBusMetrics', () => {
  it('counts deliveries, redeliveries and dead letters, tracks pending, times requests', async () => {
    const registry = createMetricsRegistry({ service: 'test', defaultMetrics: false });
    const m = createBusMetrics(registry);
    m.delivered('SL_WORK', 'pw-00', 1, 5);
    m.delivered('SL_WORK', 'pw-00', 2, 3);
    m.deadLettered('sl.{node}.work.{partition}.{uid}');
    m.requestFinished('sl.{node}.rpc.runtime.syncPod', 'ok', 0.002);
    m.requestFinished('sl.{node}.rpc.runtime.syncPod', 'Timeout', 30);
    const value = async (name: string, labels: Record<string, string>): Promise<number | undefined> => {
      const got = await registry.getSingleMetric(name.replace(/_(count|bucket)$/, ''))?.get();
      return got?.values.find((v) => ((v as { metricName?: string }).metricName ?? got.name) === name && Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x))
        ?.value;
    };
    const work = { stream: 'SL_WORK', consumer: 'pw-00' };
    assert.equal(await value('splitlet_bus_consumer_delivered_total', work), 2);
    assert.equal(await value('splitlet_bus_consumer_redeliveries_total', work), 1);
    assert.equal(await value('splitlet_bus_consumer_pending_messages', work), 3);
    assert.equal(await value('splitlet_bus_dead_letters_total', { subject: 'sl.{node}.work.{partition}.{uid}' }), 1);
    const sync = 'sl.{node}.rpc.runtime.syncPod';
    assert.equal(await value('splitlet_bus_request_duration_seconds_count', { subject: sync, outcome: 'Timeout' }), 1);
    assert.equal(await value('splitlet_bus_request_duration_seconds_bucket', { subject: sync, outcome: 'ok', le: '0.0025' }), 1);
    assert.equal(await value('splitlet_bus_request_duration_seconds_bucket', { subject: sync, outcome: 'ok', le: '0.001' }), 0);
  });
});
