/**
 * sync-loop's SL_PLEG consumer over a bus: a PodLifecycleEventList's events reach the loop in
 * order, one after another, as lone events do; an invalid list is dead-lettered, not handled.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { PlegMessage, Subjects, type PodLifecycleEvent } from '@splitlet/api';
import { InMemoryBus } from '@splitlet/bus/testing';
import { eventually } from '@splitlet/testkit';
import { consumePleg } from '../src/adapters/consumers.js';
import type { SyncLoop } from '../src/sync-loop/sync-loop.js';

const NODE = 'node-1';
const ev = (uid: string, data: string): PodLifecycleEvent => ({
  type: 'kubelet.pleg.PodLifecycleEvent.v1',
  uid,
  event: 'ContainerStarted',
  data,
  at: '2026-12-05T10:00:00.000Z',
  cacheRevision: 3,
});

describe('consumePleg', () => {
  let bus: InMemoryBus;
  let ac: AbortController;
  beforeEach(() => {
    bus = new InMemoryBus({ node: NODE, process: 'sync-loop' });
    ac = new AbortController();
  });
  afterEach(async () => {
    ac.abort();
    await bus.close();
  });

  it("hands a list's events to the loop in order, each after the one before it finished", async () => {
    const seen: string[] = [];
    let running = 0;
    const loop = {
      async handlePlegEvent(e: PodLifecycleEvent): Promise<void> {
        assert.equal(running++, 0, 'one at a time');
        await new Promise((r) => setImmediate(r));
        seen.push(`${e.uid}/${e.data}`);
        running--;
      },
    } as unknown as SyncLoop;
    await consumePleg(bus, loop, NODE, ac.signal);
    await bus.publish(PlegMessage, Subjects.pleg(NODE, 'a'), { type: 'kubelet.pleg.PodLifecycleEventList.v1', items: [ev('a', 'sandbox'), ev('a', 'c1'), ev('a', 'c2')] });
    await eventually(() => seen.length === 3, { message: 'three events handled', timeoutMs: 30_000 });
    assert.deepEqual(seen, ['a/sandbox', 'a/c1', 'a/c2']);
  });

  it('dead-letters an empty list without calling the loop', async () => {
    const seen: string[] = [];
    const loop = { handlePlegEvent: async (e: PodLifecycleEvent) => void seen.push(e.uid) } as unknown as SyncLoop;
    const dead: unknown[] = [];
    bus.subscribeCore(Subjects.deadLetter(NODE, 'sync-loop'), (d) => dead.push(d), ac.signal);
    await consumePleg(bus, loop, NODE, ac.signal);
    bus.server.core.publish(Subjects.pleg(NODE, 'a'), JSON.stringify({ type: 'kubelet.pleg.PodLifecycleEventList.v1', items: [] }));
    await eventually(() => dead.length === 1, { message: 'a dead letter', timeoutMs: 30_000 });
    assert.deepEqual(seen, []);
  });
});
