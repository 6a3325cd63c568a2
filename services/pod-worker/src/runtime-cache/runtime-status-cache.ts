/**
 * The pod-worker's in-memory view of the pleg cache (`sl_runtime`), fed by one KV watch per
 * process, answering GetNewerThan for every sync.
 *
 * Models pkg/kubelet/container/cache.go (cache.GetNewerThan): a read is satisfied when the pod's
 * entry or the global relist mark is newer than the caller's last sync. The kubelet blocks until
 * then; here the wait is bounded (`maxWaitMs`) and the sync proceeds with what the cache has, with
 * a warning, so a stopped pleg cannot wedge every pod worker.
 */
import type { RuntimeCacheEntry, RuntimePodStatus } from '@splitlet/api';
import type { CachedRuntimeStatus, Clock, Log, RuntimeStatusSource } from '../ports.js';

/** An empty runtime status: the runtime does not know the pod. */
export function emptyRuntimeStatus(uid: string, name = '', namespace = ''): RuntimePodStatus {
  return { uid, name, namespace, ips: [], sandboxes: [], containers: [] };
}

interface Waiter {
  uid: string;
  after: number;
  resolve: (r: CachedRuntimeStatus) => void;
}

/** Options of {@link RuntimeStatusCache}. */
export interface RuntimeStatusCacheOptions {
  readonly clock: Clock;
  readonly logger: Log;
  /** The longest a sync waits for a newer cache. @default 5000 */
  readonly maxWaitMs?: number;
}

/**
 * The runtime cache. `apply*` are called by the watch adapter; `getNewerThan` by syncs.
 * Not safe to feed from two watches.
 */
export class RuntimeStatusCache implements RuntimeStatusSource {
  readonly #entries = new Map<string, RuntimeCacheEntry>();
  readonly #waiters = new Set<Waiter>();
  readonly #o: RuntimeStatusCacheOptions;
  #relistMark = 0;
  #caughtUp = false;
  #lastUpdate = 0;

  constructor(options: RuntimeStatusCacheOptions) {
    this.#o = options;
  }

  /** The relist mark (cache-wide time) last seen; 0 before the first. */
  get relistMark(): number {
    return this.#relistMark;
  }

  /** True once the watch replayed the bucket's current values. */
  get caughtUp(): boolean {
    return this.#caughtUp;
  }

  /** Local time of the last entry or mark received (health by progress). */
  get lastUpdate(): number {
    return this.#lastUpdate;
  }

  /** Pods the cache knows. */
  get size(): number {
    return this.#entries.size;
  }

  /** A pod's entry changed (`entry`) or was deleted (`null`: the runtime no longer has it). */
  applyEntry(uid: string, entry: RuntimeCacheEntry | null): void {
    this.#lastUpdate = this.#o.clock.now();
    if (entry === null) this.#entries.delete(uid);
    else {
      const cur = this.#entries.get(uid);
      if (!cur || cur.timestamp <= entry.timestamp) this.#entries.set(uid, entry);
    }
    this.#wake();
  }

  /** The relist mark moved: every pod's cached status is valid as of `timestamp`. */
  applyRelistMark(timestamp: number): void {
    this.#lastUpdate = this.#o.clock.now();
    if (timestamp > this.#relistMark) this.#relistMark = timestamp;
    this.#wake();
  }

  /** The watch finished replaying the current values. */
  markCaughtUp(): void {
    this.#caughtUp = true;
    this.#wake();
  }

  /** The newest cache status of `uid` without waiting. */
  peek(uid: string): CachedRuntimeStatus {
    const e = this.#entries.get(uid);
    const timestamp = Math.max(e?.timestamp ?? 0, this.#relistMark);
    return { status: e?.status ?? emptyRuntimeStatus(uid), timestamp, stale: false, ...(e?.episode !== undefined ? { episode: e.episode } : {}) };
  }

  #satisfied(uid: string, after: number): CachedRuntimeStatus | undefined {
    if (!this.#caughtUp) return undefined;
    const e = this.#entries.get(uid);
    if ((e !== undefined && e.timestamp > after) || this.#relistMark > after) {
      return {
        status: e?.status ?? emptyRuntimeStatus(uid),
        timestamp: Math.max(e?.timestamp ?? 0, this.#relistMark),
        stale: false,
        ...(e?.episode !== undefined ? { episode: e.episode } : {}),
      };
    }
    return undefined;
  }

  #wake(): void {
    for (const w of this.#waiters) {
      const r = this.#satisfied(w.uid, w.after);
      if (r) {
        this.#waiters.delete(w);
        w.resolve(r);
      }
    }
  }

  getNewerThan(uid: string, after: number, signal: AbortSignal): Promise<CachedRuntimeStatus> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const now = this.#satisfied(uid, after);
    if (now) return Promise.resolve(now);
    const maxWait = this.#o.maxWaitMs ?? 5000;
    return new Promise((resolve, reject) => {
      const finish = (): void => {
        this.#waiters.delete(w);
        this.#o.clock.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const w: Waiter = {
        uid,
        after,
        resolve: (r) => {
          finish();
          resolve(r);
        },
      };
      const onAbort = (): void => {
        finish();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const timer = this.#o.clock.setTimeout(() => {
        finish();
        const p = this.peek(uid);
        this.#o.logger.warn('runtime cache not newer than the last sync, proceeding with what it has', {
          uid,
          lastSyncTime: after,
          cacheTime: p.timestamp,
          waitedMs: maxWait,
        });
        resolve({ ...p, stale: true });
      }, maxWait);
      this.#waiters.add(w);
    });
  }
}
