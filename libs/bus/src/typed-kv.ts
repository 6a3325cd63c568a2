/**
 * A KV bucket whose values are validated by a zod schema on write and on read.
 *
 * Revisions are stream sequences (the kine pattern): `create` fails if the key exists, `update` is a
 * compare-and-swap on the revision. A stored value that fails validation is never returned as data:
 * `get` throws SchemaInvalid, `watch` dead-letters it and reports the key as unreadable.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { JetStreamManager } from '@nats-io/jetstream';
import { KvWatchInclude } from '@nats-io/kv';
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import { BusError } from './errors.js';

/** What the typed KV needs from the bus. */
export interface KvOwner {
  deadLetter(d: { subject: string; reason: string; data: Uint8Array }): Promise<void>;
  readonly logger: { warn(msg: string, fields?: Record<string, unknown>): void };
  readonly jsm: JetStreamManager;
}

/** A decoded entry. `value` is null for a delete or purge. */
export interface TypedEntry<T> {
  key: string;
  value: T | null;
  revision: number;
  /** Server time of the write. */
  created: Date;
  /** Entries still to come in the initial replay of a watch (0 = caught up). */
  delta: number;
}

const enc = new TextEncoder();

function isWrongLastSequence(e: unknown): boolean {
  const msg = errorMessage(e);
  return /wrong last sequence|key exists|10071/i.test(msg);
}

/** Typed view of one bucket. Obtain it from `NatsBus.kv()`. */
export class TypedKv<T> {
  readonly kv: KV;
  readonly bucket: string;
  readonly #schema: z.ZodType<T>;
  readonly #owner: KvOwner;

  constructor(kv: KV, bucket: string, schema: z.ZodType<T>, owner: KvOwner) {
    this.kv = kv;
    this.bucket = bucket;
    this.#schema = schema;
    this.#owner = owner;
  }

  #encode(key: string, value: T): Uint8Array {
    const parsed = this.#schema.safeParse(value);
    if (!parsed.success) {
      throw new BusError('SchemaInvalid', `refusing to write an invalid value to ${this.bucket}/${key}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    return enc.encode(JSON.stringify(parsed.data));
  }

  #decode(e: KvEntry): { ok: true; value: T | null } | { ok: false; reason: string } {
    if (e.operation !== 'PUT') return { ok: true, value: null };
    let json: unknown;
    try {
      json = e.json();
    } catch (err) {
      return { ok: false, reason: `value of ${this.bucket}/${e.key} is not JSON: ${errorMessage(err)}` };
    }
    const parsed = this.#schema.safeParse(json);
    if (!parsed.success) {
      return { ok: false, reason: `value of ${this.bucket}/${e.key} does not match its schema: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
    }
    return { ok: true, value: parsed.data };
  }

  /** The current entry, or null when absent or deleted. */
  async get(key: string): Promise<TypedEntry<T> | null> {
    const e = await this.kv.get(key);
    if (!e || e.operation !== 'PUT') return null;
    const d = this.#decode(e);
    if (!d.ok) throw new BusError('SchemaInvalid', d.reason);
    return { key, value: d.value, revision: e.revision, created: e.created, delta: 0 };
  }

