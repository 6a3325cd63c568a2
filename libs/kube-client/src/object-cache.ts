/**
 * A cache of single API objects (configMaps, secrets) kept current by one list+watch per object, as
 * the kubelet's watch-based managers do: the node only ever reads the objects its pods reference,
 * each through a field selector on its name, and never lists a whole namespace.
 *
 * Models pkg/kubelet/util/manager/watch_based_manager.go (objectCache: a reflector per object, Get
 * waiting for its first sync, NotFound when the synced store has no object, idle reflectors
 * stopped) on client-go's reflector (list, watch from the list's resourceVersion, relist on 410
 * Gone, backoff on errors).
 *
 * ```
 * get(ns, name) ─► reflector for ns/name (started on first use) ─► wait for its first list
 *                   (syncTimeoutMs) ─► the object | NotFound `configmap "x" not found`
 * reflector: LIST ?fieldSelector=metadata.name=x ─► WATCH from its resourceVersion ─► ADDED /
 *            MODIFIED / DELETED update the object, BOOKMARK the resourceVersion, a change calls
 *            the change listeners ─► watch ended: WATCH again; 410 Gone: LIST again;
 *            any error: backoff (1 s doubling to 30 s), LIST again
 * idle: no holder and no get for idleMs ─► the reflector stops
 * immutable object (`immutable: true`): the reflector stops once it has it (it cannot change)
 * ```
 *
 * Objects' data never reaches a log line: only kinds, namespaces, names and resourceVersions do.
 */

/** The fields of a configMap or secret the node reads. */
export interface DataObject {
  readonly metadata: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string; readonly uid?: string };
  /** ConfigMap: text values; Secret: base64 values. */
  readonly data?: Readonly<Record<string, string>>;
  /** ConfigMap only: base64 values. */
  readonly binaryData?: Readonly<Record<string, string>>;
  /** Secret only, e.g. `kubernetes.io/dockerconfigjson`. */
  readonly type?: string;
  readonly immutable?: boolean;
}

/** The kinds the node reads, as the kubelet names their group resource in errors. */
export type ObjectKind = 'configmap' | 'secret';

/** An object's identity. */
export interface ObjectRef {
  readonly kind: ObjectKind;
  readonly namespace: string;
  readonly name: string;
}

/** How an object cache failed a get. */
export type ObjectCacheErrorCode = 'NotFound' | 'NotSynced' | 'Stopped';

/**
 * A failed get: `NotFound` with the API's text (`configmap "x" not found`), `NotSynced` when the
 * object's first list did not complete in time (`failed to sync configmap cache: timed out waiting
 * for the condition`), `Stopped` after close.
 */
