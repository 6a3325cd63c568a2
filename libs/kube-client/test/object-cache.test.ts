/**
 * The per-object cache's reflector logic against a scripted list+watch: first-list wait, NotFound,
 * watch events and change listeners, bookmarks, 410 relist, error backoff, holders and idle stop.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { ObjectCache, ObjectCacheError, isNotFound, type DataObject, type ObjectListWatch, type ObjectRef, type WatchEvent } from '../src/index.js';

const quiet = { info: () => undefined, warn: () => undefined };

/** A fake API server: objects by `ns/name`, a revision counter, open watches that get each change. */
class FakeApi implements ObjectListWatch {
  readonly objects = new Map<string, DataObject>();
  rv = 10;
  lists: string[] = [];
  watches: Array<{ ref: ObjectRef; from: string }> = [];
  failLists = 0;
  /** The next watch sends 410 Gone right away. */
  goneOnce = false;
  listDelayMs = 0;
  readonly #open = new Set<{ ref: ObjectRef; send: (e: WatchEvent) => void; end: () => void }>();

  put(namespace: string, name: string, data: Record<string, string> | undefined): void {
    const key = `${namespace}/${name}`;
    const existed = this.objects.has(key);
    this.rv++;
    const object: DataObject = { metadata: { namespace, name, resourceVersion: String(this.rv) }, data: data ?? {} };
    if (data === undefined) this.objects.delete(key);
    else this.objects.set(key, object);
    for (const w of this.#open) {
      if (w.ref.namespace === namespace && w.ref.name === name) w.send({ type: data === undefined ? 'DELETED' : existed ? 'MODIFIED' : 'ADDED', object });
    }
  }
  bookmark(): void {
    this.rv++;
    for (const w of this.#open) w.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(this.rv) } } });
  }
  /** Ends every open watch (as a server timeout does). */
  endWatches(): void {
    for (const w of [...this.#open]) w.end();
  }
  async list(ref: ObjectRef): Promise<{ object: DataObject | undefined; resourceVersion: string }> {
    this.lists.push(`${ref.kind}:${ref.namespace}/${ref.name}`);
    if (this.listDelayMs > 0) await new Promise((r) => setTimeout(r, this.listDelayMs));
    if (this.failLists > 0) {
      this.failLists--;
      throw new Error('connection refused');
    }
    return { object: this.objects.get(`${ref.namespace}/${ref.name}`), resourceVersion: String(this.rv) };
  }
  watch(ref: ObjectRef, from: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    this.watches.push({ ref, from });
    return new Promise((resolve, reject) => {
      const w = {
        ref,
        send: (e: WatchEvent): void => {
          try {
            onEvent(e);
          } catch (err) {
            this.#open.delete(w);
            reject(err);
          }
        },
        end: (): void => {
          this.#open.delete(w);
          resolve();
        },
      };
      this.#open.add(w);
      signal.addEventListener('abort', () => w.end(), { once: true });
      if (this.goneOnce) {
        this.goneOnce = false;
        queueMicrotask(() => w.send({ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } }));
      }
    });
  }
}

const until = async (cond: () => boolean, ms = 5000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('ObjectCache', () => {
  let cache: ObjectCache | undefined;
  afterEach(async () => {
    await cache?.close();
  });

  it('get lists the object once (by name), then serves it from the watch; a missing one is NotFound with the API text', async () => {
    const api = new FakeApi();
    api.put('ns', 'cfg', { a: '1' });
    cache = new ObjectCache({ kind: 'configmap', listWatch: api, logger: quiet });
    assert.deepEqual((await cache.get('ns', 'cfg')).data, { a: '1' });
    assert.deepEqual((await cache.get('ns', 'cfg')).data, { a: '1' });
    assert.deepEqual(api.lists, ['configmap:ns/cfg']);
    await assert.rejects(cache.get('ns', 'nope'), (e: unknown) => isNotFound(e) && (e as Error).message === 'configmap "nope" not found');
    const secrets = new ObjectCache({ kind: 'secret', listWatch: api, logger: quiet });
    await assert.rejects(secrets.get('ns', 'x'), { message: 'secret "x" not found' });
    await secrets.close();
  });

  it('watch events update the object and call the change listeners; a bookmark moves the resourceVersion only', async () => {
    const api = new FakeApi();
    cache = new ObjectCache({ kind: 'configmap', listWatch: api, logger: quiet });
    const changes: string[] = [];
    cache.onChange((r) => changes.push(`${r.kind}:${r.namespace}/${r.name}`));
    await assert.rejects(cache.get('ns', 'cfg'), isNotFound);
    await until(() => api.watches.length === 1);
    api.put('ns', 'cfg', { a: '1' });
    assert.deepEqual((await cache.get('ns', 'cfg')).data, { a: '1' });
    api.put('ns', 'cfg', { a: '2' });
    assert.deepEqual((await cache.get('ns', 'cfg')).data, { a: '2' });
    api.bookmark();
    api.endWatches();
    await until(() => api.watches.length === 2);
    assert.equal(api.watches[1]?.from, String(api.rv), 'the next watch starts from the bookmark');
    api.put('ns', 'cfg', undefined);
    await assert.rejects(cache.get('ns', 'cfg'), isNotFound);
    assert.deepEqual(changes, ['configmap:ns/cfg', 'configmap:ns/cfg', 'configmap:ns/cfg']);
    assert.deepEqual(api.lists, ['configmap:ns/cfg'], 'no relist for a plain watch end');
  });

  it('a 410 Gone relists; a list error backs off and retries; a get waits for the first list', async () => {
    const api = new FakeApi();
    api.put('ns', 'cfg', { a: '1' });
    api.failLists = 2;
    cache = new ObjectCache({ kind: 'configmap', listWatch: api, logger: quiet, initialBackoffMs: 20, maxBackoffMs: 40 });
    assert.deepEqual((await cache.get('ns', 'cfg')).data, { a: '1' });
    assert.equal(api.lists.length, 3);
    api.goneOnce = true;
    api.endWatches();
    await until(() => api.lists.length === 4);
    api.put('ns', 'cfg', { a: '3' });
    await until(() => cache?.watched().length === 1 && api.watches.length >= 3);
    assert.deepEqual((await cache.get('ns', 'cfg')).data, { a: '3' });
  });

  it('a get fails NotSynced with the kubelet text when the first list does not complete in time', async () => {
    const api = new FakeApi();
    api.failLists = 1000;
    cache = new ObjectCache({ kind: 'secret', listWatch: api, logger: quiet, syncTimeoutMs: 100, initialBackoffMs: 10, maxBackoffMs: 10 });
    await assert.rejects(
      cache.get('ns', 's'),
      (e: unknown) => e instanceof ObjectCacheError && e.code === 'NotSynced' && e.message === 'failed to sync secret cache: timed out waiting for the condition',
    );
  });

  it('an immutable object is not watched once it is had', async () => {
    const api = new FakeApi();
    api.objects.set('ns/fixed', { metadata: { namespace: 'ns', name: 'fixed', resourceVersion: '5' }, data: { a: '1' }, immutable: true });
    cache = new ObjectCache({ kind: 'configmap', listWatch: api, logger: quiet });
    assert.deepEqual((await cache.get('ns', 'fixed')).data, { a: '1' });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(api.watches.length, 0);
    assert.deepEqual((await cache.get('ns', 'fixed')).data, { a: '1' });
    assert.equal(api.lists.length, 1);
  });

  it('holders keep an object watched; an idle unheld one is stopped', async () => {
    const api = new FakeApi();
    let now = 0;
    cache = new ObjectCache({ kind: 'configmap', listWatch: api, logger: quiet, idleMs: 1000, now: () => now });
    cache.hold('pod-1', [
      { kind: 'configmap', namespace: 'ns', name: 'held' },
      { kind: 'secret', namespace: 'ns', name: 'other-kind' },
    ]);
    await assert.rejects(cache.get('ns', 'read-once'), isNotFound);
    assert.deepEqual(cache.holders('ns', 'held'), ['pod-1']);
    assert.deepEqual(
      cache
        .watched()
        .map((r) => r.name)
        .sort(),
      ['held', 'read-once'],
    );
    now = 5000;
    await until(() => cache?.watched().length === 1, 5000);
    assert.deepEqual(
      cache.watched().map((r) => r.name),
      ['held'],
    );
    cache.release('pod-1');
    assert.deepEqual(cache.holders('ns', 'held'), []);
    now = 10_000;
    await until(() => cache?.watched().length === 0, 5000);
  });
});
