/**
 * The watch caches of namespaces and pods, against a real nats-server: a namespaced create reads no
 * namespace from the bucket, a patch or update of a pod reads no pod; a namespace created or deleted
 * just before is seen at once; writes made by another process (a second storage on the bucket, no
 * cache) that the watch may not have delivered yet are not lost or refused: a stale cached object
 * is refused by its compare-and-swap and the write is tried again on a fresh read, and
 * resourceVersion and uid preconditions answer as the store's current object says.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { eventually, startNatsServer, type NatsServer } from '@splitlet/testkit';
import { findResource, type ResourceDef } from '../src/registry/resources.js';
import { RestStorage } from '../src/registry/rest-storage.js';
import { ensureBootstrapObjects } from '../src/storage/bootstrap.js';
import { ObjectStore } from '../src/storage/object-store.js';

const BUCKET = 'sl_api_wcache';
const pods = findResource('', 'v1', 'pods') as ResourceDef;
const namespaces = findResource('', 'v1', 'namespaces') as ResourceDef;
const configmaps = findResource('', 'v1', 'configmaps') as ResourceDef;
const pod = (name: string, namespace = 'default'): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'busybox' }] },
});
const labelsOf = (o: Record<string, unknown>): Record<string, string> => (o['metadata'] as { labels?: Record<string, string> }).labels ?? {};

describe('API server watch caches (real nats-server)', { timeout: 120_000 }, () => {
  let nats: NatsServer;
  let nc: NatsConnection;
  /** This process's storage, with the caches. */
  let storage: RestStorage;
  /** Another process's on the same bucket, without caches: its writes reach the caches by the watch only. */
  let other: RestStorage;
  const ctl = new AbortController();
  const reads = { namespaces: 0, pods: 0 };
  before(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    other = new RestStorage(await ObjectStore.open(nc, jsm, BUCKET));
    await ensureBootstrapObjects(other);
    storage = new RestStorage(await ObjectStore.open(nc, jsm, BUCKET));
    await storage.startWatchCaches(ctl.signal);
    nc.subscribe(`$JS.API.DIRECT.GET.KV_${BUCKET}.>`, {
      callback: (_e, m) => {
        if (m.subject.includes(`.$KV.${BUCKET}.namespaces.`)) reads.namespaces++;
        if (m.subject.includes(`.$KV.${BUCKET}.pods.`)) reads.pods++;
      },
    });
  });
  after(async () => {
    ctl.abort();
    await nc?.close();
    await nats?.stop();
  });

  it('creates in a namespace without reading it; a namespace created or deleted just before counts at once', async () => {
    await nc.flush();
    reads.namespaces = 0;
    for (let i = 0; i < 10; i++) await storage.create(configmaps, 'default', { metadata: { name: `cm-${i}` } });
    await nc.flush();
    assert.equal(reads.namespaces, 0, 'ten creates in default read no namespace');

    await storage.create(namespaces, undefined, { metadata: { name: 'fresh' } });
    await storage.create(configmaps, 'fresh', { metadata: { name: 'right-after' } });
    // Created by another process: the watch may not have brought it yet; the miss reads the store.
    await other.create(namespaces, undefined, { metadata: { name: 'elsewhere' } });
    await storage.create(configmaps, 'elsewhere', { metadata: { name: 'right-after' } });
    await assert.rejects(storage.create(configmaps, 'absent', { metadata: { name: 'x' } }), /namespaces "absent" not found/);

    await storage.delete(namespaces, undefined, 'fresh', {});
    await assert.rejects(storage.create(configmaps, 'fresh', { metadata: { name: 'after-delete' } }), /namespaces "fresh" not found/);
  });

  it('patches and updates a pod without reading it', async () => {
    const created = await storage.create(pods, 'default', pod('cached'));
    await nc.flush();
    reads.pods = 0;
    const patched = await storage.patch(pods, 'default', 'cached', 'application/strategic-merge-patch+json', { status: { phase: 'Running' } }, 'status');
    const put = await storage.update(pods, 'default', 'cached', { ...patched.object, metadata: { ...patched.object.metadata, labels: { put: 'y' } } });
    await storage.patch(pods, 'default', 'cached', 'application/merge-patch+json', { metadata: { resourceVersion: String(put.revision), labels: { rv: 'y' } } });
    await storage.delete(pods, 'default', 'cached', { gracePeriodSeconds: 0 });
    await nc.flush();
    assert.equal(reads.pods, 0, 'two patches, an update and a delete of a pod read none');
    assert.equal(put.revision > created.revision, true);
  });

  it('writes over a stale cached pod land on the store`s current one, with its preconditions', async () => {
    const created = await storage.create(pods, 'default', pod('raced'));
    const uid = created.object.metadata?.['uid'] as string;
    for (let round = 0; round < 5; round++) {
      // Another process's write the cache may not show yet; every write here must keep it.
      await other.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { labels: { [`other-${round}`]: 'y' } } });
      const mine = await storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { labels: { [`mine-${round}`]: 'y' } } });
      assert.equal(labelsOf(mine.object)[`other-${round}`], 'y', `round ${round}: the other process's label kept`);

      const current = await other.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { labels: { [`again-${round}`]: 'y' } } });
      // The body's resourceVersion is the store's current one: not a conflict, however old the cache's copy.
      const put = await storage.update(pods, 'default', 'raced', {
        ...current.object,
        metadata: { ...current.object.metadata, labels: { ...labelsOf(current.object), [`put-${round}`]: 'y' } },
      });
      assert.equal(labelsOf(put.object)[`again-${round}`], 'y');
      const byRv = await other.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { labels: { [`rv-${round}`]: 'y' } } });
      await storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', {
        metadata: { resourceVersion: String(byRv.revision), uid, labels: { [`patch-rv-${round}`]: 'y' } },
      });
    }
    const stale = String(created.revision);
    await assert.rejects(storage.update(pods, 'default', 'raced', { ...created.object, metadata: { ...created.object.metadata, resourceVersion: stale } }), /Conflict|modified/);
    await assert.rejects(
      storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { resourceVersion: stale }, status: {} }, 'status'),
      /Conflict|modified/,
    );
    await assert.rejects(storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { uid: 'other' }, status: {} }, 'status'), /Precondition failed/);

    // Deleted and created again elsewhere with the same name: a uid precondition holds for the new pod only.
    await other.delete(pods, 'default', 'raced', { gracePeriodSeconds: 0 });
    const again = await other.create(pods, 'default', pod('raced'));
    const newUid = again.object.metadata?.['uid'] as string;
    const status = await storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { uid: newUid }, status: { phase: 'Running' } }, 'status');
    assert.equal(status.object.metadata?.['uid'], newUid);
    await assert.rejects(storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', { metadata: { uid }, status: {} }, 'status'), /Precondition failed/);
    await storage.delete(pods, 'default', 'raced', { gracePeriodSeconds: 0 });
    await assert.rejects(storage.patch(pods, 'default', 'raced', 'application/merge-patch+json', { status: {} }, 'status'), /not found/);
    // The cache catches up with the other process's writes: its pods are what the store lists.
    const names = (items: readonly Record<string, unknown>[] | undefined): string => JSON.stringify(items?.map((p) => (p['metadata'] as { name: string }).name).sort());
    await eventually(async () => names(storage.cachedObjects(pods)) === names((await other.list(pods, undefined, { labelSelector: null, fieldSelector: null })).items), {
      timeoutMs: 30_000,
    });
  });

  it('serves pod watches from the cache (no consumer of their own); older revisions and uncached resources watch the store', async () => {
    const jsm = await jetstreamManager(nc);
    const consumers = async (): Promise<number> => (await jsm.streams.info(`KV_${BUCKET}`)).state.consumer_count;
    const all = { labelSelector: null, fieldSelector: null };
    const before = await consumers();
    const start = (await storage.list(pods, undefined, all)).revision;
    const wctl = new AbortController();
    // A namespaced watch with a field selector, read as the HTTP watch reads it.
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of storage.watch(pods, 'team', { labelSelector: null, fieldSelector: 'spec.nodeName=node-a' }, start, new Set(), wctl.signal)) {
        seen.push(`${e.type}:${(e.object['metadata'] as { name: string }).name}@${e.revision}`);
      }
    })();

    await storage.create(namespaces, undefined, { metadata: { name: 'team' } });
    const a = await storage.create(pods, 'team', pod('a', 'team'));
    await other.create(pods, 'default', pod('elsewhere'));
    const b = await other.create(pods, 'team', { ...pod('b', 'team'), spec: { nodeName: 'node-b', containers: [{ name: 'c', image: 'busybox' }] } });
    const a2 = await other.patch(pods, 'team', 'a', 'application/merge-patch+json', { metadata: { labels: { x: 'y' } } });
    const gone = await storage.delete(pods, 'team', 'a', { gracePeriodSeconds: 0 });
    const want = [`ADDED:a@${a.revision}`, `MODIFIED:a@${a2.revision}`, `DELETED:a@${gone.stored.revision}`];
    await eventually(() => seen.length >= 3, { timeoutMs: 30_000 });
    assert.deepEqual(seen, want, `node-b's pod and default's are not this watch's (b at ${b.revision})`);
    assert.equal(await consumers(), before, 'the watch the cache serves has no consumer');

    // A second watch from the same revision replays the same events from the cache's kept ones.
    const replay: string[] = [];
    const second = new AbortController();
    for await (const e of storage.watch(pods, 'team', { labelSelector: null, fieldSelector: 'spec.nodeName=node-a' }, start, new Set(), second.signal)) {
      replay.push(`${e.type}:${(e.object['metadata'] as { name: string }).name}@${e.revision}`);
      if (replay.length === 3) second.abort();
    }
    assert.deepEqual(replay, want);

    // From before the cache's listing: the store serves it, with a consumer of its own.
    const old = new AbortController();
    const first: string[] = [];
    const oldReading = (async () => {
      for await (const e of storage.watch(pods, undefined, all, 1, new Set(), old.signal)) first.push(e.type);
    })();
    await eventually(async () => (await consumers()) === before + 1, { timeoutMs: 30_000 });
    await eventually(() => first.length > 0, { timeoutMs: 30_000 });
    old.abort();
    await oldReading;
    wctl.abort();
    await reading;
  });
});
