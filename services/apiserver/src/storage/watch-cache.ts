/**
 * An in-memory copy of the objects under one key filter, kept current by a watch of the store and
 * by this process's own writes, so checks and reads before a write need no store read.
 *
 * Models kube-apiserver's watch cache (storage/cacher: the object GuaranteedUpdate tries first,
 * `cachedExistingObject`) and the NamespaceLifecycle admission's namespace informer. The copy may
 * lag the store: callers use it only where a lag is harmless — an update whose compare-and-swap
 * on the cached revision refuses a stale object and is retried with a fresh read, or a check that
 * falls back to a read when the cache does not know the key.
 *
 * Entries only move forward in revision: the watch replays older revisions after a relist, and
 * this process's writes are recorded before the watch delivers them. A deletion is remembered (as a
 * tombstone with its revision) until the watch delivers it, so an older event does not bring the
 * object back.
 *
 * The cache also serves watches (the cacher's watchers): it keeps its store watch's last
 * {@link EVENT_CAPACITY} events, so a watch from a revision at or after the oldest one it can
 * replay gets those after the revision and then every event as the store watch delivers it — one
 * store watch (one JetStream consumer) for all of them, as kube-apiserver keeps one etcd watch per
 * resource. A watch from further back is not served here (the caller watches the store, which
 * answers 410 Gone when the revision was compacted). A served watch ends, without an error, when
 * the cache's store watch ends (the cache lists again) or when its reader falls more than
 * {@link WATCHER_BACKLOG} events behind; its client watches again from the last revision it got.
 */
import { sleep } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { keyMatcher } from './key-matcher.js';
import type { ObjectStore, Stored, StoreEvent } from './object-store.js';

/** How long after a watch ended the cache lists again. */
const RELIST_DELAY_MS = 1000;

/** Events kept for watches that start behind the cache's position. */
export const EVENT_CAPACITY = 1024;

/** Events a served watch may have waiting before it is ended (its reader is not keeping up). */
export const WATCHER_BACKLOG = 10_000;

interface Entry {
  readonly revision: number;
  /** undefined: deleted at `revision`. */
  readonly stored: Stored | undefined;
}

/** A watch the cache serves: events waiting for its reader, and how to wake it. */
interface Watcher {
  readonly matches: (key: string) => boolean;
  /** The revision it watches from: events at or before it are not its (the cache may still be behind it). */
  readonly from: number;
  readonly queue: StoreEvent[];
  /** How many of `queue` the reader has taken (the queue is emptied when it has taken all). */
  read: number;
  /** No events are added any more: the reader yields what is queued, then ends. */
  ended: boolean;
  wake: (() => void) | undefined;
}

/** The cache of one key filter (`pods.>`). Objects it returns are shared: callers must not mutate them. */
export class WatchCache {
  readonly #store: ObjectStore;
  readonly #filter: string;
  readonly #prefix: string;
  readonly #logger: Logger | undefined;
  readonly #entries = new Map<string, Entry>();
  /** True while a watch runs from a completed listing: only then are entries current. */
  #ready = false;
  readonly #readyWaiters = new Set<() => void>();
  /** The store watch's last events, oldest first, from index `#first` on (a ring over the array). */
  #events: StoreEvent[] = [];
  #first = 0;
  /** The oldest revision a served watch may start from: every event after it is in `#events`. */
  #horizon = Number.POSITIVE_INFINITY;
  readonly #watchers = new Set<Watcher>();

  /**
   * Starts listing and watching `prefix` (a resource name: `pods` caches the keys `pods.>`) until
   * `signal` aborts.
   */
  constructor(store: ObjectStore, resource: string, signal: AbortSignal, logger?: Logger) {
    this.#store = store;
    this.#prefix = `${resource}.`;
    this.#filter = `${resource}.>`;
    this.#logger = logger;
    void this.#run(signal);
  }

