import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { PodStatusRecord, PodStatusUpdate } from '@splitlet/api';
import { hasErrorCode } from '@splitlet/api';
import { aPod, aRunningStatus } from '@splitlet/kube/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import type { StatusStore } from '../src/ports.js';
import { createStatusMetrics } from '../src/status/metrics.js';
import { REMOVED_MEMORY_MS, StatusManager } from '../src/status/status-manager.js';

class MemoryStore implements StatusStore {
  readonly records = new Map<string, PodStatusRecord>();
  fail = false;
  /** Each put waits for the test to release it, when set. */
  gate: Promise<void> | undefined;
  readonly order: string[] = [];
  async load(): Promise<PodStatusRecord[]> {
    return [...this.records.values()];
  }
  async put(r: PodStatusRecord): Promise<void> {
    if (this.gate) await this.gate;
    if (this.fail) throw new Error('kv timeout');
    this.order.push(`${r.uid}@${r.version}:${r.status.podIP ?? ''}`);
    this.records.set(r.uid, r);
  }
  async delete(uid: string): Promise<void> {
    this.records.delete(uid);
  }
}

function setup() {
  const store = new MemoryStore();
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const registry = new Registry();
  const manager = new StatusManager({ store, clock, logger: createLogger({ service: 't', stream: { write: () => true } }), metrics: createStatusMetrics(registry) });
  return { store, clock, registry, manager };
}

function update(uid: string, podIP: string, at = '2024-01-01T00:00:00.000Z'): PodStatusUpdate {
  const pod = aPod({ metadata: { uid, name: `p-${uid}` } });
  return {
    type: 'kubelet.status.PodStatusUpdate.v1',
    kind: 'set',
    uid,
    name: pod.metadata.name,
    namespace: 'default',
    pod,
    status: { phase: 'Running', podIP, containerStatuses: [aRunningStatus('foo1')] },
    couldHaveRunningContainers: true,
    at,
  };
}

