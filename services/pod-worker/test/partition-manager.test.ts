import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '@splitlet/service/testing';
import { PartitionManager } from '../src/partitions/partition-manager.js';
import type { PartitionStopMode } from '../src/partitions/partition-manager.js';
import type { PartitionGuard } from '../src/partitions/partition-guard.js';
import { FakeLeaseStore, FakeMemberStore, settle, silentLog } from './fakes.js';

function manager(instance: string, clock: FakeClock, leases: FakeLeaseStore, members: FakeMemberStore, P = 8) {
  const started = new Map<number, PartitionGuard>();
  const stops: [number, PartitionStopMode][] = [];
  const m = new PartitionManager({
    instance,
    partitions: P,
    leases,
    members,
    clock,
    logger: silentLog,
    renewMs: 3000,
    heartbeatMs: 3000,
    balanceMs: 2000,
    leaseTtlMs: 10_000,
    start: async (guard) => {
      started.set(guard.partition, guard);
      return {
        stop: async (mode) => {
          stops.push([guard.partition, mode]);
        },
      };
    },
  });
  return { m, started, stops };
}

describe('PartitionManager', () => {
  it('a lone instance takes every partition; a second one gets half, the surplus released in one round', async () => {
    const clock = new FakeClock(0);
    const leases = new FakeLeaseStore();
    const members = new FakeMemberStore();
    const a = manager('a', clock, leases, members);
    await a.m.start();
    assert.equal(a.m.owned().length, 8);
    const epochs = [...a.started.values()].map((g) => g.epoch);
    assert.equal(new Set(epochs).size, 8, 'each partition has its own epoch (its create revision)');
    const b = manager('b', clock, leases, members);
    await b.m.start();
    assert.equal(b.m.owned().length, 0, 'nothing free yet');
    // a's next round sees b and releases its 4 surplus partitions together; b's round after takes them.
    for (let i = 0; i < 2; i++) await clock.advanceAsync(2000);
    await settle();
    assert.equal(a.m.owned().length, 4);
    assert.equal(b.m.owned().length, 4);
    assert.deepEqual(a.m.owned(), [0, 1, 2, 3], 'the highest partitions were released first');
    assert.ok(a.stops.every(([, mode]) => mode === 'release'));
    for (const pp of b.m.owned()) {
      assert.equal(leases.kv.get(String(pp))?.value.holder, 'b');
      assert.ok(b.started.get(pp)!.epoch > a.started.get(pp)!.epoch, 'a new owner has a higher epoch');
    }
    await a.m.shutdown();
    await b.m.shutdown();
    assert.equal(clock.pendingTimers, 0);
  });

  it('a failed renew (conflict) loses the partition at once: stopped as lost, guard revoked', async () => {
    const clock = new FakeClock(0);
    const leases = new FakeLeaseStore();
    const members = new FakeMemberStore();
    const a = manager('a', clock, leases, members, 2);
    await a.m.start();
    const g0 = a.started.get(0)!;
    assert.ok(g0.held());
    // Someone else took the key (e.g. after our lease expired during a pause).
    leases.kv.delete('0');
    leases.kv.create('0', { type: 'kubelet.podworker.PartitionLease.v1', holder: 'x', acquiredAt: '' });
    await clock.advanceAsync(3000);
    await settle();
    assert.equal(g0.held(), false);
    assert.deepEqual(a.stops, [[0, 'lost']]);
    assert.deepEqual(a.m.owned(), [1]);
    await a.m.shutdown();
  });

  it('renewals that keep failing count as lost before the lease could expire', async () => {
    const clock = new FakeClock(0);
    const leases = new FakeLeaseStore();
    const members = new FakeMemberStore();
    const a = manager('a', clock, leases, members, 1);
    await a.m.start();
    const g = a.started.get(0)!;
    leases.failUpdates = true;
    await clock.advanceAsync(3000);
    await clock.advanceAsync(3000);
    assert.ok(g.held(), '6 s without renewal: still safe (TTL 10 s)');
    await clock.advanceAsync(3000);
    await settle();
    assert.equal(g.held(), false, '9 s: no longer safe, stop acting');
    assert.deepEqual(a.stops, [[0, 'lost']]);
    await a.m.abandon();
  });

  it('shutdown drains and deletes every lease and leaves the member set', async () => {
    const clock = new FakeClock(0);
    const leases = new FakeLeaseStore();
    const members = new FakeMemberStore();
    const a = manager('a', clock, leases, members, 4);
    await a.m.start();
    assert.ok(members.members.has('a'));
    await a.m.shutdown();
    assert.equal(leases.kv.entries.size, 0);
    assert.equal(members.members.has('a'), false);
    assert.deepEqual(
      a.stops.map(([, m]) => m),
      ['shutdown', 'shutdown', 'shutdown', 'shutdown'],
    );
    assert.equal(clock.pendingTimers, 0);
  });

  it('abandon (crash) keeps the leases for the TTL to expire', async () => {
    const clock = new FakeClock(0);
    const leases = new FakeLeaseStore();
    const a = manager('a', clock, leases, new FakeMemberStore(), 2);
    await a.m.start();
    await a.m.abandon();
    assert.equal(leases.kv.entries.size, 2);
    assert.deepEqual(
      a.stops.map(([, m]) => m),
      ['lost', 'lost'],
    );
  });
});
