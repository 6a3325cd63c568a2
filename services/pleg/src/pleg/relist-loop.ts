/**
 * When to relist: every period, and soon after a poke — never two relists at once.
 *
 * Models the `wait.Until(g.Relist, relistPeriod)` driver of GenericPLEG.Start (the period is measured
 * from the end of one relist to the start of the next), plus splitlet's poke: cri-adapter asks for a
 * relist right after a runtime change so a pod does not wait up to a full period.
 *
 *     poke ──10 ms debounce──▶ relist ──period──▶ relist ──period──▶ …
 *     poke during a relist  ──▶ one more relist right after it
 *
 * A poke may carry a trigger (pleg passes the poke's trace context): each relist receives the
 * triggers of the pokes it serves — those that arrived since the previous relist started — so it
 * can be traced as their consequence. A relist started by the period alone receives none.
 *
 * A poke may name a pod (its UID): a relist serving only such pokes is targeted at those pods, so
 * its cost does not grow with the number of pods. A poke without a UID, the period and the first
 * relist are full. Targeted relists never postpone the full one: it stays due `periodMs` after the
 * previous full relist ended (the safety net that sees changes nobody poked about).
 */
import type { Clock, TimerHandle } from '@splitlet/service';

/** At most this many triggers are kept per relist (a poke storm must not grow memory). */
export const MAX_TRIGGERS_PER_RELIST = 32;

/** More pods than this poked since the last relist make the next relist a full one. */
export const MAX_TARGETED_PODS = 256;

/** Options of {@link RelistLoop}. `T` is what a poke carries (a trace context in pleg). */
export interface RelistLoopOptions<T = never> {
  /**
   * One relist, given the triggers of the pokes it serves (empty for a periodic relist; the first
   * {@link MAX_TRIGGERS_PER_RELIST} when more arrived) and, for a targeted relist, the UIDs of the
   * poked pods (`undefined`: a full relist); must not throw (GenericPleg.relist never does).
   */
  readonly relist: (triggers: readonly T[], uids: readonly string[] | undefined) => Promise<unknown>;
  /** Receives an error `relist` threw (a bug: relist should report failures itself). */
  readonly onError: (e: unknown) => void;
  /** The full relist's period at start (see {@link RelistLoop.setPeriod}). */
  readonly periodMs: number;
  /** Pokes closer together than this collapse into one relist. @default 10 */
  readonly debounceMs?: number;
  readonly clock: Clock;
  readonly signal: AbortSignal;
}

/** Drives relists until the signal aborts. */
export class RelistLoop<T = never> {
  readonly #o: RelistLoopOptions<T>;
  /** The period of the full relist (the evented PLEG lengthens it while the runtime's events flow). */
  #periodMs: number;
  /** Triggers of the pokes since the last relist started. */
  #triggers: T[] = [];
  /** Pods poked since the last relist started; `undefined` once the next relist must be full. */
  #uids: Set<string> | undefined = undefined;
  /** When the last full relist ended (`undefined` before the first). */
  #fullEndedAt: number | undefined;
  #running = false;
  #again = false;
  #periodTimer: TimerHandle | undefined;
  /** Whether the pending `#periodTimer` is the period's (not a relist asked for right after another). */
  #periodTimerIsPeriod = false;
  #debounceTimer: TimerHandle | undefined;
  #idle: Promise<void> = Promise.resolve();
  #relists = 0;

  constructor(options: RelistLoopOptions<T>) {
    this.#o = options;
    this.#periodMs = options.periodMs;
    options.signal.addEventListener('abort', () => this.#clearTimers(), { once: true });
  }

  /** Starts with an immediate relist. */
  start(): void {
    if (this.#o.signal.aborted) return;
    this.#schedule(0, true);
  }

  /**
   * Asks for a relist soon (after the debounce), or right after the one in progress. The
   * `trigger`, when given, is handed to that relist; `uid`, when given, targets it at that pod.
   */
  poke(trigger?: T, uid?: string): void {
    if (this.#o.signal.aborted) return;
    if (trigger !== undefined && this.#triggers.length < MAX_TRIGGERS_PER_RELIST) this.#triggers.push(trigger);
    this.#target(uid);
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#debounceTimer !== undefined) return;
    this.#debounceTimer = this.#o.clock.setTimeout(() => {
      this.#debounceTimer = undefined;
      this.#run();
    }, this.#o.debounceMs ?? 10);
  }

  /** The full relist's period now. */
  get periodMs(): number {
    return this.#periodMs;
  }

  /**
   * Changes the full relist's period: the next full relist is due `ms` after the previous one ended
   * (at once if that is past). A relist in progress finishes first.
   */
  setPeriod(ms: number): void {
    if (ms === this.#periodMs) return;
    this.#periodMs = ms;
    if (this.#o.signal.aborted || this.#running || this.#fullEndedAt === undefined || this.#periodTimer === undefined || !this.#periodTimerIsPeriod) return;
    this.#schedule(Math.max(0, this.#fullEndedAt + ms - this.#o.clock.now()), true);
  }

  /** Relists started so far. */
  get relists(): number {
    return this.#relists;
  }

  /** Resolves once no relist is in progress (after abort: the loop has stopped). */
  idle(): Promise<void> {
    return this.#idle;
  }

  #run(): void {
    if (this.#o.signal.aborted) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#clearTimers();
    this.#running = true;
    this.#relists++;
    const triggers = this.#triggers;
    this.#triggers = [];
    const now = this.#o.clock.now();
    // Full when asked, and when the period since the last full relist is over.
    const full = this.#uids === undefined || this.#fullEndedAt === undefined || now >= this.#fullEndedAt + this.#periodMs;
    const uids = full ? undefined : [...this.#uids!];
    this.#uids = new Set();
    this.#idle = (async () => {
      try {
        await this.#o.relist(triggers, uids);
      } catch (e) {
        this.#o.onError(e);
      } finally {
        this.#running = false;
      }
      if (this.#o.signal.aborted) return;
      if (full) this.#fullEndedAt = this.#o.clock.now();
      if (this.#again) {
        this.#again = false;
        this.#schedule(0, false);
      } else {
        this.#schedule(Math.max(0, this.#fullEndedAt! + this.#periodMs - this.#o.clock.now()), true);
      }
    })();
  }

  /** Records what the next relist must cover: one more pod, or (no UID, too many pods) everything. */
  #target(uid: string | undefined): void {
    if (this.#uids === undefined) return;
    if (uid === undefined || this.#uids.size >= MAX_TARGETED_PODS) this.#uids = undefined;
    else this.#uids.add(uid);
  }

  /** Runs a relist after `ms`; a `periodic` one is full whatever was poked meanwhile. */
  #schedule(ms: number, periodic: boolean): void {
    if (this.#periodTimer !== undefined) this.#o.clock.clearTimeout(this.#periodTimer);
    this.#periodTimerIsPeriod = periodic;
    this.#periodTimer = this.#o.clock.setTimeout(() => {
      this.#periodTimer = undefined;
      if (periodic) this.#uids = undefined;
      this.#run();
    }, ms);
  }

  #clearTimers(): void {
    if (this.#periodTimer !== undefined) this.#o.clock.clearTimeout(this.#periodTimer);
    if (this.#debounceTimer !== undefined) this.#o.clock.clearTimeout(this.#debounceTimer);
    this.#periodTimer = undefined;
    this.#debounceTimer = undefined;
  }
}
