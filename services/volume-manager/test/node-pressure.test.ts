import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeCapacity } from '@splitlet/api';
import { DEFAULT_EVICTION_HARD } from '@splitlet/service';
import { FakeClock } from '@splitlet/service/testing';
import { NodeCapacityPublisher } from '../src/node/node-capacity-publisher.js';
import { PressureTracker, thresholdsMet, type PressureObservation } from '../src/node/node-pressure.js';
import { observeHostPressure } from '../src/adapters/host-pressure-probe.js';
import { memoryLogger } from './fakes.js';

const Mi = 1024 ** 2;
const healthy: PressureObservation = {
  memoryAvailableBytes: 2048 * Mi,
  memoryCapacityBytes: 8192 * Mi,
  nodefsAvailableBytes: 50_000 * Mi,
  nodefsCapacityBytes: 100_000 * Mi,
  nodefsInodesFree: 900_000,
  nodefsInodes: 1_000_000,
  pidAvailable: 30_000,
  pidMax: 32_768,
};

describe('node pressure (evictionHard)', () => {
  it('the kubelet defaults: memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%; no PID threshold', () => {
    assert.deepEqual(thresholdsMet(DEFAULT_EVICTION_HARD, healthy), { memory: false, disk: false, pid: false });
    assert.deepEqual(thresholdsMet(DEFAULT_EVICTION_HARD, { ...healthy, memoryAvailableBytes: 99 * Mi }), { memory: true, disk: false, pid: false });
    assert.deepEqual(
      thresholdsMet(DEFAULT_EVICTION_HARD, { ...healthy, memoryAvailableBytes: 100 * Mi }),
      { memory: false, disk: false, pid: false },
      'at the threshold is not below it',
    );
    assert.deepEqual(thresholdsMet(DEFAULT_EVICTION_HARD, { ...healthy, nodefsAvailableBytes: 9_999 * Mi }), { memory: false, disk: true, pid: false });
    assert.deepEqual(thresholdsMet(DEFAULT_EVICTION_HARD, { ...healthy, nodefsInodesFree: 49_999 }), { memory: false, disk: true, pid: false });
    assert.deepEqual(thresholdsMet(DEFAULT_EVICTION_HARD, { ...healthy, pidAvailable: 0 }), { memory: false, disk: false, pid: false });
  });

  it('configured thresholds: quantities and percentages of the signal capacity', () => {
    const t = { 'memory.available': '25%', 'pid.available': '1000', 'nodefs.available': '60000Mi' };
    assert.deepEqual(thresholdsMet(t, healthy), { memory: false, disk: true, pid: false });
    assert.deepEqual(thresholdsMet(t, { ...healthy, memoryAvailableBytes: 2047 * Mi, pidAvailable: 999, nodefsAvailableBytes: 60_000 * Mi }), {
      memory: true,
      disk: false,
      pid: true,
    });
  });

  it('a condition holds for the transition period after the threshold was last crossed', () => {
    const tracker = new PressureTracker(300_000);
    const met = { memory: true, disk: false, pid: false };
    const none = { memory: false, disk: false, pid: false };
    assert.deepEqual(tracker.observe(met, 0), met);
    assert.deepEqual(tracker.observe(none, 10_000), met, 'still within 5 min of the last crossing');
    assert.deepEqual(tracker.observe(met, 200_000), met);
    assert.deepEqual(tracker.observe(none, 499_999), met);
    assert.deepEqual(tracker.observe(none, 500_000), none);
    const immediate = new PressureTracker(0);
    assert.deepEqual(immediate.observe(met, 0), met);
    assert.deepEqual(immediate.observe(none, 1), none);
  });

  it('the publisher records the pressure, rewrites on a change and at least every heartbeat', async () => {
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
    let observed: PressureObservation = healthy;
    const written: NodeCapacity[] = [];
    const publisher = new NodeCapacityPublisher({
      node: 'node-a',
      rootDir: '/var/lib/kubelet',
      maxPods: 110,
      overrides: {},
      probe: { cpuCount: () => 2, memoryBytes: () => 8192 * Mi, filesystemBytes: () => Promise.resolve(100_000 * Mi) },
      pressure: { observe: () => Promise.resolve(observed), thresholds: DEFAULT_EVICTION_HARD, transitionMs: 30_000 },
      heartbeatMs: 20_000,
      store: { put: (c) => Promise.resolve(void written.push(c)) },
      clock,
      logger: memoryLogger().logger,
    });
    await publisher.publish();
    assert.deepEqual(written.at(-1)?.pressure, { memory: false, disk: false, pid: false });
    clock.advance(10_000);
    await publisher.publish();
    assert.equal(written.length, 1, 'unchanged within the heartbeat');
    observed = { ...healthy, memoryAvailableBytes: 50 * Mi };
    clock.advance(1000);
    await publisher.publish();
    assert.equal(written.length, 2);
    assert.deepEqual(written.at(-1)?.pressure, { memory: true, disk: false, pid: false });
    observed = healthy;
    clock.advance(20_000);
    await publisher.publish();
    assert.equal(written.length, 3, 'heartbeat: rewritten after 20 s');
    assert.deepEqual(written.at(-1)?.pressure, { memory: true, disk: false, pid: false }, 'held for the transition period');
    assert.equal(written.at(-1)?.observedAt, '2026-01-01T00:00:31.000Z');
    clock.advance(10_000);
    await publisher.publish();
    assert.deepEqual(written.at(-1)?.pressure, { memory: false, disk: false, pid: false }, 'released 30 s after the last crossing');
  });

  it('measures this host: memory, the root filesystem and PIDs within their capacities', async () => {
    const o = await observeHostPressure('/tmp/splitlet-does-not-exist/root');
    assert.ok(o.memoryAvailableBytes > 0 && o.memoryAvailableBytes <= o.memoryCapacityBytes, JSON.stringify(o));
    assert.ok(o.nodefsAvailableBytes > 0 && o.nodefsAvailableBytes <= o.nodefsCapacityBytes, JSON.stringify(o));
    assert.ok(o.nodefsInodesFree <= o.nodefsInodes, JSON.stringify(o));
    assert.ok(o.pidAvailable > 0 && o.pidAvailable < o.pidMax, JSON.stringify(o));
  });
});