export class ObjectCacheError extends Error {
  override readonly name = 'ObjectCacheError';
  constructor(
    readonly code: ObjectCacheErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** True for the NotFound error of an object cache. */
export function isNotFound(e: unknown): boolean {
  return e instanceof ObjectCacheError && e.code === 'NotFound';
}

/** One watch event. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR' | (string & {});
  readonly object: unknown;
}

/** The list and watch of one object (by field selector on its name); the transport of a cache. */
export interface ObjectListWatch {
  /** The object (undefined when there is none) and the list's resourceVersion. */
  list(ref: ObjectRef, signal: AbortSignal): Promise<{ object: DataObject | undefined; resourceVersion: string }>;
  /**
   * Watches from `resourceVersion` (bookmarks on), calling `onEvent` for each event in order, until
   * the watch ends (resolves) or fails (rejects), or `signal` aborts (resolves). When `onEvent`
   * throws, the watch is stopped and rejects with that error.
   */
  watch(ref: ObjectRef, resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** What the cache logs (the telemetry Logger fits). */
export interface CacheLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Options of {@link ObjectCache}. */
export interface ObjectCacheOptions {
  readonly kind: ObjectKind;
  readonly listWatch: ObjectListWatch;
  readonly logger: CacheLogger;
  /** How long a get waits for the object's first list. @default 10000 */
  readonly syncTimeoutMs?: number;
  /** A reflector nobody holds and nobody read for this long is stopped. @default 300000 */
  readonly idleMs?: number;
  /** @default 1000 */
  readonly initialBackoffMs?: number;
  /** @default 30000 */
  readonly maxBackoffMs?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** Where a cached object stands. */
interface Entry {
  readonly ref: ObjectRef;
  readonly abort: AbortController;
  synced: boolean;
  object: DataObject | undefined;
  resourceVersion: string;
  lastAccess: number;
  readonly holders: Set<string>;
  readonly waiters: Set<() => void>;
  /** The reflector loop; settles after abort. */
  done: Promise<void>;
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

/** Sleeps `ms` or until `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A watch ended with an ERROR event of code 410: the resourceVersion is too old. */
class GoneError extends Error {}

/** The per-object cache of one kind; see the file comment. */
export class ObjectCache {
  readonly #o: ObjectCacheOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #listeners = new Set<(ref: ObjectRef) => void>();
  readonly #sweeper: ReturnType<typeof setInterval>;
  #closed = false;

  constructor(options: ObjectCacheOptions) {
    this.#o = options;
    const idle = options.idleMs ?? 300_000;
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(1000, Math.min(60_000, Math.floor(idle / 2))));
    this.#sweeper.unref();
  }

  get kind(): ObjectKind {
    return this.#o.kind;
  }

  /**
   * The object `namespace/name`, once its reflector has listed it. Rejects with
   * {@link ObjectCacheError} NotFound / NotSynced / Stopped.
   */
  async get(namespace: string, name: string): Promise<DataObject> {
    if (this.#closed) throw new ObjectCacheError('Stopped', `${this.#o.kind} cache is stopped`);
    const e = this.#ensure(namespace, name);
    e.lastAccess = this.#now();
    if (!e.synced) await this.#waitSynced(e);
    if (!e.synced) throw new ObjectCacheError('NotSynced', `failed to sync ${this.#o.kind} cache: timed out waiting for the condition`);
    if (e.object === undefined) throw new ObjectCacheError('NotFound', `${this.#o.kind} ${JSON.stringify(name)} not found`);
    return e.object;
  }

  /**
   * Keeps watching exactly `refs` (of this kind; others are ignored) on behalf of `holder` (e.g. a
   * pod UID whose volumes use them): objects it no longer names are released.
   */
  hold(holder: string, refs: readonly ObjectRef[]): void {
    if (this.#closed) return;
    const wanted = new Set(refs.filter((r) => r.kind === this.#o.kind).map((r) => keyOf(r.namespace, r.name)));
    for (const [key, e] of this.#entries) if (!wanted.has(key)) e.holders.delete(holder);
    for (const key of wanted) {
      const [namespace, name] = splitKey(key);
      this.#ensure(namespace, name).holders.add(holder);
    }
  }

  /** Releases everything `holder` held. */
  release(holder: string): void {
    this.hold(holder, []);
  }

  /** The holders of `namespace/name` (e.g. the pods to re-project when it changes). */
  holders(namespace: string, name: string): string[] {
    return [...(this.#entries.get(keyOf(namespace, name))?.holders ?? [])];
  }

  /** Calls `listener` after an object changed (created, updated, deleted) once its reflector had synced. */
  onChange(listener: (ref: ObjectRef) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Objects being watched (for tests and metrics). */
  watched(): ObjectRef[] {
    return [...this.#entries.values()].map((e) => e.ref);
  }

  /** Stops every reflector. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    for (const e of entries) {
      e.abort.abort();
      for (const w of e.waiters) w();
    }
    await Promise.allSettled(entries.map((e) => e.done));
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  #ensure(namespace: string, name: string): Entry {
    const key = keyOf(namespace, name);
    const existing = this.#entries.get(key);
    if (existing !== undefined) return existing;
    const abort = new AbortController();
    const entry: Entry = {
      ref: { kind: this.#o.kind, namespace, name },
      abort,
      synced: false,
      object: undefined,
      resourceVersion: '',
      lastAccess: this.#now(),
      holders: new Set(),
      waiters: new Set(),
      done: Promise.resolve(),
    };
    entry.done = this.#reflect(entry);
    this.#entries.set(key, entry);
    return entry;
  }

  #waitSynced(e: Entry): Promise<void> {
    const timeoutMs = this.#o.syncTimeoutMs ?? 10_000;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        e.waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, timeoutMs);
      e.waiters.add(done);
    });
  }

  #sweep(): void {
    const idle = this.#o.idleMs ?? 300_000;
    const now = this.#now();
    for (const [key, e] of this.#entries) {
      if (e.holders.size > 0 || e.waiters.size > 0 || now - e.lastAccess < idle) continue;
      this.#entries.delete(key);
      e.abort.abort();
    }
  }

  /** Sets the object; tells the listeners when it changed after the first sync. */
  #set(e: Entry, object: DataObject | undefined): void {
    const before = e.object?.metadata.resourceVersion ?? (e.object === undefined ? undefined : '');
    const after = object?.metadata.resourceVersion ?? (object === undefined ? undefined : '');
    const wasSynced = e.synced;
    e.object = object;
    // An immutable object cannot change: stop watching it, as the kubelet's manager does.
    if (object?.immutable === true) e.abort.abort();
    if (!wasSynced) {
      e.synced = true;
      for (const w of [...e.waiters]) w();
      return;
    }
    if (before === after) return;
    for (const l of this.#listeners) {
      try {
        l(e.ref);
      } catch (err) {
        this.#o.logger.warn('object change listener failed', { kind: e.ref.kind, object: keyOf(e.ref.namespace, e.ref.name), err });
      }
    }
  }

  /** The reflector loop of one object, until its abort signal fires. */
  async #reflect(e: Entry): Promise<void> {
    const signal = e.abort.signal;
    const initial = this.#o.initialBackoffMs ?? 1000;
    const max = this.#o.maxBackoffMs ?? 30_000;
    let backoff = initial;
    const what = { kind: e.ref.kind, object: keyOf(e.ref.namespace, e.ref.name) };
    while (!signal.aborted) {
      try {
        const listed = await this.#o.listWatch.list(e.ref, signal);
        if (signal.aborted) return;
        e.resourceVersion = listed.resourceVersion;
        this.#set(e, listed.object);
        backoff = initial;
        if (signal.aborted) return;
        for (;;) {
          await this.#o.listWatch.watch(e.ref, e.resourceVersion, (ev) => this.#onEvent(e, ev), signal);
          if (signal.aborted) return;
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof GoneError) {
          this.#o.logger.info('watch resourceVersion too old (410 Gone), relisting', { ...what, resourceVersion: e.resourceVersion });
          continue;
        }
        this.#o.logger.warn('object list/watch failed, retrying', { ...what, delayMs: backoff, err: err instanceof Error ? err.message : String(err) });
        await pause(backoff, signal);
        backoff = Math.min(backoff * 2, max);
      }
    }
  }

  #onEvent(e: Entry, ev: WatchEvent): void {
    const o = ev.object as { code?: number; message?: string; metadata?: { name?: string; resourceVersion?: string } } | null;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        if (o === null || typeof o !== 'object' || o.metadata?.name !== e.ref.name) return;
        if (typeof o.metadata.resourceVersion === 'string' && o.metadata.resourceVersion !== '') e.resourceVersion = o.metadata.resourceVersion;
        this.#set(e, ev.type === 'DELETED' ? undefined : (o as DataObject));
        return;
      }
      case 'BOOKMARK':
        if (typeof o?.metadata?.resourceVersion === 'string' && o.metadata.resourceVersion !== '') e.resourceVersion = o.metadata.resourceVersion;
        return;
      case 'ERROR':
        if (o?.code === 410) throw new GoneError('resourceVersion too old');
        throw new Error(`watch error: ${o?.code ?? ''} ${o?.message ?? ''}`.trim());
      default:
        return;
    }
  }
}

function splitKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
