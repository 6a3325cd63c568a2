/**
 * The pod-worker's KV adapters (lease, member and pod-state stores, the runtime-cache watch) over
 * the in-memory bus of `@splitlet/bus/testing`, which keeps NATS KV semantics (revisions, CAS,
 * delete markers, watch replay) and is held to them by the bus contract suite.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Buckets, Keys, MemberHeartbeat, type RuntimeCacheEntry, type WorkerRecord } from '@splitlet/api';
import { isBusError } from '@splitlet/bus';
import { InMemoryBus } from '@splitlet/bus/testing';
import { FakeClock } from '@splitlet/service/testing';
import { eventually } from '@splitlet/testkit';
import { KvLeaseStore, KvMemberStore, KvPodStateStore } from '../src/adapters/kv-stores.js';
import { RuntimeBucketValue, watchRuntimeCache } from '../src/adapters/runtime-cache-watch.js';
import { RuntimeStatusCache } from '../src/runtime-cache/runtime-status-cache.js';
import { silentLog } from './fakes.js';

const NODE = 'node-1.example';

function workerRecord(uid: string): WorkerRecord {
  return { type: 'kubelet.podworker.WorkerRecord.v1', uid, name: `pod-${uid}`, namespace: 'default', state: 'sync', finished: false, reasons: {} };
}

function cacheEntry(uid: string, timestamp: number): RuntimeCacheEntry {
  return { type: 'kubelet.pleg.RuntimeCacheEntry.v1', uid, timestamp, status: { uid, name: `pod-${uid}`, namespace: 'default', ips: [], sandboxes: [], containers: [] } };
}

describe('KvLeaseStore', () => {
  it('create is first-wins, update and delete are compare-and-swaps on the lease revision', async () => {
    const bus = new InMemoryBus({ node: NODE });
    const leases = await KvLeaseStore.open(bus, NODE);
    const lease = (holder: string) => ({ type: 'kubelet.podworker.PartitionLease.v1' as const, holder, acquiredAt: '2024-01-01T00:00:00Z' });
    const r1 = await leases.create(3, lease('a'));
    await assert.rejects(leases.create(3, lease('b')), (e: unknown) => isBusError(e, 'Conflict'));
    const r2 = await leases.update(3, lease('a'), r1);
    await assert.rejects(leases.update(3, lease('b'), r1), (e: unknown) => isBusError(e, 'Conflict'));
    assert.deepEqual(await leases.get(3), { value: lease('a'), revision: r2 });
    await assert.rejects(leases.delete(3, r1), (e: unknown) => isBusError(e, 'Conflict'));
    await leases.delete(3, r2);
    assert.equal(await leases.get(3), null);
    assert.ok((await leases.create(3, lease('b'))) > r2, 'a released partition can be taken');
  });
});

describe('KvMemberStore', () => {
  it("lists the node's live members: a removed member's delete marker does not count, another node's members do not either", async () => {
    const bus = new InMemoryBus({ node: NODE });
    const ac = new AbortController();
    const members = await KvMemberStore.open(bus, NODE, () => Date.UTC(2024, 0, 1), { signal: ac.signal });
    const elsewhere = await KvMemberStore.open(bus, 'node-2');
    await members.heartbeat('pw-a');
    await members.heartbeat('pw-b');
    await elsewhere.heartbeat('pw-z');
    assert.deepEqual((await members.live()).sort(), ['pw-a', 'pw-b']);
    await members.remove('pw-a');
    await eventually(async () => (await members.live()).join() === 'pw-b');
    const kv = await bus.kv(Buckets.members, MemberHeartbeat);
    assert.ok((await kv.keys(Keys.nodePrefix(NODE))).includes(Keys.member(NODE, 'pw-a')), 'the marker is still stored');
    ac.abort();
    await assert.rejects(members.live(), /closed/);
  });

  it('a member is live until its last heartbeat is older than the TTL: the watch sees no expiry, the clock decides', async () => {
    const bus = new InMemoryBus({ node: NODE });
    const ac = new AbortController();
    let now = Date.UTC(2024, 0, 1);
    const members = await KvMemberStore.open(bus, NODE, () => now, { signal: ac.signal, ttlMs: 10_000 });
    await members.heartbeat('pw-a');
    await members.heartbeat('pw-b');
    assert.deepEqual((await members.live()).sort(), ['pw-a', 'pw-b']);
    now += 9_999;
    await members.heartbeat('pw-a');
    // The watch delivers in order: once pw-c is seen, so is pw-a's heartbeat before it.
    await members.heartbeat('pw-c');
    await eventually(async () => (await members.live()).length === 3);
    now += 1;
    assert.deepEqual((await members.live()).sort(), ['pw-a', 'pw-c'], "pw-b's heartbeat is 10 s old");
    now += 9_998;
    assert.deepEqual((await members.live()).sort(), ['pw-a', 'pw-c'], 'their heartbeats are 9,999 ms old');
    now += 1;
    assert.deepEqual(await members.live(), []);
    await members.heartbeat('pw-b');
    await eventually(async () => (await members.live()).join() === 'pw-b', { message: 'a member heartbeating again is back' });
    ac.abort();
  });
});

describe('KvPodStateStore.listPartitionUids', () => {
  it('lists every UID with a kill, desired or worker entry under the partition, deleted ones included', async () => {
    const bus = new InMemoryBus({ node: NODE });
    const store = await KvPodStateStore.open(bus, NODE);
    await store.putWorker(5, workerRecord('u1'));
    await store.putWorker(5, workerRecord('u2'));
    await store.putWorker(6, workerRecord('u9'));
    await store.deleteWorker(5, 'u2');
    assert.deepEqual((await store.listPartitionUids(5)).sort(), ['u1', 'u2']);
    assert.deepEqual(await store.listPartitionUids(6), ['u9']);
    assert.deepEqual(await store.listPartitionUids(7), []);
    assert.equal(await store.getWorker(5, 'u2'), null);
    assert.equal((await store.getWorker(5, 'u1'))?.value.uid, 'u1');
  });
});

describe('watchRuntimeCache', () => {
  it('replays the node entries and relist mark, then follows puts and deletes; an invalid value is dead-lettered', async () => {
    const bus = new InMemoryBus({ node: NODE, process: 'pod-worker' });
    const kv = await bus.kv(Buckets.runtime, RuntimeBucketValue);
    await kv.put(Keys.pod(NODE, 'u1'), cacheEntry('u1', 10));
    await kv.put(Keys.pod('node-2', 'u7'), cacheEntry('u7', 10));
    await kv.put(Keys.relistMark(NODE), { type: 'kubelet.pleg.RelistMark.v1', timestamp: 20 });
    const cache = new RuntimeStatusCache({ clock: new FakeClock(0), logger: silentLog });
    const ac = new AbortController();
    const { done } = await watchRuntimeCache(bus, NODE, cache, ac.signal);
    await eventually(() => cache.caughtUp);
    assert.equal(cache.size, 1, "another node's entry is not taken");
    assert.equal(cache.relistMark, 20);
    assert.equal(cache.peek('u1').timestamp, 20);
    await kv.put(Keys.pod(NODE, 'u2'), cacheEntry('u2', 30));
    await eventually(() => cache.size === 2);
    await kv.delete(Keys.pod(NODE, 'u1'));
    await eventually(() => cache.size === 1);
    const raw = await bus.typedKv(Buckets.runtime, RuntimeBucketValue);
    await raw.raw.put(Keys.pod(NODE, 'u3'), new TextEncoder().encode('{"type":"nope"}'));
    await eventually(() => bus.deadLetteredCount === 1);
    assert.equal(cache.size, 1);
    ac.abort();
    await done;
  });
});
