/**
 * Per-key exponential backoff (crash loops, image pulls), with a JSON form so a process can persist
 * it and a restarted one resume.
 *
 * Models k8s.io/client-go/util/flowcontrol/backoff.go (Backoff) as pkg/kubelet/kubelet.go configures
 * it for crash loops, and kuberuntime/helpers.go (GetStableKey).
 *
 * ```
 *  exit ─► isInBackOffSince(key, finishedAt)? ─yes─► CrashLoopBackOff (wait)
 *                                            └no──► next(key, finishedAt) ─► start
 *  backoff: 10s, 20s, 40s … 300s, 300s; forgotten after `expiryMs` without next()
 * ```
 */
import type { Container } from '@splitlet/api';
import { KubeletPeriods } from './constants.js';
import { KubeError } from './errors.js';
import { hashContainer } from './hash-container.js';

/**
 * Options of a {@link Backoff}.
 *
 * Models client-go/util/flowcontrol/backoff.go (NewBackOff / NewBackOffWithJitter arguments, HasExpiredFunc).
 */
export interface BackoffOptions {
  /** The first backoff. */
  readonly initialMs: number;
  /** The cap. */
  readonly maxMs: number;
  /** Reads the current time (ms since the epoch). */
  readonly clock: { now(): number };
  /**
   * An entry whose last update is more than this older than the event restarts at `initialMs`, and
   * `gc()` drops it (HasExpiredFunc). @default 2 × maxMs
   */
  readonly expiryMs?: number;
  /** Extra random delay as a fraction of the backoff. @default 0 */
  readonly maxJitterFactor?: number;
  /** A [0, 1) source for the jitter. @default Math.random */
  readonly random?: () => number;
}

/**
 * One key's state: the current backoff and when it was last bumped (ms since the epoch).
 *
 * Models client-go/util/flowcontrol/backoff.go (backoffEntry).
 */
export interface BackoffEntry {
  readonly backoffMs: number;
  readonly lastUpdate: number;
}

/**
 * The JSON form of a {@link Backoff}.
 *
 * Models client-go/util/flowcontrol/backoff.go (perItemBackoff, made persistable).
 */
export interface BackoffState {
  readonly version: 1;
  readonly initialMs: number;
  readonly maxMs: number;
  readonly expiryMs: number;
  readonly entries: Readonly<Record<string, BackoffEntry>>;
}

