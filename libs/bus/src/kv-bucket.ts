/**
 * The typed KV contract ({@link KvBucket}) and the raw store it is built on ({@link RawKv}).
 *
 * `TypedKv` implements KvBucket once, over a RawKv; `natsRawKv` adapts a NATS JetStream bucket and
 * the in-memory bus of `./testing` provides its own RawKv, so validation, error mapping and the
 * listing/watch logic are the same code for both.
 */

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

/** Options for {@link KvBucket.watch}. */
export interface KvWatchOptions {
  /** Skip the current values; deliver only changes. @default false */
  updatesOnly?: boolean;
  /** Called once the initial replay is complete (also for an empty key range). */
  onCaughtUp?: () => void;
}

/**
 * A KV bucket whose values are validated by a zod schema on write and on read. Revisions are the
 * bucket's sequence (the kine pattern). Keys and filters are NATS subjects (`*`, `>` wildcards).
 */
export interface KvBucket<T> {
  readonly bucket: string;
  /** The current entry, or null when absent or deleted. Throws BusError SchemaInvalid for a stored value that does not validate. */
  get(key: string): Promise<TypedEntry<T> | null>;
  /** Writes unconditionally (latest wins). Returns the new revision. */
  put(key: string, value: T): Promise<number>;
  /** Writes only if the key is absent (or deleted). Throws BusError Conflict when it exists. */
  create(key: string, value: T): Promise<number>;
  /** Compare-and-swap on `revision`. Throws BusError Conflict when the key moved on. */
  update(key: string, value: T, revision: number): Promise<number>;
  /** Deletes the key (leaving a delete marker); with `previousRevision`, only if still at it (Conflict otherwise). */
  delete(key: string, previousRevision?: number): Promise<void>;
  /**
   * Keys under `filter` with a stored entry: a value or a delete marker (a deleted key is listed
   * until its marker expires or is purged). Answers at once; never waits on key changes.
   */
  keys(filter: string): Promise<string[]>;
  /** Every current (not deleted) entry under `filter`; entries that fail validation are dead-lettered and left out. */
  list(filter: string): Promise<TypedEntry<T>[]>;
  /**
   * Watches keys matching `filter`: first the current values (`delta` counts down to 0), then every
   * change, until `signal` aborts. Invalid values are dead-lettered and skipped.
   */
  watch(filter: string, signal: AbortSignal, onEntry: (e: TypedEntry<T>) => void | Promise<void>, opts?: KvWatchOptions): Promise<{ done: Promise<void> }>;
}

/** A stored entry of a raw bucket. */
export interface RawKvEntry {
  readonly key: string;
  readonly operation: 'PUT' | 'DEL' | 'PURGE';
  readonly value: Uint8Array;
  readonly revision: number;
  readonly created: Date;
  /** In a watch: entries still pending in the initial replay. */
  readonly delta?: number | undefined;
}

/** A running raw watch. */
export interface RawKvWatch extends AsyncIterable<RawKvEntry> {
  stop(): void;
}

/**
 * The byte-level bucket a {@link KvBucket} is built on. Compare-and-swap failures throw BusError
 * `Conflict`; `create` over a delete marker succeeds (as NATS KV does).
 */
export interface RawKv {
  get(key: string): Promise<RawKvEntry | null>;
  put(key: string, data: Uint8Array): Promise<number>;
  create(key: string, data: Uint8Array): Promise<number>;
  update(key: string, data: Uint8Array, revision: number): Promise<number>;
  delete(key: string, previousRevision?: number): Promise<void>;
  /** `last`: the last entry of every matching key (delete markers included), then changes; `updates`: changes only. */
  watch(filter: string, include: 'last' | 'updates'): Promise<RawKvWatch>;
  keys(filter: string): Promise<string[]>;
}
