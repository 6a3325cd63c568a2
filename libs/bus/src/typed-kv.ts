/**
 * TypedKv: the one implementation of {@link KvBucket}, over any {@link RawKv} (a NATS bucket via
 * `natsRawKv`, or the in-memory bucket of `./testing`).
 *
 * A stored value that fails validation is never returned as data: `get` throws SchemaInvalid,
 * `list` leaves it out, `watch` dead-letters it and skips it.
 */
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import { BusError, isBusError } from './errors.js';
import { formatIssues } from './codec.js';
import type { DeadLetterInput } from './bus.js';
import type { KvBucket, KvWatchOptions, RawKv, RawKvEntry, TypedEntry } from './kv-bucket.js';

/** What the typed KV needs from the bus. */
export interface KvOwner {
  deadLetter(d: DeadLetterInput): Promise<void>;
  readonly logger: { warn(msg: string, fields?: Record<string, unknown>): void };
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** How long {@link TypedKv.list} waits for the replay of the keys it counted. */
const LIST_GUARD_MS = 5000;
/** How many invalid `key@revision`s a view remembers having dead-lettered from a listing. */
const MAX_REPORTED = 1024;
/** How often a watch still replaying checks whether it delivered every key stored (see `watch`). */
const WATCH_RECHECK_MS = 2000;
/** A watch still replaying after this long (and every such period after) logs a warning naming the missing keys. */
const WATCH_SLOW_WARN_MS = 10_000;

/** Typed view of one bucket. Obtain it from `Bus.kv()`. */
export class TypedKv<T> implements KvBucket<T> {
  /** The byte-level bucket (tests use it to store values that do not validate). */
  readonly raw: RawKv;
  readonly bucket: string;
  readonly #schema: z.ZodType<T>;
  readonly #owner: KvOwner;
  readonly #reported = new Set<string>();

  constructor(raw: RawKv, bucket: string, schema: z.ZodType<T>, owner: KvOwner) {
    this.raw = raw;
    this.bucket = bucket;
    this.#schema = schema;
    this.#owner = owner;
  }

  #encode(key: string, value: T): Uint8Array {
    const parsed = this.#schema.safeParse(value);
    if (!parsed.success) {
      throw new BusError('SchemaInvalid', `refusing to write an invalid value to ${this.bucket}/${key}: ${formatIssues(parsed.error)}`);
    }
    return enc.encode(JSON.stringify(parsed.data));
  }

  /** True the first time `key@revision` is reported invalid by a listing of this view (bounded memory). */
  #firstReport(key: string, revision: number): boolean {
    const id = `${key}@${revision}`;
    if (this.#reported.has(id)) return false;
    if (this.#reported.size >= MAX_REPORTED) this.#reported.clear();
    this.#reported.add(id);
    return true;
  }

  #decode(e: RawKvEntry): { ok: true; value: T | null } | { ok: false; reason: string } {
    if (e.operation !== 'PUT') return { ok: true, value: null };
    let json: unknown;
    try {
      json = JSON.parse(dec.decode(e.value));
    } catch (err) {
      return { ok: false, reason: `value of ${this.bucket}/${e.key} is not JSON: ${errorMessage(err)}` };
    }
    const parsed = this.#schema.safeParse(json);
    if (!parsed.success) return { ok: false, reason: `value of ${this.bucket}/${e.key} does not match its schema: ${formatIssues(parsed.error)}` };
    return { ok: true, value: parsed.data };
  }

  async get(key: string): Promise<TypedEntry<T> | null> {
    const e = await this.raw.get(key);
    if (!e || e.operation !== 'PUT') return null;
    const d = this.#decode(e);
    if (!d.ok) throw new BusError('SchemaInvalid', d.reason);
    return { key, value: d.value, revision: e.revision, created: e.created, delta: 0 };
  }