/**
 * A map of key → (backoff, lastUpdate). Not safe for concurrent use across processes; one owner per
 * node (cri-adapter) keeps it and persists {@link Backoff.toJSON}.
 *
 * Models flowcontrol.Backoff.
 */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #expiryMs: number;
  readonly #clock: { now(): number };
  readonly #jitterFactor: number;
  readonly #random: () => number;
  readonly #entries = new Map<string, { backoffMs: number; lastUpdate: number }>();

  constructor(opts: BackoffOptions) {
    this.#initialMs = opts.initialMs;
    this.#maxMs = opts.maxMs;
    this.#expiryMs = opts.expiryMs ?? 2 * opts.maxMs;
    this.#clock = opts.clock;
    this.#jitterFactor = opts.maxJitterFactor ?? 0;
    this.#random = opts.random ?? Math.random;
  }

  /**
   * The kubelet's crash-loop backoff: 10 s doubling to 300 s, reset after 600 s without an update.
   *
   * Models kubelet.go (`flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff)` + HasExpiredFunc).
   */
  static crashLoop(clock: { now(): number }): Backoff {
    return new Backoff({
      initialMs: KubeletPeriods.backOffPeriodMs,
      maxMs: KubeletPeriods.maxContainerBackOffMs,
      expiryMs: KubeletPeriods.crashLoopBackOffExpiryMs,
      clock,
    });
  }

  /**
   * Restores a backoff from {@link Backoff.toJSON}; throws a KubeError `InvalidBackoffState` on a
   * malformed state.
   */
  static fromJSON(state: BackoffState, clock: { now(): number }, opts?: Pick<BackoffOptions, 'maxJitterFactor' | 'random'>): Backoff {
    const ok =
      typeof state === 'object' &&
      state !== null &&
      state.version === 1 &&
      [state.initialMs, state.maxMs, state.expiryMs].every((n) => typeof n === 'number' && Number.isFinite(n)) &&
      typeof state.entries === 'object' &&
      state.entries !== null;
    if (!ok) throw new KubeError('InvalidBackoffState', 'invalid backoff state: expected {version: 1, initialMs, maxMs, expiryMs, entries}');
    const b = new Backoff({ initialMs: state.initialMs, maxMs: state.maxMs, expiryMs: state.expiryMs, clock, ...opts });
    for (const [id, e] of Object.entries(state.entries)) {
      if (typeof e?.backoffMs !== 'number' || typeof e.lastUpdate !== 'number') {
        throw new KubeError('InvalidBackoffState', `invalid backoff state: bad entry ${JSON.stringify(id)}`);
      }
      b.#entries.set(id, { backoffMs: e.backoffMs, lastUpdate: e.lastUpdate });
    }
    return b;
  }

  /**
   * The current backoff of `id` in ms (0 when unknown).
   *
   * Models Backoff.Get.
   */
  get(id: string): number {
    return this.#entries.get(id)?.backoffMs ?? 0;
  }

  /** When `id` last moved to its next backoff (ms since the epoch), or undefined when unknown. */
  lastUpdate(id: string): number | undefined {
    return this.#entries.get(id)?.lastUpdate;
  }

  /**
   * Moves `id` to its next backoff: `initialMs` when unknown or expired relative to `eventTime`, else
   * double (capped at `maxMs`); `lastUpdate` becomes the clock's now.
   *
   * Models Backoff.Next.
   */
  next(id: string, eventTime: number): void {
    const entry = this.#entries.get(id);
    let backoffMs: number;
    if (entry === undefined || this.#hasExpired(eventTime, entry.lastUpdate)) {
      backoffMs = this.#initialMs + this.#jitter(this.#initialMs);
    } else {
      backoffMs = Math.min(entry.backoffMs * 2 + this.#jitter(entry.backoffMs), this.#maxMs);
    }
    this.#entries.set(id, { backoffMs, lastUpdate: this.#clock.now() });
  }

  /**
   * True when less than the current backoff has passed since `eventTime` (e.g. the container's
   * `finishedAt`), unless the entry has expired.
   *
   * Models Backoff.IsInBackOffSince.
   */
  isInBackOffSince(id: string, eventTime: number): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined || this.#hasExpired(eventTime, entry.lastUpdate)) return false;
    return this.#clock.now() - eventTime < entry.backoffMs;
  }

  /**
   * True when `eventTime` is less than the current backoff after the last update.
   *
   * Models Backoff.IsInBackOffSinceUpdate.
   */
  isInBackOffSinceUpdate(id: string, eventTime: number): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined || this.#hasExpired(eventTime, entry.lastUpdate)) return false;
    return eventTime - entry.lastUpdate < entry.backoffMs;
  }

  /**
   * Forgets `id`.
   *
   * Models Backoff.Reset / DeleteEntry.
   */
  reset(id: string): void {
    this.#entries.delete(id);
  }

  /**
   * Drops every entry that has expired relative to now. Call it periodically (housekeeping).
   *
   * Models Backoff.GC.
   */
  gc(): void {
    const now = this.#clock.now();
    for (const [id, e] of this.#entries) if (this.#hasExpired(now, e.lastUpdate)) this.#entries.delete(id);
  }

  /** The number of keys held. */
  get size(): number {
    return this.#entries.size;
  }

  /** The persistable state. */
  toJSON(): BackoffState {
    const entries: Record<string, BackoffEntry> = {};
    for (const [id, e] of this.#entries) entries[id] = { backoffMs: e.backoffMs, lastUpdate: e.lastUpdate };
    return { version: 1, initialMs: this.#initialMs, maxMs: this.#maxMs, expiryMs: this.#expiryMs, entries };
  }

  #hasExpired(eventTime: number, lastUpdate: number): boolean {
    return eventTime - lastUpdate > this.#expiryMs;
  }

  #jitter(ms: number): number {
    return this.#jitterFactor > 0 ? this.#random() * this.#jitterFactor * ms : 0;
  }
}

/**
 * The crash-loop backoff key of a container: `<podName>_<namespace>_<uid>_<containerName>_<hash>`.
 * A changed definition gets a fresh backoff.
 *
 * Models kuberuntime.GetStableKey.
 */
export function crashLoopBackOffKey(pod: { metadata: { name?: string | undefined; namespace?: string | undefined; uid?: string | undefined } }, container: Container): string {
  return `${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? ''}_${pod.metadata.uid ?? ''}_${container.name}_${hashContainer(container)}`;
}