  /** Whether `key` is one this cache holds. */
  covers(key: string): boolean {
    return key.startsWith(this.#prefix);
  }

  /** True once the first listing completed and the watch runs (false again while relisting). */
  get ready(): boolean {
    return this.#ready;
  }

  /** Resolves when the cache is ready or `signal` aborts. */
  whenReady(signal: AbortSignal): Promise<void> {
    if (this.#ready || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#readyWaiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#readyWaiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * The cached live object at `key`; undefined when the cache is not ready, does not know the key
   * or knows it deleted (the caller reads the store: a key created by another process may not have
   * arrived yet).
   */
  get(key: string): Stored | undefined {
    return this.#ready ? this.#entries.get(key)?.stored : undefined;
  }

  /** Every cached live object, or undefined while the cache is not ready. */
  values(): Stored[] | undefined {
    if (!this.#ready) return undefined;
    const out: Stored[] = [];
    for (const e of this.#entries.values()) if (e.stored !== undefined) out.push(e.stored);
    return out;
  }

  /**
   * The events under `filter` (a store key filter such as `pods.default.*`) after `fromRevision`,
   * until `signal` aborts or the watch ends (see the class comment); undefined when the cache
   * cannot serve it (not ready, or `fromRevision` is older than the events it keeps) and the
   * caller watches the store. The watch is registered before this returns, so no event is lost
   * between the call and the first read. Objects are shared: not to be changed.
   */
  watch(filter: string, fromRevision: number, signal: AbortSignal): AsyncGenerator<StoreEvent> | undefined {
    if (!this.#ready || fromRevision < this.#horizon || signal.aborted) return undefined;
    const w: Watcher = { matches: keyMatcher(filter), from: fromRevision, queue: [], read: 0, ended: false, wake: undefined };
    for (let i = this.#first; i < this.#events.length; i++) {
      const e = this.#events[i]!;
      if (e.revision > fromRevision && w.matches(e.key)) w.queue.push(e);
    }
    this.#watchers.add(w);
    const end = (): void => this.#end(w);
    signal.addEventListener('abort', end, { once: true });
    return this.#serve(w, signal, end);
  }

  async *#serve(w: Watcher, signal: AbortSignal, end: () => void): AsyncGenerator<StoreEvent> {
    try {
      for (;;) {
        while (w.read < w.queue.length) yield w.queue[w.read++]!;
        w.queue.length = 0;
        w.read = 0;
        if (w.ended) return;
        await new Promise<void>((resolve) => (w.wake = resolve));
      }
    } finally {
      signal.removeEventListener('abort', end);
      this.#end(w);
    }
  }

  #end(w: Watcher): void {
    w.ended = true;
    this.#watchers.delete(w);
    this.#wakeUp(w);
  }

  #wakeUp(w: Watcher): void {
    const wake = w.wake;
    w.wake = undefined;
    wake?.();
  }

  /** The number of watches this cache serves now. */
  get watchers(): number {
    return this.#watchers.size;
  }

  /** An event of the store watch: kept for watches that start behind it, and given to every served watch of its key. */
  #publish(e: StoreEvent): void {
    this.#events.push(e);
    if (this.#events.length - this.#first > EVENT_CAPACITY) {
      this.#horizon = this.#events[this.#first]!.revision;
      this.#first++;
      // Compact the ring's array once its dropped front is as long as what it keeps.
      if (this.#first >= EVENT_CAPACITY) {
        this.#events = this.#events.slice(this.#first);
        this.#first = 0;
      }
    }
    for (const w of this.#watchers) {
      if (e.revision <= w.from || !w.matches(e.key)) continue;
      if (w.queue.length - w.read >= WATCHER_BACKLOG) {
        this.#logger?.info('ending a watch that fell behind', { filter: this.#filter, backlog: w.queue.length - w.read });
        this.#end(w);
        continue;
      }
      w.queue.push(e);
      this.#wakeUp(w);
    }
  }

  /** The store watch ended: served watches end (their clients watch again) and no revision can be served until the next listing. */
  #endWatches(): void {
    for (const w of [...this.#watchers]) this.#end(w);
    this.#events = [];
    this.#first = 0;
    this.#horizon = Number.POSITIVE_INFINITY;
  }

  /** Records a write this process made (or a read it did): `stored` at its revision, or the deletion of `key` at `revision`. */
  observe(key: string, stored: Stored | undefined, revision: number): void {
    const cur = this.#entries.get(key);
    if (cur !== undefined && cur.revision >= revision) return;
    this.#entries.set(key, { revision, stored });
  }

  /** An event of the watch, in revision order. */
  #apply(key: string, stored: Stored | undefined, revision: number): void {
    const cur = this.#entries.get(key);
    if (cur === undefined || cur.revision < revision) {
      if (stored === undefined) this.#entries.delete(key);
      else this.#entries.set(key, { revision, stored });
      return;
    }
    // Already recorded from this process's write: a tombstone is no longer needed once the watch delivered it.
    if (cur.stored === undefined && cur.revision === revision) this.#entries.delete(key);
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const listed = await this.#store.list(this.#filter);
        this.#relisted(listed.items, listed.revision);
        this.#horizon = listed.revision;
        this.#ready = true;
        for (const wake of [...this.#readyWaiters]) wake();
        for await (const e of this.#store.watch(this.#filter, listed.revision, signal)) {
          const key = e.key;
          this.#apply(key, e.type === 'DELETED' ? undefined : { key, object: e.object, revision: e.revision }, e.revision);
          this.#publish(e);
        }
      } catch (e) {
        if (!signal.aborted) this.#logger?.info('watch cache ended; listing again', { filter: this.#filter, err: e instanceof Error ? e.message : String(e) });
      }
      this.#ready = false;
      this.#endWatches();
      await sleep(RELIST_DELAY_MS, signal);
    }
  }

  /** Takes a listing at `revision`: keys it lacks are gone unless recorded after it. */
  #relisted(items: readonly Stored[], revision: number): void {
    const listed = new Set<string>();
    for (const s of items) {
      listed.add(s.key);
      this.#apply(s.key, s, s.revision);
    }
    for (const [key, e] of this.#entries) if (!listed.has(key) && e.revision <= revision) this.#entries.delete(key);
  }
}
