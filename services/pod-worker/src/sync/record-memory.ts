/**
 * When a sync may skip reading a pod's desired record (`sl_desired`) or kill request (`sl_kill`)
 * from KV: what this instance read of it in the partition's lease epoch is current unless a poke
 * since says otherwise.
 *
 * sync-loop writes both records (the pod workers only delete a kill request they carried out). It
 * pokes after every write, and every poke names the revision of each record as sync-loop last
 * knew it (`WorkPoke.desiredRevision`, `WorkPoke.killRevision`; 0: it knows of none); while a
 * write is in flight, after a delete of the desired record, and whenever sync-loop does not know,
 * the poke names none. So a record read at revision r (or found absent while pokes named up to r)
 * is still current as long as every poke received since names a revision ≤ r:
 *
 *   poke names r' ≤ r ─► the memory serves the record
 *   poke names r' > r ─► the next sync reads KV (a newer write)
 *   poke names none   ─► the next sync reads KV (a delete, a write in flight, a restarted or older sync-loop)
 *
 * Pokes the pod workers make themselves (the takeover resync, retries) name nothing new. A kill
 * request this instance deletes is forgotten (its pod is, too). A record is served for
 * at most `maxAgeMs` after it was read, so a change whose poke never came (none is known to be
 * possible) is read within that time anyway. The memory is per lease epoch, like
 * {@link SyncMemory}: a takeover starts empty. Records are frozen before they are kept, so a sync
 * cannot change what the next one is served.
 *
 * Models nothing in the kubelet, whose pod workers get the pod with every update; here a sync
 * reads it from KV, and most syncs (the periodic resync of a settled pod) would read the same
 * records again.
 */
import type { Versioned } from '../ports.js';

/** How long a record read from KV is served without reading it again. */
export const RECORD_MEMORY_MAX_AGE_MS = 5 * 60_000;

/** What a read of the record covers (returned by {@link RecordMemory.reading}). */
export interface RecordRead {
  /** The highest revision pokes had named when the read started. */
  readonly expected: number;
  /** How many pokes naming no revision it answers. */
  readonly unnamed: number;
}

interface Known<T> {
  readonly value: Versioned<T> | null;
  /** Pokes naming up to this revision change nothing. */
  readonly covers: number;
  readonly readAt: number;
}

interface Expected {
  /** The highest revision a poke named. */
  revision: number;
  /** Pokes naming no revision since the last read that started after them. */
  unnamed: number;
}

/** One kind of record of one partition epoch's pods, and what the pokes said since they were read. */
export class RecordMemory<T> {
  readonly #maxAgeMs: number;
  readonly #known = new Map<string, Known<T>>();
  readonly #expected = new Map<string, Expected>();

  constructor(maxAgeMs = RECORD_MEMORY_MAX_AGE_MS) {
    this.#maxAgeMs = maxAgeMs;
  }

  /** A poke for the pod arrived from sync-loop, naming `revision` (undefined: none). */
  poked(uid: string, revision: number | undefined): void {
    const e = this.#expected.get(uid);
    if (e === undefined) this.#expected.set(uid, { revision: revision ?? 0, unnamed: revision === undefined ? 1 : 0 });
    else if (revision === undefined) e.unnamed++;
    else if (revision > e.revision) e.revision = revision;
  }

  /** The pod's record when the memory holds it current at `now` (null: known absent); undefined: read KV. */
  get(uid: string, now: number): Versioned<T> | null | undefined {
    const k = this.#known.get(uid);
    if (k === undefined || now - k.readAt > this.#maxAgeMs) return undefined;
    const e = this.#expected.get(uid);
    if (e !== undefined && (e.unnamed > 0 || e.revision > k.covers)) return undefined;
    return k.value;
  }

  /** A KV read of the record starts; pass what this returns to {@link read} with its result. */
  reading(uid: string): RecordRead {
    const e = this.#expected.get(uid);
    return { expected: e?.revision ?? 0, unnamed: e?.unnamed ?? 0 };
  }

  /** The read that {@link reading} began, at `readAt`, returned `value`. A failed read changes nothing. */
  read(uid: string, value: Versioned<T> | null, r: RecordRead, readAt: number): void {
    if (value !== null) deepFreeze(value.value);
    // Absent: deleted after every revision pokes had named. Present: later pokes naming its own revision or less change nothing.
    this.#known.set(uid, { value, covers: value === null ? r.expected : value.revision, readAt });
    const e = this.#expected.get(uid);
    if (e !== undefined) e.unnamed = Math.max(0, e.unnamed - r.unnamed);
  }

  /** Forgets the pod: its next sync reads KV. */
  forget(uid: string): void {
    this.#known.delete(uid);
    this.#expected.delete(uid);
  }

  /** Pods the memory holds something for. */
  get size(): number {
    return new Set([...this.#known.keys(), ...this.#expected.keys()]).size;
  }
}

function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const child of Object.values(v)) deepFreeze(child);
}
