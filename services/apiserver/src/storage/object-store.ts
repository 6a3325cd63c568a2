/**
 * The API server's storage: one JetStream KV bucket, one key per object. The key's revision (the
 * stream sequence) is the object's `resourceVersion`, so a list carries the revision it was read at
 * and a watch resumes from it exactly — the kine pattern, with JetStream in etcd's place.
 *
 * Models k8s.io/apiserver/pkg/storage (Interface: Get, GetList, Create, GuaranteedUpdate, Delete,
 * Watch) and storage/etcd3/store.go, on KV instead of etcd.
 *
 * ```
 * key      <resource>.<namespace|_>.<name with '.' as '_'>      e.g. pods.default.web, nodes._.node-a
 * history  the last HISTORY revisions of each key, so watches resuming from an older revision replay them
 * value    {"o": object}                 a live object ("c": true on the write that created it)
 *          {"o": object, "d": true}      a deletion tombstone: watchers see DELETED with the last state
 * ```
 * Tombstones are purged after {@link TOMBSTONE_TTL_MS}; a watch that would need a purged event is
 * refused with 410 Gone (`compactedRevision`), as etcd compaction does; a watch still reading when
 * compaction removed a deletion it had not delivered ends with 410 rather than lose the DELETED
 * event (see `compact`).
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude, type KV, type KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { deleteStoredMessage } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';
import { ApiError } from '../http/api-errors.js';
import { keyMatcher } from './key-matcher.js';
import { WatchCache } from './watch-cache.js';

/** A Kubernetes object as stored: any JSON with `metadata`. */
export type KubeObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

/** One stored object and its revision. */
export interface Stored {
  readonly key: string;
  readonly object: KubeObject;
  readonly revision: number;
}

/** A watch event, as the API sends it (the object carries its resourceVersion). */
export interface StoreEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly key: string;
  readonly object: KubeObject;
  readonly revision: number;
}

interface Envelope {
  o: KubeObject;
  c?: true;
  d?: true;
}

/**
 * Revisions kept per key, so a watch resuming from an older revision still sees each change (the
 * watch cache's window); older ones are dropped by the stream.
 */
export const HISTORY = 16;

/** How long a deletion tombstone stays for watchers before it is purged. */
export const TOMBSTONE_TTL_MS = 5 * 60_000;

const META_COMPACTED = 'meta._.compacted';
/** Keys a compaction pass removes at most (its announcement stays well under the 1 MiB value bound). */
const MAX_COMPACTED_PER_PASS = 2000;
/**
 * Every this many compaction passes (and at the first), a pass reads every key of the bucket for
 * tombstones: those another process or an earlier run of this one wrote. The passes between read
 * only the tombstones this store wrote or found, once they are old enough: reading every object
 * each minute cost a node holding 1,000 pods ~5,000 reads a minute (its events included).
 */
export const FULL_COMPACTION_SCAN_EVERY = 60;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** How many keys a listing or a compaction scan reads (or a compaction removes) at once. */
const READ_BATCH = 64;

/** `read` of every item, in order, READ_BATCH calls in flight at a time; the caller may stop early. */
async function* inBatches<K, T>(items: readonly K[], read: (item: K) => Promise<T>): AsyncGenerator<T> {
  for (let i = 0; i < items.length; i += READ_BATCH) yield* await Promise.all(items.slice(i, i + READ_BATCH).map(read));
}

/** A metadata field as text (`name`, `namespace`, `uid`, `resourceVersion`): '' when absent, JSON when not a string. */
export function metaText(o: KubeObject, field: string): string {
  const v = o.metadata?.[field];
  return v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
}

/** The key of an object: `.` is a token separator in keys and cannot be in a name, `_` cannot be in a DNS name: swap them. */
export function objectKey(resource: string, namespace: string | undefined, name: string): string {
  return `${resource}.${namespace === undefined || namespace === '' ? '_' : namespace}.${name.replaceAll('.', '_')}`;
}

/** The key filter of a resource, optionally within one namespace. */
export function keyFilter(resource: string, namespace?: string): string {
  return namespace === undefined || namespace === '' ? `${resource}.>` : `${resource}.${namespace}.*`;
}

function isWrongLastSequence(e: unknown): boolean {
  return /wrong last sequence|key exists|10071/i.test(e instanceof Error ? e.message : String(e));
}

/**
 * The object as written, with its resourceVersion: a new top level and metadata, the rest shared
 * with `o` (the caller built it for this write and does not change it after).
 */
function withRevision(o: KubeObject, revision: number): KubeObject {
  return { ...o, metadata: { ...(o.metadata ?? {}), resourceVersion: String(revision) } };
}

