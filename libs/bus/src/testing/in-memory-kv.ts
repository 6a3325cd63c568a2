/**
 * A KV bucket in memory with NATS KV semantics: revisions from one per-bucket sequence, delete
 * markers that stay listed by `keys`, `create` over a delete marker, compare-and-swap on the last
 * revision (BusError Conflict), watches that replay the last entry per key (delete markers
 * included, `delta` counting down) and then follow, and a bucket TTL that drops entries silently
 * (nats-server 2.9 sends watchers nothing at expiry).
 */
import { BusError } from '../errors.js';
import type { RawKv, RawKvEntry, RawKvWatch } from '../kv-bucket.js';
import type { BucketSpec } from '../topology.js';
import { AsyncQueue } from './async-queue.js';
import { subjectMatches } from './subject-match.js';

/** The characters NATS KV allows in a key. */
const VALID_KEY = /^[-/_=.a-zA-Z0-9]+$/;

/** One bucket. */
export class InMemoryKv implements RawKv {
  readonly spec: BucketSpec;
  #seq = 0;
  readonly #entries = new Map<string, RawKvEntry>();
  readonly #watchers = new Set<{ filter: string; queue: AsyncQueue<RawKvEntry> }>();

  constructor(spec: BucketSpec) {
    this.spec = spec;
  }

  /** Drops entries older than the bucket TTL. */
  #expire(): void {
    if (this.spec.ttlMs === undefined) return;
    const oldest = Date.now() - this.spec.ttlMs;
    for (const [k, e] of this.#entries) if (e.created.getTime() < oldest) this.#entries.delete(k);
  }

  #write(key: string, operation: 'PUT' | 'DEL', value: Uint8Array): number {
    if (!VALID_KEY.test(key) || key.startsWith('.') || key.endsWith('.')) throw new BusError('SchemaInvalid', `invalid key ${JSON.stringify(key)} in ${this.spec.name}`);
    const e: RawKvEntry = { key, operation, value, revision: ++this.#seq, created: new Date(), delta: 0 };
    this.#entries.set(key, e);
    for (const w of this.#watchers) if (subjectMatches(w.filter, key)) w.queue.push(e);
    return e.revision;
  }

  async get(key: string): Promise<RawKvEntry | null> {
    this.#expire();
    return this.#entries.get(key) ?? null;
  }

  async put(key: string, data: Uint8Array): Promise<number> {
    return this.#write(key, 'PUT', data);
  }

  async create(key: string, data: Uint8Array): Promise<number> {
    this.#expire();
    if (this.#entries.get(key)?.operation === 'PUT') throw new BusError('Conflict', `${this.spec.name}/${key} exists (wrong last sequence)`);
    return this.#write(key, 'PUT', data);
  }

  async update(key: string, data: Uint8Array, revision: number): Promise<number> {
    this.#expire();
    const cur = this.#entries.get(key)?.revision ?? 0;
    if (cur !== revision) throw new BusError('Conflict', `${this.spec.name}/${key} is at ${cur}, not ${revision} (wrong last sequence)`);
    return this.#write(key, 'PUT', data);
  }

  async delete(key: string, previousRevision?: number): Promise<void> {
    this.#expire();
    const cur = this.#entries.get(key)?.revision ?? 0;
    if (previousRevision !== undefined && cur !== previousRevision) {
      throw new BusError('Conflict', `${this.spec.name}/${key} is at ${cur}, not ${previousRevision} (wrong last sequence)`);
    }
    this.#write(key, 'DEL', new Uint8Array());
  }

  async keys(filter: string): Promise<string[]> {
    this.#expire();
    return [...this.#entries.keys()].filter((k) => subjectMatches(filter, k));
  }

  async watch(filter: string, include: 'last' | 'updates'): Promise<RawKvWatch> {
    this.#expire();
    const queue = new AsyncQueue<RawKvEntry>();
    if (include === 'last') {
      const initial = [...this.#entries.values()].filter((e) => subjectMatches(filter, e.key)).sort((a, b) => a.revision - b.revision);
      initial.forEach((e, i) => queue.push({ ...e, delta: initial.length - 1 - i }));
    }
    const w = { filter, queue };
    this.#watchers.add(w);
    return {
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
      stop: () => {
        this.#watchers.delete(w);
        queue.stop();
      },
    };
  }
}
