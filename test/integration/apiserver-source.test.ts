/**
 * config-source's apiserver source against the real embedded API server (its own process on a real
 * nats-server): only this node's pods, a graceful delete shows as a deletionTimestamp, a deleted
 * object disappears, and after the server was killed and the watch's resourceVersion compacted away
 * (410 Gone) the source relists and converges.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '@splitlet/telemetry';
import { eventually } from '@splitlet/testkit';
import { ApiserverSource } from '../../services/config-source/src/sources/apiserver-source.ts';
import type { SourceListing } from '../../services/config-source/src/sources/listing.ts';
import { ObjectStore, TOMBSTONE_TTL_MS } from '../../services/apiserver/src/storage/object-store.ts';
import { startApiServer, type ApiServerUnderTest } from './apiserver/harness.ts';

const NODE = 'node-src';

const pod = (name: string, nodeName: string): unknown => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { nodeName, containers: [{ name: 'c', image: 'busybox:1.36' }] },
});

describe('apiserver source against the embedded API server', { timeout: 300_000 }, () => {
  let api: ApiServerUnderTest;
  const listings: SourceListing[] = [];
  const stop = new AbortController();
  let running: Promise<void>;
  /** Each listing is handed on once this resolves (a PodConfig still publishing the previous one). */
  let gate: Promise<void> = Promise.resolve();
  const last = (): Map<string, { deletionTimestamp?: string; uid: string }> =>
    new Map(
      (listings.at(-1)?.pods ?? []).map((p) => [
        p.pod.metadata.name,
        { uid: p.pod.metadata.uid, ...(p.pod.metadata.deletionTimestamp ? { deletionTimestamp: p.pod.metadata.deletionTimestamp } : {}) },
      ]),
    );

  before(async () => {
    api = await startApiServer();
    const source = new ApiserverSource({
      kubeconfig: api.kubeconfig,
      nodeName: NODE,
      logger: createLogger({ service: 'test', level: 'warn', stream: process.stderr }),
      onListing: async (l) => {
        listings.push(l);
        await gate;
      },
      initialBackoffMs: 200,
      maxBackoffMs: 1000,
    });
    running = source.run(stop.signal);
  });
  after(async () => {
    stop.abort();
    await running;
    await api?.stop();
  });

  test('first list marks the source seen; only pods bound to the node; graceful delete; removal', async () => {
    await eventually(() => listings.length > 0, { timeoutMs: 30_000 });
    assert.deepEqual(listings[0], { source: 'api', pods: [], errors: [] });
    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('mine', NODE))).status, 201);
    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('theirs', 'other-node'))).status, 201);
    await eventually(() => last().has('mine'), { timeoutMs: 30_000 });
    const mineUid = last().get('mine')!.uid;
    // A watch event's listing says what changed, so PodConfig merges only that pod.
    assert.deepEqual(
      listings.at(-1)?.changes?.upserted.map((p) => p.pod.metadata.uid),
      [mineUid],
    );
    assert.ok(!last().has('theirs'), 'a pod of another node is not listed');
    assert.ok(listings.every((l) => l.source === 'api'));

    assert.equal((await api.request('DELETE', '/api/v1/namespaces/default/pods/mine', { gracePeriodSeconds: 30 })).status, 200);
    await eventually(() => last().get('mine')?.deletionTimestamp !== undefined, { timeoutMs: 30_000 });
    assert.equal((await api.request('DELETE', '/api/v1/namespaces/default/pods/mine', { gracePeriodSeconds: 0 })).status, 200);
    await eventually(() => !last().has('mine'), { timeoutMs: 30_000 });
    assert.deepEqual(listings.at(-1)?.changes, { upserted: [], removed: [mineUid] });
  });

  test('watch events that arrive while a listing is being handed on go on together, as one listing of their changes', async () => {
    // A second watch of the node's pods, in this process: once it has an event, the source's watch
    // (same server, same event loop) has it too.
    const seen = new Set<string>();
    const kc = new KubeConfig();
    kc.loadFromFile(api.kubeconfig);
    const watching = await new Watch(kc).watch(
      '/api/v1/pods',
      { fieldSelector: `spec.nodeName=${NODE}` },
      (phase, obj: { metadata?: { name?: string } }) => void seen.add(`${phase} ${obj.metadata?.name}`),
      () => undefined,
    );
    try {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      const before = listings.length;
      const names = ['burst-0', 'burst-1', 'burst-2', 'burst-3', 'burst-4'];
      for (const n of names) assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod(n, NODE))).status, 201);
      await eventually(() => names.every((n) => seen.has(`ADDED ${n}`)), { timeoutMs: 30_000 });
      await eventually(() => listings.length > before, { timeoutMs: 30_000, message: 'the first event handed on (and held)' });
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      gate = Promise.resolve();
      release();
      await eventually(() => names.every((n) => last().has(n)), { timeoutMs: 30_000 });
      const after = listings.slice(before);
      assert.ok(after.length < names.length, `${after.length} listings for ${names.length} pods`);
      const merged = after[1]?.changes?.upserted.map((p) => p.pod.metadata.name);
      assert.ok(merged !== undefined && merged.length >= 2, `one listing carries the later pods: ${JSON.stringify(merged)}`);
      // Their removal the same way: the changes of the listings together name each pod once.
      gate = new Promise<void>((r) => (release = r));
      const beforeRemoval = listings.length;
      for (const n of names) assert.equal((await api.request('DELETE', `/api/v1/namespaces/default/pods/${n}`, { gracePeriodSeconds: 0 })).status, 200);
      await eventually(() => names.every((n) => seen.has(`DELETED ${n}`)), { timeoutMs: 30_000 });
      await eventually(() => listings.length > beforeRemoval, { timeoutMs: 30_000 });
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      gate = Promise.resolve();
      release();
      await eventually(() => names.every((n) => !last().has(n)), { timeoutMs: 30_000 });
      const removals = listings.slice(beforeRemoval);
      assert.ok(removals.length < names.length);
      assert.equal(removals.flatMap((l) => l.changes?.removed ?? []).length, names.length);
    } finally {
      watching.abort();
    }
  });

  test('server killed, changes missed and compacted (410 Gone): the source relists and converges', async () => {
    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('a', NODE))).status, 201);
    await eventually(() => last().has('a'), { timeoutMs: 30_000 });
    await api.restart(true);
    assert.equal((await api.request('DELETE', '/api/v1/namespaces/default/pods/a', { gracePeriodSeconds: 0 })).status, 200);
    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('b', NODE))).status, 201);
    const nc = await connect({ servers: api.nats.url });
    try {
      const store = await ObjectStore.open(nc, await jetstreamManager(nc), 'sl_api');
      assert.ok((await store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000)) >= 1);
    } finally {
      await nc.close();
    }
    await eventually(() => (assert.deepEqual([...last().keys()].sort(), ['b']), true), { timeoutMs: 60_000 });
  });
});