/** `o` itself with its resourceVersion: for an object decoded from the bucket just now, which nothing else holds. */
function decodedWithRevision(o: KubeObject, revision: number): KubeObject {
  o.metadata = { ...(o.metadata ?? {}), resourceVersion: String(revision) };
  return o;
}

function decode(e: KvEntry): Envelope | undefined {
  if (e.operation !== 'PUT' || e.value.length === 0) return undefined;
  try {
    return JSON.parse(dec.decode(e.value)) as Envelope;
  } catch {
    return undefined;
  }
}

/** The store. One per process; safe for concurrent use (every write is a compare-and-swap). */
export class ObjectStore {
  readonly #kv: KV;
  readonly #jsm: JetStreamManager;
  readonly #bucket: string;
  #compactionWatch: Promise<void> | undefined;
  readonly #compactionListeners = new Set<(c: Compaction) => void>();
  readonly #caches: WatchCache[] = [];
  /** Tombstones this store wrote or a compaction scan found: key → when it was seen (ms since the epoch). */
  readonly #tombstones = new Map<string, number>();
  #compactions = 0;

  private constructor(kv: KV, jsm: JetStreamManager, bucket: string) {
    this.#kv = kv;
    this.#jsm = jsm;
    this.#bucket = bucket;
  }

  /** Opens (creating if needed) the bucket. Objects survive restarts: the bucket is file-backed. */
  static async open(nc: NatsConnection, jsm: JetStreamManager, bucket: string): Promise<ObjectStore> {
    const kv = await new Kvm(nc).create(bucket, { history: HISTORY, storage: 'file' } as never);
    return new ObjectStore(kv, jsm, bucket);
  }

  /**
   * A watch cache of `resource`'s objects (see {@link WatchCache}), running until `signal` aborts;
   * this store's writes are recorded in it as they complete, so a write's result (its object shared
   * with the cache: not to be changed) is what the next write starts from.
   */
  cache(resource: string, signal: AbortSignal, logger?: Logger): WatchCache {
    const c = new WatchCache(this, resource, signal, logger);
    this.#caches.push(c);
    signal.addEventListener('abort', () => this.#caches.splice(this.#caches.indexOf(c), 1), { once: true });
    return c;
  }

  /** Records a completed write or read in the caches of its key. */
  #record(key: string, stored: Stored | undefined, revision: number): void {
    for (const c of this.#caches) if (c.covers(key)) c.observe(key, stored, revision);
  }

  /** The current object, or undefined. The object is the caller's own (decoded for it; no cache holds it). */
  async get(key: string): Promise<Stored | undefined> {
    const e = await this.#kv.get(key);
    if (e === null) return undefined;
    const env = decode(e);
    if (env === undefined || env.d === true) return undefined;
    return { key, object: decodedWithRevision(env.o, e.revision), revision: e.revision };
  }

  /** `s` (a write's result) recorded in the caches of its key. */
  #recorded(s: Stored): Stored {
    this.#record(s.key, s, s.revision);
    return s;
  }

  /** The stream's last sequence: the revision a list made now is consistent with. */
  async currentRevision(): Promise<number> {
    const si = await this.#jsm.streams.info(`KV_${this.#bucket}`);
    return si.state.last_seq;
  }

