/**
 * The watch cache's served watches, over a scripted store watch: the revisions it can serve as its
 * kept events roll over, a watch that falls behind is ended, and the end of the store watch ends
 * every served watch and serves none until the next listing. (Against a real nats-server, with the
 * REST storage's selectors: watch-cache.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '@splitlet/testkit';
import type { ObjectStore, StoreEvent } from '../src/storage/object-store.js';
import { EVENT_CAPACITY, WATCHER_BACKLOG, WatchCache } from '../src/storage/watch-cache.js';

/** A store whose listings answer at `revision` and whose watches deliver what `push` gives them. */
class ScriptedStore {
  revision = 100;
  lists = 0;
  #feed: ((e: StoreEvent | Error) => void) | undefined;

  list(): Promise<{ items: never[]; revision: number }> {
    this.lists++;
    return Promise.resolve({ items: [], revision: this.revision });
  }

  async *watch(_filter: string, _from: number, signal: AbortSignal): AsyncGenerator<StoreEvent> {
    const queue: (StoreEvent | Error)[] = [];
    let wake: (() => void) | undefined;
    this.#feed = (e) => {
      queue.push(e);
      wake?.();
    };
    signal.addEventListener('abort', () => wake?.(), { once: true });
    while (!signal.aborted) {
      const e = queue.shift();
      if (e === undefined) {
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      if (e instanceof Error) throw e;
      yield e;
    }
  }

  get watching(): boolean {
    return this.#feed !== undefined;
  }

  /** A change of `pods.<ns>.<name>` at the next revision. */
  push(ns: string, name: string): StoreEvent {
    const e: StoreEvent = { type: 'MODIFIED', key: `pods.${ns}.${name}`, object: { metadata: { name, namespace: ns } }, revision: ++this.revision };
    this.#feed!(e);
    return e;
  }

  fail(): void {
    this.#feed!(new Error('the store watch broke'));
    this.#feed = undefined;
  }
}

async function take(events: AsyncGenerator<StoreEvent>, n: number): Promise<number[]> {
  const out: number[] = [];
  if (n === 0) return out;
  for await (const e of events) if (out.push(e.revision) === n) break;
  return out;
}

async function started(): Promise<{ store: ScriptedStore; cache: WatchCache; ctl: AbortController }> {
  const store = new ScriptedStore();
  const ctl = new AbortController();
  const cache = new WatchCache(store as unknown as ObjectStore, 'pods', ctl.signal);
  await cache.whenReady(ctl.signal);
  await eventually(() => store.watching, { timeoutMs: 10_000 });
  return { store, cache, ctl };
}

describe('WatchCache: served watches', () => {
  it('serves from its listing on; older revisions are the store`s', async () => {
    const { store, cache, ctl } = await started();
    assert.equal(cache.watch('pods.>', 99, ctl.signal), undefined, 'before the listing (revision 100)');
    const w = cache.watch('pods.default.*', 100, ctl.signal)!;
    store.push('other', 'x');
    const mine = store.push('default', 'a');
    assert.deepEqual(await take(w, 1), [mine.revision], 'only its namespace');
    ctl.abort();
  });

  it('keeps the last EVENT_CAPACITY events: a watch from before the oldest one kept is not served', async () => {
    const { store, cache, ctl } = await started();
    const first = store.revision;
    const all = cache.watch('pods.>', first, ctl.signal)!;
    for (let i = 0; i < EVENT_CAPACITY + 10; i++) store.push('default', `p${i}`);
    // Read to the end: the cache has taken every event.
    assert.equal((await take(all, EVENT_CAPACITY + 10)).length, EVENT_CAPACITY + 10);
    assert.equal(cache.watch('pods.>', first + 9, ctl.signal), undefined, 'its event was dropped');
    const from = cache.watch('pods.>', first + 10, ctl.signal)!;
    const got = await take(from, EVENT_CAPACITY);
    assert.equal(got[0], first + 11);
    assert.equal(got.at(-1), store.revision);
    ctl.abort();
  });

  it('ends a watch whose reader falls WATCHER_BACKLOG events behind; the others go on', async () => {
    const { store, cache, ctl } = await started();
    const slow = cache.watch('pods.>', store.revision, ctl.signal)!;
    const other = cache.watch('pods.slow.*', store.revision, ctl.signal)!;
    for (let i = 0; i <= WATCHER_BACKLOG; i++) store.push('default', `p${i}`);
    await eventually(() => cache.watchers === 1, { timeoutMs: 30_000 });
    let n = 0;
    for await (const _ of slow) n++;
    assert.equal(n, WATCHER_BACKLOG, 'what it had queued, then the end');
    const e = store.push('slow', 's');
    assert.deepEqual(await take(other, 1), [e.revision]);
    ctl.abort();
  });

  it('the store watch`s end ends every served watch; none is served until the cache has listed again', async () => {
    const { store, cache, ctl } = await started();
    const w = cache.watch('pods.>', store.revision, ctl.signal)!;
    const e = store.push('default', 'a');
    store.fail();
    assert.deepEqual(await take(w, 2), [e.revision], 'the event before the end, then the end');
    assert.equal(cache.watch('pods.>', e.revision, ctl.signal), undefined, 'relisting');
    store.revision = 200;
    await cache.whenReady(ctl.signal);
    await eventually(() => store.lists === 2 && cache.ready, { timeoutMs: 10_000 });
    assert.equal(cache.watch('pods.>', e.revision, ctl.signal), undefined, 'a revision before the new listing');
    assert.notEqual(cache.watch('pods.>', 200, ctl.signal), undefined);
    ctl.abort();
  });

  it('a watch from a revision the cache has not reached yet gets only the events after it', async () => {
    const { store, cache, ctl } = await started();
    const at = store.revision;
    const ahead = cache.watch('pods.>', at + 2, ctl.signal)!;
    store.push('default', 'a');
    store.push('default', 'b');
    const c = store.push('default', 'c');
    assert.deepEqual(await take(ahead, 1), [c.revision]);
    ctl.abort();
  });

  it('an aborted watch ends and is forgotten', async () => {
    const { store, cache, ctl } = await started();
    const mine = new AbortController();
    const w = cache.watch('pods.>', store.revision, mine.signal)!;
    assert.equal(cache.watchers, 1);
    mine.abort();
    assert.equal(cache.watchers, 0);
    assert.deepEqual(await take(w, 1), []);
    ctl.abort();
  });
});
