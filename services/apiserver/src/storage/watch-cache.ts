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
 */
import { sleep } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { ObjectStore, Stored } from './object-store.js';

/** How long after a watch ended the cache lists again. */
const RELIST_DELAY_MS = 1000;

interface Entry {
  readonly revision: number;
  /** undefined: deleted at `revision`. */
  readonly stored: Stored | undefined;
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
        this.#ready = true;
        for (const wake of [...this.#readyWaiters]) wake();
        for await (const e of this.#store.watch(this.#filter, listed.revision, signal)) {
          const key = e.key;
          this.#apply(key, e.type === 'DELETED' ? undefined : { key, object: e.object, revision: e.revision }, e.revision);
        }
      } catch (e) {
        if (!signal.aborted) this.#logger?.info('watch cache ended; listing again', { filter: this.#filter, err: e instanceof Error ? e.message : String(e) });
      }
      this.#ready = false;
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