  async put(key: string, value: T): Promise<number> {
    return this.raw.put(key, this.#encode(key, value));
  }

  async create(key: string, value: T): Promise<number> {
    try {
      return await this.raw.create(key, this.#encode(key, value));
    } catch (e) {
      if (isBusError(e, 'Conflict')) throw new BusError('Conflict', `${this.bucket}/${key} already exists`, { cause: e });
      throw e;
    }
  }

  async update(key: string, value: T, revision: number): Promise<number> {
    try {
      return await this.raw.update(key, this.#encode(key, value), revision);
    } catch (e) {
      if (isBusError(e, 'Conflict')) throw new BusError('Conflict', `${this.bucket}/${key} is no longer at revision ${revision}`, { cause: e });
      throw e;
    }
  }

  async delete(key: string, previousRevision?: number): Promise<void> {
    try {
      await this.raw.delete(key, previousRevision);
    } catch (e) {
      if (isBusError(e, 'Conflict')) throw new BusError('Conflict', `${this.bucket}/${key} is no longer at revision ${previousRevision}`, { cause: e });
      throw e;
    }
  }

  keys(filter: string): Promise<string[]> {
    return this.raw.keys(filter);
  }

  /**
   * Read through a watch of last values. The replay ends once every key stored when the watch began
   * has been seen. `delta` alone cannot tell: when keys are written during the replay, nats-server
   * 2.9.10 counts it wrong both ways — it can stay at 1 for good (the listing used to stall for its
   * 5 s guard) or reach 0 before every key came (the listing used to miss keys). At `delta` 0 the
   * stored keys are re-read, so keys deleted meanwhile are not waited for.
   */
  async list(filter: string): Promise<TypedEntry<T>[]> {
    const byKey = new Map<string, TypedEntry<T> | null>();
    const w = await this.raw.watch(filter, 'last');
    try {
      const stored = await this.keys(filter);
      if (stored.length === 0) return [];
      const pending = new Set(stored);
      const timer = setTimeout(() => w.stop(), LIST_GUARD_MS);
      try {
        for await (const e of w) {
          pending.delete(e.key);
          const d = this.#decode(e);
          // An invalid value is left out of the listing, and never silently: it is dead-lettered with
          // the reason, once per stored revision (a periodic listing does not repeat it).
          if (!d.ok && this.#firstReport(e.key, e.revision)) await this.#owner.deadLetter({ subject: `$KV.${this.bucket}.${e.key}`, reason: d.reason, data: e.value });
          byKey.set(e.key, d.ok && d.value !== null ? { key: e.key, value: d.value, revision: e.revision, created: e.created, delta: e.delta ?? 0 } : null);
          if (pending.size === 0) break;
          if ((e.delta ?? 0) === 0) {
            await this.#forgetDeleted(pending, filter);
            if (pending.size === 0) break;
          }
        }
      } finally {
        clearTimeout(timer);
      }
      // One entry per key: its latest value (a key written during the replay arrives again).
      return [...byKey.values()].filter((e): e is TypedEntry<T> => e !== null);
    } finally {
      w.stop();
    }
  }

  /** Removes from `pending` the keys of `filter` no longer stored (a replay does not wait for them); returns the stored keys. */
  async #forgetDeleted(pending: Set<string>, filter: string): Promise<string[]> {
    const keys = await this.keys(filter);
    const still = new Set(keys);
    for (const k of [...pending]) if (!still.has(k)) pending.delete(k);
    return keys;
  }

  async watch(filter: string, signal: AbortSignal, onEntry: (e: TypedEntry<T>) => void | Promise<void>, opts: KvWatchOptions = {}): Promise<{ done: Promise<void> }> {
    const w = await this.raw.watch(filter, opts.updatesOnly ? 'updates' : 'last');
    signal.addEventListener('abort', () => w.stop(), { once: true });
    let caughtUp = false;
    const markCaughtUp = (): void => {
      if (!caughtUp) {
        caughtUp = true;
        pending.clear();
        opts.onCaughtUp?.();
      }
    };
    // The replay is complete once every key stored when the watch began, and stored still, has
    // been delivered. The replay's last entry normally says nothing is pending (delta 0), but on
    // nats-server 2.9 a key overwritten, expired or compacted during the replay leaves the count
    // wrong either way: one too high (and then only the bucket's next write ended the replay — a
    // sync-loop leader waited 4 minutes for one) or 0 before every key came (a member store, asked
    // at once after a heartbeat, did not list it). So delta 0 only prompts a check, and until caught
    // up every WATCH_RECHECK_MS checks again; keys deleted since the watch began are not waited for.
    const pending = new Set(opts.updatesOnly ? [] : await this.keys(filter));
    if (pending.size === 0) markCaughtUp();
    let recheck: NodeJS.Timeout | undefined;
    let checking = false;
    const started = Date.now();
    let nextWarnAt = WATCH_SLOW_WARN_MS;
    let lastDelta: number | undefined;
    const check = (): void => {
      clearTimeout(recheck);
      if (caughtUp || signal.aborted || checking) return;
      if (pending.size === 0) return markCaughtUp();
      checking = true;
      void this.#forgetDeleted(pending, filter)
        .then(
          (keys) => {
            if (pending.size === 0) return markCaughtUp();
            const waited = Date.now() - started;
            if (waited >= nextWarnAt) {
              nextWarnAt += WATCH_SLOW_WARN_MS;
              this.#owner.logger.warn('a watch is still replaying its keys', {
                bucket: this.bucket,
                filter,
                waitedMs: waited,
                stored: keys.length,
                missing: [...pending].slice(0, 5),
                lastDelta,
              });
            }
            scheduleRecheck();
          },
          (e: unknown) => {
            this.#owner.logger.warn('could not re-count the keys of a watch', { bucket: this.bucket, filter, error: errorMessage(e) });
            scheduleRecheck();
          },
        )
        .finally(() => (checking = false));
    };
    const scheduleRecheck = (): void => {
      clearTimeout(recheck);
      recheck = setTimeout(check, WATCH_RECHECK_MS);
    };
    if (!caughtUp) scheduleRecheck();
    signal.addEventListener('abort', () => clearTimeout(recheck), { once: true });
    const done = (async () => {
      for await (const e of w) {
        const d = this.#decode(e);
        if (!d.ok) {
          await this.#owner.deadLetter({ subject: `$KV.${this.bucket}.${e.key}`, reason: d.reason, data: e.value });
        } else {
          await onEntry({ key: e.key, value: d.value, revision: e.revision, created: e.created, delta: e.delta ?? 0 });
        }
        if (!caughtUp) {
          pending.delete(e.key);
          lastDelta = e.delta;
          if (pending.size === 0) markCaughtUp();
          else if ((e.delta ?? 0) === 0) check();
        }
      }
    })();
    return { done };
  }
}