  /** The oldest revision a watch may resume from (older ones may have lost purged tombstones). */
  async compactedRevision(): Promise<number> {
    return parseCompaction(await this.#kv.get(META_COMPACTED))?.revision ?? 0;
  }

  /**
   * Every live object under `filter`, and the revision of the listing: the stream's last sequence
   * read with the key list (an object may be newer; a watch from the revision replays it again,
   * which informers take as an update).
   */
  async list(filter: string): Promise<{ items: Stored[]; revision: number }> {
    const prefix = `$KV.${this.#bucket}.`;
    const si = await this.#jsm.streams.info(`KV_${this.#bucket}`, { subjects_filter: `${prefix}${filter}` });
    const keys = Object.keys(si.state.subjects ?? {})
      .map((s) => s.slice(prefix.length))
      .sort();
    const items: Stored[] = [];
    for await (const s of inBatches(keys, (k) => this.get(k))) if (s !== undefined) items.push(s);
    return { items, revision: si.state.last_seq };
  }

  /** Creates `key`; 409 AlreadyExists when a live object has it. Returns the stored object. */
  async create(key: string, object: KubeObject, what: { resource: string; name: string }): Promise<Stored> {
    const data = enc.encode(JSON.stringify({ o: object, c: true } satisfies Envelope));
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const revision = await this.#kv.create(key, data);
        return this.#recorded({ key, object: withRevision(object, revision), revision });
      } catch (e) {
        if (!isWrongLastSequence(e)) throw e;
      }
      // A tombstone (or an older version's purge marker) holds the key: create over it with a CAS on
      // its revision. Gone meanwhile (compaction removed it): create again.
      const cur = await this.#kv.get(key);
      if (cur === null) continue;
      const env = decode(cur);
      if (env !== undefined && env.d !== true) break;
      try {
        const revision = await this.#kv.update(key, data, cur.revision);
        return this.#recorded({ key, object: withRevision(object, revision), revision });
      } catch (e) {
        if (!isWrongLastSequence(e)) throw e;
      }
    }
    throw ApiError.alreadyExists(what.resource, what.name);
  }

  /**
   * Replaces `key` if its revision is still `expected`; 409 Conflict otherwise, 404 when it is gone.
   */
  async update(key: string, object: KubeObject, expected: number, what: { resource: string; name: string }): Promise<Stored> {
    try {
      const revision = await this.#kv.update(key, enc.encode(JSON.stringify({ o: object } satisfies Envelope)), expected);
      return this.#recorded({ key, object: withRevision(object, revision), revision });
    } catch (e) {
      if (!isWrongLastSequence(e)) throw e;
      if ((await this.get(key)) === undefined) throw ApiError.notFound(what.resource, what.name);
      throw ApiError.conflict(what.resource, what.name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
  }

  /** Deletes `key` (a tombstone with the object's last state) if its revision is still `expected`. */
  async delete(key: string, last: KubeObject, expected: number, what: { resource: string; name: string }): Promise<Stored> {
    try {
      const revision = await this.#kv.update(key, enc.encode(JSON.stringify({ o: last, d: true } satisfies Envelope)), expected);
      this.#record(key, undefined, revision);
      this.#tombstones.set(key, Date.now());
      return { key, object: withRevision(last, revision), revision };
    } catch (e) {
      if (!isWrongLastSequence(e)) throw e;
      if ((await this.get(key)) === undefined) throw ApiError.notFound(what.resource, what.name);
      throw ApiError.conflict(what.resource, what.name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
  }

  /**
   * Events under `filter` after `fromRevision`, until `signal` aborts. Throws 410 Gone when
   * `fromRevision` is older than the compacted revision, and when a compaction announced the removal
   * of a deletion after `fromRevision` that this watch had not delivered (it may be gone before the
   * watch reads it).
   */
  async *watch(filter: string, fromRevision: number, signal: AbortSignal): AsyncGenerator<StoreEvent> {
    const inFilter = keyMatcher(filter);
    // The revision of the last deletion delivered, per key.
    const delivered = new Map<string, number>();
    let missed: string | undefined;
    let w: { stop(): void } | undefined;
    const onCompaction = (c: Compaction): void => {
      for (const [key, revision] of c.removed) {
        if (inFilter(key) && revision > fromRevision && delivered.get(key) !== revision) missed ??= `the deletion of ${key} at ${revision} was compacted before this watch read it`;
      }
      if (missed !== undefined) w?.stop();
    };
    // Listening before the start check: a compaction announced after it is seen here.
    const unlisten = await this.#onCompaction(onCompaction);
    try {
      const compacted = await this.compactedRevision();
      if (fromRevision < compacted) throw ApiError.gone(`too old resource version: ${fromRevision} (${compacted})`);
      const kw = await this.#kv.watch({ key: filter, include: KvWatchInclude.AllHistory, resumeFromRevision: fromRevision + 1 });
      w = kw;
      if (missed !== undefined) kw.stop();
      const stop = (): void => kw.stop();
      signal.addEventListener('abort', stop, { once: true });
      try {
        for await (const e of kw) {
          if (signal.aborted || missed !== undefined) break;
          if (e.revision <= fromRevision) continue;
          // A purge marker of an earlier version's compaction: conservative, as if missed.
          if (e.operation === 'PURGE') {
            if (delivered.has(e.key)) continue;
            missed = `the history of ${e.key} was purged before this watch read it`;
            break;
          }
          const env = decode(e);
          if (env === undefined) continue;
          const type = env.d === true ? 'DELETED' : env.c === true ? 'ADDED' : 'MODIFIED';
          if (type === 'DELETED') delivered.set(e.key, e.revision);
          yield { type, key: e.key, object: decodedWithRevision(env.o, e.revision), revision: e.revision };
        }
      } finally {
        signal.removeEventListener('abort', stop);
        kw.stop();
      }
      if (missed !== undefined && !signal.aborted) throw ApiError.gone(`too old resource version: ${fromRevision} (${missed})`);
    } finally {
      unlisten();
    }
  }

  /**
   * Removes the tombstones older than `ttlMs` with their keys' history (at most
   * MAX_COMPACTED_PER_PASS a pass). The removal is announced first, in `meta._.compacted`: the
   * compacted revision (watches from an older one are refused) and the removed (key, revision)
   * pairs, which running watches check against what they delivered. A key's messages are deleted
   * one by one, oldest first (the tombstone last, so the key never reads as its older value), many
   * keys at once: on
   * nats-server 2.9 a filtered purge or a rollup moves every lagging consumer of the stream past
   * other keys' writes (see `deleteStoredMessage` in libs/bus). Returns how many keys were removed.
   * Run periodically by one process. A pass reads the tombstones it knows of (see
   * {@link FULL_COMPACTION_SCAN_EVERY}), or every key when `full` or when its schedule says so.
   */
  async compact(now: number, ttlMs = TOMBSTONE_TTL_MS, full = this.#compactions % FULL_COMPACTION_SCAN_EVERY === 0): Promise<number> {
    this.#compactions++;
    const stream = `KV_${this.#bucket}`;
    const prefix = `$KV.${this.#bucket}.`;
    let candidates: string[];
    if (full) {
      const si = await this.#jsm.streams.info(stream, { subjects_filter: `${prefix}>` });
      candidates = Object.keys(si.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
    } else {
      // Known tombstones old enough to be due (their time here is at or after the write's).
      candidates = [...this.#tombstones].filter(([, seen]) => now - seen >= ttlMs).map(([key]) => key);
    }
    const removed: [string, number][] = [];
    // Read READ_BATCH at a time: one by one, a full scan of a node's ~6,000 objects and events took
    // over a minute of round trips.
    const read = (key: string): Promise<[string, KvEntry | null]> => this.#kv.get(key).then((e) => [key, e]);
    for await (const [key, e] of inBatches(
      candidates.filter((k) => k !== META_COMPACTED),
      read,
    )) {
      const env = e === null ? undefined : decode(e);
      if (e === null || env?.d !== true) {
        this.#tombstones.delete(key); // created again, or gone
        continue;
      }
      if (!this.#tombstones.has(key)) this.#tombstones.set(key, e.created.getTime());
      if (now - e.created.getTime() < ttlMs) continue;
      removed.push([key, e.revision]);
      if (removed.length >= MAX_COMPACTED_PER_PASS) break;
    }
    if (removed.length === 0) return 0;
    const revision = Math.max(await this.compactedRevision(), ...removed.map(([, r]) => r));
    const announced: Compaction = { revision, removed };
    await this.#kv.put(META_COMPACTED, enc.encode(JSON.stringify(announced)));
    // This process's watches at once; the bucket's watch brings it to them again (idempotent) and to other processes.
    this.#announce(announced);
    // Each key's history oldest first, its tombstone last; READ_BATCH keys at a time: one key after
    // another, the removal of a node's 1,000 deleted pods and their events was ~10,000 round trips
    // in a row.
    const removeHistory = async ([key, tombstone]: [string, number]): Promise<void> => {
      const seqs: number[] = [];
      for (let seq = 1; ;) {
        const m = await this.#jsm.direct.getMessage(stream, { next_by_subj: `${prefix}${key}`, seq });
        if (m === null || m.seq > tombstone) break;
        seqs.push(m.seq);
        seq = m.seq + 1;
      }
      for (const seq of seqs) await deleteStoredMessage(this.#jsm, stream, seq);
      this.#tombstones.delete(key);
    };
    for await (const done of inBatches(removed, removeHistory)) void done;
    return removed.length;
  }

  #announce(c: Compaction): void {
    for (const l of [...this.#compactionListeners]) l(c);
  }

  /** Calls `fn` with every compaction announced from now on; returns the unsubscribe. */
  async #onCompaction(fn: (c: Compaction) => void): Promise<() => void> {
    this.#compactionWatch ??= (async () => {
      const w = await this.#kv.watch({ key: META_COMPACTED, include: KvWatchInclude.UpdatesOnly });
      void (async () => {
        for await (const e of w) {
          const c = parseCompaction(e);
          if (c !== undefined) this.#announce(c);
        }
      })();
    })().catch((e: unknown) => {
      this.#compactionWatch = undefined; // the next watch tries again
      throw e;
    });
    await this.#compactionWatch;
    this.#compactionListeners.add(fn);
    return () => this.#compactionListeners.delete(fn);
  }
}

/** The value of `meta._.compacted`: a bare number before removals were announced. */
interface Compaction {
  readonly revision: number;
  readonly removed: readonly [string, number][];
}

function parseCompaction(e: KvEntry | null): Compaction | undefined {
  if (e === null || e.operation !== 'PUT') return undefined;
  try {
    const v: unknown = JSON.parse(dec.decode(e.value));
    if (typeof v === 'number') return { revision: v, removed: [] };
    const c = v as Partial<Compaction>;
    return typeof c.revision === 'number' && Array.isArray(c.removed) ? { revision: c.revision, removed: c.removed } : undefined;
  } catch {
    return undefined;
  }
}
