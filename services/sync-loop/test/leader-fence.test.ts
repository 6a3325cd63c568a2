import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DesiredPod, KillRequest } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import { FencedError, LeaderFence } from '../src/sync-loop/leader-fence.js';
import { fencedPorts } from '../src/sync-loop/fenced-ports.js';
import type { DesiredStore, KillStore } from '../src/ports.js';

const manualClock = (start = 1_000_000): FakeClock => new FakeClock(start);

describe('LeaderFence', () => {
  it('is open until TTL minus margin after the last renewal was sent, then refuses', () => {
    const clock = manualClock();
    const fence = new LeaderFence({ epoch: 7, clock, ttlMs: 10_000, signal: new AbortController().signal }, clock.now());
    clock.advance(8_999);
    assert.equal(fence.closedReason(), undefined);
    fence.renewed(clock.now() - 100); // renewal sent 100 ms ago
    clock.advance(8_000);
    assert.equal(fence.closedReason(), undefined);
    clock.advance(1_000);
    assert.throws(
      () => fence.check('x'),
      (e: unknown) => e instanceof FencedError && e.retryable && /refused x: leader term 7: the lease was last confirmed 9100 ms ago/.test(e.message),
    );
  });

  it('refuses once the term ended', () => {
    const clock = manualClock();
    const ac = new AbortController();
    const fence = new LeaderFence({ epoch: 3, clock, ttlMs: 10_000, signal: ac.signal }, clock.now());
    ac.abort();
    assert.throws(() => fence.check('w'), /refused w: leader term 3 ended/);
  });

  it('fenced ports stamp the epoch and write nothing once closed', async () => {
    const clock = manualClock();
    const fence = new LeaderFence({ epoch: 9, clock, ttlMs: 10_000, signal: new AbortController().signal }, clock.now());
    const puts: DesiredPod[] = [];
    const kills: KillRequest[] = [];
    const desired: DesiredStore = { list: async () => [], put: async (d) => void puts.push(d), delete: async () => undefined };
    const killStore: KillStore = { create: async (k) => (kills.push(k), true), get: async () => undefined, update: async (k) => (kills.push(k), true) };
    const pokes: string[] = [];
    const ports = fencedPorts(fence, desired, killStore);
    const poker = ports.poker((admit) => ({ poke: async (uid) => void pokes.push(`${uid}@${admit('poke').leaderEpoch}`) }));
    const d = { type: 'kubelet.podworker.DesiredPod.v1', pod: { metadata: { uid: 'u' } } } as unknown as DesiredPod;
    const k = { type: 'kubelet.podworker.KillRequest.v1', uid: 'u' } as unknown as KillRequest;
    await ports.desired.put(d);
    await ports.kills.create(k);
    await poker.poke('u', 'create');
    assert.deepEqual([puts[0]?.leaderEpoch, kills[0]?.leaderEpoch, pokes], [9, 9, ['u@9']]);
    assert.deepEqual([puts[0]?.fencedAt, kills[0]?.fencedAt], [clock.now(), clock.now()], 'each write carries when the fence admitted it');
    clock.advance(9_000);
    await assert.rejects(ports.desired.put(d), FencedError);
    await assert.rejects(ports.desired.delete('u'), FencedError);
    await assert.rejects(ports.kills.create(k), FencedError);
    await assert.rejects(ports.kills.update(k, 1), FencedError);
    await assert.rejects(poker.poke('u', 'create'), FencedError);
    assert.deepEqual([puts.length, kills.length, pokes.length], [1, 1, 1]);
  });
});
