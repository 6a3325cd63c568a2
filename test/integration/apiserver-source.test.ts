/**
 * config-source's apiserver source against the real embedded API server (its own process on a real
 * nats-server): only this node's pods, a graceful delete shows as a deletionTimestamp, a deleted
 * object disappears, and after the server was killed and the watch's resourceVersion compacted away
 * (410 Gone) the source relists and converges.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
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
      onListing: async (l) => void listings.push(l),
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
