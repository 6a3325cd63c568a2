/**
 * The API server's store against a real nats-server: compaction removes old tombstones with their
 * keys' history, and a watch that a compaction overtakes ends with 410 instead of missing a
 * DELETED event; one that delivered it goes on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServer } from '@splitlet/testkit';
import { ApiError } from '../src/http/api-errors.js';
import { ObjectStore, TOMBSTONE_TTL_MS, keyFilter, objectKey, type StoreEvent } from '../src/storage/object-store.js';

const what = (name: string): { resource: string; name: string } => ({ resource: 'configmaps', name });
const cm = (name: string): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } });

describe('ObjectStore compaction and watches (real nats-server)', { timeout: 60_000 }, () => {
  let nats: NatsServer;
  let nc: NatsConnection;
  let store: ObjectStore;
  before(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    store = await ObjectStore.open(nc, await jetstreamManager(nc), 'sl_api_test');
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });
  const compactAll = (): Promise<number> => store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000);
  const createThenDelete = async (name: string): Promise<number> => {
    const c = await store.create(objectKey('configmaps', 'default', name), cm(name), what(name));
    return (await store.delete(c.key, c.object, c.revision, what(name))).revision;
  };

  it('a compaction removes the deleted keys whole; the compacted revision refuses older watches', async () => {
    await store.create(objectKey('configmaps', 'default', 'kept'), cm('kept'), what('kept'));
    const k = objectKey('configmaps', 'default', 'gone');
    const c = await store.create(k, cm('gone'), what('gone'));
    const u = await store.update(k, { ...cm('gone'), data: { v: '2' } }, c.revision, what('gone'));
    const tombstone = (await store.delete(k, u.object, u.revision, what('gone'))).revision;
    assert.equal(await store.compact(Date.now()), 0, 'a young tombstone stays');
    assert.equal(await compactAll(), 1);
    assert.equal(await store.compactedRevision(), tombstone);
    const listed = await store.list(keyFilter('configmaps', 'default'));
    assert.deepEqual(
      listed.items.map((s) => s.key),
      [objectKey('configmaps', 'default', 'kept')],
      'no message of the removed key is left (its older revisions would read as alive)',
    );
    const recreated = await store.create(k, cm('gone'), what('gone'));
    assert.ok(recreated.revision > tombstone);
    const it = store.watch(keyFilter('configmaps', 'default'), tombstone - 1, new AbortController().signal);
    await assert.rejects(it.next(), (e: unknown) => e instanceof ApiError && e.code === 410 && /too old resource version/.test(e.message));
  });

  it('a watch a compaction overtook ends with 410 naming the deletion it missed', async () => {
    const from = await store.currentRevision();
    await store.create(objectKey('configmaps', 'default', 'first'), cm('first'), what('first'));
    const tombstone = await createThenDelete('overtaken');
    const ac = new AbortController();
    const it = store.watch(keyFilter('configmaps', 'default'), from, ac.signal);
    // The watch holds its first event; the deletion after it is not delivered yet when compaction runs.
    const first = await it.next();
    assert.equal((first.value as StoreEvent).object.metadata?.['name'], 'first');
    assert.ok((await compactAll()) >= 1);
    await assert.rejects(
      (async () => {
        for (let r = await it.next(); !r.done; r = await it.next()) {
          // events before the check may still come
        }
      })(),
      (e: unknown) =>
        e instanceof ApiError &&
        e.code === 410 &&
        e.message === `too old resource version: ${from} (the deletion of configmaps.default.overtaken at ${tombstone} was compacted before this watch read it)`,
    );
    ac.abort();
  });

  it('a watch that delivered the deletion goes on through the compaction', async () => {
    const from = await store.currentRevision();
    const ac = new AbortController();
    const it = store.watch(keyFilter('configmaps', 'default'), from, ac.signal);
    const pending = it.next();
    await createThenDelete('seen');
    const types: string[] = [];
    for (let r = await pending; ; r = await it.next()) {
      const e = r.value as StoreEvent;
      types.push(`${e.type} ${String(e.object.metadata?.['name'])}`);
      if (e.type === 'DELETED') break;
    }
    assert.ok((await compactAll()) >= 1);
    await store.create(objectKey('configmaps', 'default', 'after'), cm('after'), what('after'));
    const next = (await it.next()).value as StoreEvent;
    types.push(`${next.type} ${String(next.object.metadata?.['name'])}`);
    assert.deepEqual(types, ['ADDED seen', 'DELETED seen', 'ADDED after']);
    ac.abort();
    await it.return(undefined);
  });
  it('a full scan reads many keys at once and finds the tombstones in every batch', async () => {
    const bucket = 'sl_api_scan';
    const scanned = await ObjectStore.open(nc, await jetstreamManager(nc), bucket);
    const deleted: string[] = [];
    for (let i = 0; i < 150; i++) {
      const name = `obj-${i}`;
      const c = await scanned.create(objectKey('configmaps', 'default', name), cm(name), what(name));
      if (i % 37 === 5) {
        await scanned.delete(c.key, c.object, c.revision, what(name));
        deleted.push(name);
      }
    }
    // Requests and replies as the server sends them to this connection: how many reads were
    // outstanding at most (one by one, never more than one).
    let outstanding = 0;
    let most = 0;
    const requests = nc.subscribe(`$JS.API.DIRECT.GET.KV_${bucket}.>`, { callback: () => void (most = Math.max(most, ++outstanding)) });
    const replies = nc.subscribe('_INBOX.>', { callback: () => void (outstanding = Math.max(0, outstanding - 1)) });
    try {
      assert.equal(await scanned.compact(Date.now() + TOMBSTONE_TTL_MS + 1000, TOMBSTONE_TTL_MS, true), deleted.length);
      assert.ok(most > 1, `the scan read its 150 keys one at a time (at most ${most} outstanding)`);
      const left = (await scanned.list(keyFilter('configmaps'))).items.map((s) => String(s.object.metadata?.['name']));
      assert.equal(left.length, 150 - deleted.length);
      for (const name of deleted) assert.ok(!left.includes(name), `${name} was deleted`);
      assert.equal(await scanned.compact(Date.now() + TOMBSTONE_TTL_MS + 1000, TOMBSTONE_TTL_MS, true), 0, 'nothing left to remove');
    } finally {
      requests.unsubscribe();
      replies.unsubscribe();
    }
  });
  it('a compaction removes many keys at once, each key oldest first, and keeps a key created again', async () => {
    const bucket = 'sl_api_removal';
    // The store's message deletes, counted where they are made: how many were in flight at most, and
    // in which order the messages went.
    const jsm = await jetstreamManager(nc);
    const deleteMessage = jsm.streams.deleteMessage.bind(jsm.streams);
    let outstanding = 0;
    let most = 0;
    const order: number[] = [];
    jsm.streams.deleteMessage = async (stream, seq, erase) => {
      most = Math.max(most, ++outstanding);
      order.push(seq);
      try {
        return await deleteMessage(stream, seq, erase);
      } finally {
        outstanding--;
      }
    };
    const removing = await ObjectStore.open(nc, jsm, bucket);
    const names = Array.from({ length: 40 }, (_, i) => `gone-${i}`);
    const history = new Map<string, number[]>();
    for (const name of names) {
      const key = objectKey('configmaps', 'default', name);
      const c = await removing.create(key, cm(name), what(name));
      const u = await removing.update(key, { ...cm(name), data: { v: '2' } }, c.revision, what(name));
      const d = await removing.delete(key, u.object, u.revision, what(name));
      history.set(name, [c.revision, u.revision, d.revision]);
    }
    // gone-0 is created again after its deletion: its history stays.
    const back = objectKey('configmaps', 'default', 'gone-0');
    await removing.create(back, cm('gone-0'), what('gone-0'));
    assert.equal(await removing.compact(Date.now() + TOMBSTONE_TTL_MS + 1000, TOMBSTONE_TTL_MS, true), names.length - 1);
    assert.ok(most > 1, `the compaction removed its ${names.length - 1} keys one at a time (at most ${most} deletes outstanding)`);
    for (const name of names.slice(1)) {
      const seqs = history.get(name)!;
      assert.deepEqual(
        order.filter((seq) => seqs.includes(seq)),
        seqs,
        `${name}: oldest first, the tombstone last`,
      );
    }
    assert.ok(!order.some((seq) => history.get('gone-0')!.includes(seq)), 'nothing of the key created again is deleted');
    const si = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `$KV.${bucket}.configmaps.>` });
    assert.deepEqual(Object.keys(si.state.subjects ?? {}), [`$KV.${bucket}.${back}`], 'only the key created again has messages left');
    assert.equal((await removing.get(back))?.object.metadata?.['name'], 'gone-0');
  });
  it('between full scans a compaction reads only the tombstones it knows; a full scan finds another process`s', async () => {
    const reads = { n: 0 };
    const sub = nc.subscribe('$JS.API.DIRECT.GET.KV_sl_api_test.>', { callback: () => void reads.n++ });
    const other = await ObjectStore.open(nc, await jetstreamManager(nc), 'sl_api_test');
    try {
      for (let i = 0; i < 30; i++) await store.create(objectKey('configmaps', 'default', `live-${i}`), cm(`live-${i}`), what(`live-${i}`));
      await compactAll(); // whatever the schedule: the store's first pass is a full one
      await createThenDelete('mine');
      const elsewhere = await other.create(objectKey('configmaps', 'default', 'theirs'), cm('theirs'), what('theirs'));
      await other.delete(elsewhere.key, elsewhere.object, elsewhere.revision, what('theirs'));
      await nc.flush();
      reads.n = 0;
      assert.equal(await store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000, TOMBSTONE_TTL_MS, false), 1, 'its own tombstone');
      await nc.flush();
      assert.ok(reads.n < 10, `a pass between full scans made ${reads.n} reads (its tombstone and its messages), not one per live object (30)`);
      reads.n = 0;
      assert.equal(await store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000, TOMBSTONE_TTL_MS, false), 0, "another process's tombstone waits for a full scan");
      await nc.flush();
      assert.equal(reads.n, 0);
      assert.equal(await store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000, TOMBSTONE_TTL_MS, true), 1);
    } finally {
      sub.unsubscribe();
    }
  });
});
