/**
 * TypedKv.list against a real nats-server while the bucket is being written: every listing ends
 * promptly with one entry per key. On nats-server 2.9 a last-value watch can report `delta` 1 for
 * good when keys change during its replay, which used to stall such a listing for its 5 s guard
 * (seen as 5 s pauses of `splitlet get pods` while pods were starting). A watch whose replay meets
 * keys deleted and compacted away (their delete markers removed, as the buckets' compaction does) is
 * caught up all the same once the writes stop: its count went stale, and it used to wait for the
 * next write to the key range (a sync-loop leader waited 4 minutes for its sl_kill view).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestNats } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { connectBus, deleteStoredMessage } from '../src/index.ts';
import type { NatsBus } from '../src/index.ts';

const NODE = 'list-node';
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const Value = z.object({ type: z.literal('test.Value.v1'), n: z.number().int() });

describe('TypedKv.list and watch under concurrent writes', () => {
  let server: NatsServer;
  let bus: NatsBus;
  let writer: NatsBus;

  before(async () => {
    server = await startTestNats();
    bus = await connectBus({ servers: server.url, process: 'test-list', node: NODE, logger: quiet });
    writer = await connectBus({ servers: server.url, process: 'test-writer', node: NODE, logger: quiet, provision: false });
  });

  after(async () => {
    await bus.close();
    await writer.close();
    await server.stop();
  });

  test('every listing ends within a second and has each key once, with a current value', async () => {
    const kv = await bus.kv('sl_status', Value);
    const w = await writer.kv('sl_status', Value);
    const keys = Array.from({ length: 20 }, (_, i) => `list-node.${String(i % 32).padStart(2, '0')}.uid-${i}`);
    for (const k of keys) await w.put(k, { type: 'test.Value.v1', n: 0 });
    // Keep rewriting a few keys while listing.
    let stop = false;
    let n = 0;
    const churn = (async () => {
      while (!stop) {
        n++;
        await w.put(keys[n % 5]!, { type: 'test.Value.v1', n });
        if (n % 3 === 0) await new Promise((r) => setTimeout(r, 1));
      }
    })();
    const durations: number[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const t = performance.now();
        const entries = await kv.list('list-node.>');
        durations.push(performance.now() - t);
        assert.deepEqual([...entries.map((e) => e.key)].sort(), [...keys].sort(), 'one entry per key');
      }
    } finally {
      stop = true;
      await churn;
    }
    const slowest = Math.max(...durations);
    assert.ok(slowest < 1000, `the slowest listing took ${Math.round(slowest)} ms (${n} writes meanwhile)`);
    // After the churn, a listing shows the last value of each rewritten key.
    const final = new Map((await kv.list('list-node.>')).map((e) => [e.key, e.value?.n]));
    for (const k of keys.slice(0, 5)) assert.equal(final.get(k), (await kv.get(k))?.value?.n);
  });
  test('a watch is caught up once the writes stop, also when keys were deleted and compacted during its replay', async () => {
    const nc = await connect({ servers: server.url });
    const jsm = await jetstreamManager(nc);
    const w = await writer.kv('sl_kill', Value);
    const kv = await bus.kv('sl_kill', Value);
    try {
      for (let trial = 0; trial < 8; trial++) {
        const prefix = `${NODE}.t${trial}`;
        const key = (i: number): string => `${prefix}.uid-${i}`;
        for (let i = 0; i < 200; i++) await w.put(key(i), { type: 'test.Value.v1', n: 0 });
        let stop = false;
        let n = 0;
        const churn = (async () => {
          while (!stop) {
            const k = key(Math.floor(Math.random() * 200));
            if (n++ % 3 === 0) {
              await w.delete(k);
              const marker = await jsm.streams.getMessage('KV_sl_kill', { last_by_subj: `$KV.sl_kill.${k}` }).catch(() => null);
              // As compactDeleteMarkers does it: the marker's own message, not a filtered purge (on
              // nats-server 2.9 that moves every lagging consumer past other keys' messages, and the
              // watch would lose the keys it skipped: see deleteStoredMessage).
              if (marker !== null) await deleteStoredMessage(jsm, 'KV_sl_kill', marker.seq);
            } else {
              await w.put(k, { type: 'test.Value.v1', n });
            }
          }
        })();
        await new Promise((r) => setTimeout(r, 50));
        const ac = new AbortController();
        let caughtUp = false;
        const { done } = await kv.watch(`${prefix}.>`, ac.signal, () => undefined, { onCaughtUp: () => (caughtUp = true) });
        await new Promise((r) => setTimeout(r, 300));
        stop = true;
        await churn;
        const deadline = Date.now() + 30_000;
        while (!caughtUp && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        ac.abort();
        await done;
        assert.ok(caughtUp, `trial ${trial}: the watch of ${prefix}.> never caught up after ${n} writes stopped`);
      }
    } finally {
      await nc.close();
    }
  });

  test('a watch is caught up only once it delivered every key stored when it began, also while keys are rewritten during its replay', async () => {
    const w = await writer.kv('sl_worker', Value);
    const kv = await bus.kv('sl_worker', Value);
    for (let trial = 0; trial < 8; trial++) {
      const prefix = `${NODE}.r${trial}`;
      const key = (i: number): string => `${prefix}.uid-${i}`;
      for (let i = 0; i < 300; i++) await w.put(key(i), { type: 'test.Value.v1', n: 0 });
      let stop = false;
      let n = 0;
      const churn = (async () => {
        while (!stop) await w.put(key(n++ % 300), { type: 'test.Value.v1', n });
      })();
      const ac = new AbortController();
      const seen = new Set<string>();
      let missingAtCaughtUp: string[] | undefined;
      const { done } = await kv.watch(`${prefix}.>`, ac.signal, (e) => void seen.add(e.key), {
        onCaughtUp: () => (missingAtCaughtUp = Array.from({ length: 300 }, (_, i) => key(i)).filter((k) => !seen.has(k))),
      });
      const deadline = Date.now() + 30_000;
      while (missingAtCaughtUp === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      stop = true;
      await churn;
      ac.abort();
      await done;
      assert.ok(missingAtCaughtUp !== undefined, `trial ${trial}: the watch never caught up`);
      assert.deepEqual(missingAtCaughtUp.slice(0, 5), [], `trial ${trial}: caught up with ${missingAtCaughtUp.length} stored keys not yet delivered (${n} writes meanwhile)`);
    }
  });
});