describe('StatusManager', () => {
  it('applies the updates of one pod in call order, even when writes are slow', async () => {
    const t = setup();
    let release!: () => void;
    t.store.gate = new Promise<void>((r) => (release = r));
    const a = t.manager.handle(update('a', '1'));
    const b = t.manager.handle(update('a', '2'));
    const c = t.manager.handle(update('b', '9'));
    release();
    assert.deepEqual(await Promise.all([a, b, c]), ['written', 'written', 'written']);
    assert.deepEqual(
      t.store.order.filter((o) => o.startsWith('a@')),
      ['a@1:1', 'a@2:2'],
    );
    assert.equal(t.manager.get('a')?.version, 2);
  });

  it('loads the cache from the store (versions continue, an equal status is skipped)', async () => {
    const t = setup();
    await t.manager.handle(update('a', '1'));
    const again = new StatusManager({
      store: t.store,
      clock: t.clock,
      logger: createLogger({ service: 't', stream: { write: () => true } }),
      metrics: createStatusMetrics(new Registry()),
    });
    await again.load();
    assert.equal(await again.handle(update('a', '1')), 'unchanged');
    assert.equal(await again.handle(update('a', '3')), 'written');
    assert.equal(t.store.records.get('a')?.version, 2);
  });

  it('a store failure is retryable and leaves the cache unchanged; the retry applies', async () => {
    const t = setup();
    t.store.fail = true;
    await assert.rejects(t.manager.handle(update('a', '1')), (e: unknown) => hasErrorCode(e, 'StatusWriteFailed') && (e as { retryable: boolean }).retryable);
    assert.equal(t.manager.get('a'), undefined);
    t.store.fail = false;
    assert.equal(await t.manager.handle(update('a', '1')), 'written');
    // A later update of the same pod is not blocked by the earlier failure.
    assert.equal(await t.manager.handle(update('a', '2')), 'written');
  });

  it("an update older than the pod's last applied one (same epoch and earlier, or an earlier epoch) is stale; a newer epoch wins whatever its time", async () => {
    const t = setup();
    const at = (ms: number): string => new Date(Date.UTC(2024, 0, 1) + ms).toISOString();
    assert.equal(await t.manager.handle({ ...update('a', '1', at(0)), epoch: 7 }), 'written');
    assert.equal(await t.manager.handle({ ...update('a', '2', at(2000)), epoch: 7 }), 'written');
    // The first failed its write, was nak'ed, and comes again after the newer one was applied.
    assert.equal(await t.manager.handle({ ...update('a', '3', at(1000)), epoch: 7 }), 'stale');
    assert.equal(await t.manager.handle({ ...update('a', '3', at(9000)), epoch: 6 }), 'stale', "a former owner's update");
    assert.equal(t.manager.get('a')?.status.podIP, '2');
    // Another owner (a takeover) with a clock behind: its epoch is newer.
    assert.equal(await t.manager.handle({ ...update('a', '4', at(500)), epoch: 8 }), 'written');
    // Updates without an epoch (sync-loop's) are not ordered.
    assert.equal(await t.manager.handle(update('a', '5', at(0))), 'written');
    assert.equal(t.manager.get('a')?.status.podIP, '5');
  });

  it('a malformed update is not retryable', async () => {
    const t = setup();
    const u = update('a', '1');
    delete u.status;
    await assert.rejects(t.manager.handle(u), (e: unknown) => hasErrorCode(e, 'InvalidStatusUpdate') && (e as { retryable: boolean }).retryable === false);
  });

  it('removed deletes the record', async () => {
    const t = setup();
    await t.manager.handle(update('a', '1'));
    assert.equal(await t.manager.handle({ ...update('a', '1'), kind: 'removed' }), 'deleted');
    assert.equal(t.store.records.has('a'), false);
    assert.equal(t.manager.get('a'), undefined);
  });

  it('knows a pod removed from its source from its latest update (podRemoved), before the change is announced', async () => {
    const seen: Array<[string, boolean]> = [];
    const t = setup();
    const manager = new StatusManager({
      store: t.store,
      clock: t.clock,
      logger: createLogger({ service: 't', stream: { write: () => true } }),
      metrics: createStatusMetrics(new Registry()),
      onChange: (uid) => seen.push([uid, manager.podRemoved(uid)]),
    });
    await manager.handle(update('a', '1'));
    assert.equal(manager.podRemoved('a'), false);
    await manager.handle({ ...update('a', '2'), podRemoved: true });
    assert.equal(manager.podRemoved('a'), true);
    // An unchanged status still tells it; a later update without it (desired again) clears it.
    await manager.handle({ ...update('a', '1'), podRemoved: false });
    assert.equal(manager.podRemoved('a'), false);
    await manager.handle({ ...update('a', '2'), podRemoved: true });
    await manager.handle({ ...update('a', '2'), kind: 'removed' });
    assert.equal(manager.podRemoved('a'), false);
    assert.deepEqual(seen, [
      ['a', false],
      ['a', true],
      ['a', false],
      ['a', true],
      ['a', false],
    ]);
  });

  it('a set arriving after removed is stale: it does not bring the record back (found by the chaos suite)', async () => {
    const t = setup();
    await t.manager.handle(update('a', '1'));
    assert.equal(await t.manager.handle({ ...update('a', '1'), kind: 'removed' }), 'deleted');
    assert.equal(await t.manager.handle(update('a', '2')), 'unknown-pod');
    assert.equal(await t.manager.handle({ ...update('a', '2'), kind: 'terminated' }), 'unknown-pod');
    assert.equal(t.store.records.has('a'), false);
    assert.equal(t.manager.get('a'), undefined);
    // Another pod is not affected; the memory ends after REMOVED_MEMORY_MS.
    assert.equal(await t.manager.handle(update('b', '1')), 'written');
    t.clock.advance(REMOVED_MEMORY_MS + 1);
    await t.manager.handle({ ...update('c', '1'), kind: 'removed' });
    assert.equal(await t.manager.handle(update('a', '3')), 'written');
  });

  it('observes kubelet_pod_status_sync_duration_seconds from `at` to the write', async () => {
    const t = setup();
    t.clock.advance(1500);
    await t.manager.handle(update('a', '1', '2024-01-01T00:00:00.000Z'));
    const m = await t.registry.getSingleMetric('kubelet_pod_status_sync_duration_seconds')?.get();
    // A histogram's samples carry `metricName` (the _bucket/_sum/_count series), which MetricValue does not declare.
    const values: readonly { value: number; labels: Partial<Record<string, string | number>>; metricName?: string }[] | undefined = m?.values;
    const sum = values?.find((v) => v.metricName === 'kubelet_pod_status_sync_duration_seconds_sum');
    assert.equal(sum?.value, 1.5);
    const buckets = values?.filter((v) => v.metricName?.endsWith('_bucket')).map((v) => v.labels['le']);
    assert.deepEqual(buckets, [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30, 45, 60, '+Inf']);
  });
});