  /** Writes unconditionally (latest wins). Returns the new revision. */
  put(key: string, value: T): Promise<number> {
    return this.kv.put(key, this.#encode(key, value));
  }

  /** Writes only if the key is absent (or deleted). Throws BusError Conflict when it exists. */
  async create(key: string, value: T): Promise<number> {
    try {
      return await this.kv.create(key, this.#encode(key, value));
    } catch (e) {
      if (isWrongLastSequence(e)) throw new BusError('Conflict', `${this.bucket}/${key} already exists`, { cause: e });
      throw e;
    }
  }

  /** Compare-and-swap on `revision`. Throws BusError Conflict when the key moved on. */
  async update(key: string, value: T, revision: number): Promise<number> {
    try {
      return await this.kv.update(key, this.#encode(key, value), revision);
    } catch (e) {
      if (isWrongLastSequence(e)) throw new BusError('Conflict', `${this.bucket}/${key} is no longer at revision ${revision}`, { cause: e });
      throw e;
    }
  }

  /** Deletes the key; with `previousRevision`, only if it is still at that revision (Conflict otherwise). */
  async delete(key: string, previousRevision?: number): Promise<void> {
    try {
      await this.kv.delete(key, previousRevision === undefined ? {} : { previousSeq: previousRevision });
    } catch (e) {
      if (isWrongLastSequence(e)) throw new BusError('Conflict', `${this.bucket}/${key} is no longer at revision ${previousRevision}`, { cause: e });
      throw e;
    }
  }

  /**
   * Keys under `filter` that have a stored message (a value or a delete marker), from one
   * STREAM.INFO request. Unlike nats.js `keys()`, this cannot hang when keys change or expire
   * while it runs.
   */
  async storedKeys(filter: string): Promise<string[]> {
    const prefix = `$KV.${this.bucket}.`;
    const si = await this.#owner.jsm.streams.info(`KV_${this.bucket}`, { subjects_filter: `${prefix}${filter}` });
    return Object.keys(si.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  }

  /** How many keys under `filter` have a stored message. */
  async countKeys(filter: string): Promise<number> {
    return (await this.storedKeys(filter)).length;
  }

  /**
   * Every current entry under a key filter (e.g. `node.>`), read through a watch of last values.
   * The replay ends once every key stored when the watch began has been seen. `delta` alone cannot
   * tell: when keys are written during the replay, nats-server 2.9.10 counts it wrong both ways — it
   * can stay at 1 for good (the listing used to stall for its 5 s guard) or reach 0 before every key
   * came (the listing used to miss keys). At `delta` 0 the stored keys are re-read, so keys deleted
   * meanwhile are not waited for.
   */
  async list(filter: string): Promise<TypedEntry<T>[]> {
    const byKey = new Map<string, TypedEntry<T> | null>();
    const w = await this.kv.watch({ key: filter, include: KvWatchInclude.LastValue });
    try {
      const stored = await this.storedKeys(filter);
      if (stored.length === 0) return [];
      const pending = new Set(stored);
      const timer = setTimeout(() => w.stop(), 5000);
      try {
        for await (const e of w) {
          pending.delete(e.key);
          if (e.operation === 'PUT') {
            const d = this.#decode(e);
            byKey.set(e.key, d.ok && d.value !== null ? { key: e.key, value: d.value, revision: e.revision, created: e.created, delta: e.delta ?? 0 } : null);
          } else {
            byKey.set(e.key, null);
          }
          if (pending.size === 0) break;
          if ((e.delta ?? 0) === 0) {
            const still = new Set(await this.storedKeys(filter));
            for (const k of [...pending]) if (!still.has(k)) pending.delete(k);
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

  /**
   * Watches keys matching `filter`: first the current values (`delta` counts down to 0), then every
   * change, until `signal` aborts. Invalid values are dead-lettered and skipped. `onCaughtUp` fires
   * once the initial replay is complete (also for an empty bucket).
   */
  async watch(
    filter: string,
    signal: AbortSignal,
    onEntry: (e: TypedEntry<T>) => void | Promise<void>,
    opts: { updatesOnly?: boolean; onCaughtUp?: () => void } = {},
  ): Promise<{ done: Promise<void> }> {
    const w = await this.kv.watch({ key: filter, include: opts.updatesOnly ? KvWatchInclude.UpdatesOnly : KvWatchInclude.LastValue });
    signal.addEventListener('abort', () => w.stop(), { once: true });
    let caughtUp = false;
    const markCaughtUp = (): void => {
      if (!caughtUp) {
        caughtUp = true;
        opts.onCaughtUp?.();
      }
    };
    if (opts.updatesOnly || (await this.countKeys(filter)) === 0) markCaughtUp();
    // Keys that expire (bucket TTL) between the count and the watch never arrive: re-check once.
    const recheck = setTimeout(() => {
      if (!caughtUp) void this.countKeys(filter).then((n) => n === 0 && markCaughtUp(), () => undefined);
    }, 2000);
    signal.addEventListener('abort', () => clearTimeout(recheck), { once: true });
    const done = (async () => {
      for await (const e of w) {
        const d = this.#decode(e);
        if (!d.ok) {
          await this.#owner.deadLetter({ subject: `$KV.${this.bucket}.${e.key}`, reason: d.reason, data: e.value });
        } else {
          await onEntry({ key: e.key, value: d.value, revision: e.revision, created: e.created, delta: e.delta ?? 0 });
        }
        if ((e.delta ?? 0) === 0) {
          clearTimeout(recheck);
          markCaughtUp();
        }
      }
    })();
    return { done };
  }
}
