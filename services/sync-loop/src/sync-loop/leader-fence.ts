/**
 * The fence of one leadership term. Every write of the leader (sl_desired, sl_kill, SL_WORK pokes)
 * first asks the fence, and carries its epoch (the lease revision at acquisition, monotonic in the
 * lease bucket's stream).
 *
 * The lease expires `ttlMs` after the server stored the last renewal; a renewal is counted from the
 * moment it was *sent*, so the fence closes before the lease can have expired, with `marginMs` to
 * spare. A leader paused (SIGSTOP, a long GC) past its lease finds the fence closed as soon as it
 * runs again, before its renew loop has noticed the loss: its writes are refused, not applied.
 */
import type { Clock } from '@splitlet/service';

/**
 * Thrown by a refused write of a leader whose term ended (or may have ended). Retryable: the message
 * whose handling it refused is nak'ed, not dead-lettered, so the leader of now handles it (a paused
 * leader resumed with config updates in hand must not lose them).
 */
export class FencedError extends Error {
  readonly retryable = true;

  constructor(message: string) {
    super(message);
    this.name = 'FencedError';
  }
}

/** What a write admitted by a {@link LeaderFence} carries. */
export interface LeaderStamp {
  readonly leaderEpoch: number;
  /** When the fence admitted it (ms since the Unix epoch). */
  readonly fencedAt: number;
}

/** Options of {@link LeaderFence}. */
export interface LeaderFenceOptions {
  readonly epoch: number;
  readonly clock: Clock;
  /** The lease TTL (bucket TTL). */
  readonly ttlMs: number;
  /** Safety margin before the TTL. @default 1000 */
  readonly marginMs?: number;
  /** Aborts when the term ends (lease lost, shutdown). */
  readonly signal: AbortSignal;
}

/** The writer's side of leader fencing for one term. */
export class LeaderFence {
  readonly epoch: number;
  readonly #o: LeaderFenceOptions;
  #validFrom: number;

  constructor(options: LeaderFenceOptions, acquireSentAt: number) {
    this.epoch = options.epoch;
    this.#o = options;
    this.#validFrom = acquireSentAt;
  }

  /** Records a successful renewal whose request was sent at `sentAt`. */
  renewed(sentAt: number): void {
    if (sentAt > this.#validFrom) this.#validFrom = sentAt;
  }

  /** Why a write must be refused now, or undefined when this term may still write. */
  closedReason(): string | undefined {
    if (this.#o.signal.aborted) return `leader term ${this.epoch} ended`;
    const age = this.#o.clock.now() - this.#validFrom;
    const limit = this.#o.ttlMs - (this.#o.marginMs ?? 1000);
    if (age >= limit) return `leader term ${this.epoch}: the lease was last confirmed ${age} ms ago, it may have expired (limit ${limit} ms)`;
    return undefined;
  }

  /** Throws {@link FencedError} when this term may no longer write. */
  check(what: string): void {
    const reason = this.closedReason();
    if (reason !== undefined) throw new FencedError(`refused ${what}: ${reason}`);
  }

  /**
   * {@link LeaderFence.check}, then the stamp the admitted write carries: the term's epoch and the
   * time of admission. A write admitted just before the process was paused still goes out when it
   * resumes (the residual window between the check and the socket); its `fencedAt` tells it apart
   * from a write the fence should have refused.
   */
  admit(what: string): LeaderStamp {
    this.check(what);
    return { leaderEpoch: this.epoch, fencedAt: this.#o.clock.now() };
  }
}
