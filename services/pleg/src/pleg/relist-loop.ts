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
 */
import type { Clock, TimerHandle } from '@splitlet/service';

/** At most this many triggers are kept per relist (a poke storm must not grow memory). */
export const MAX_TRIGGERS_PER_RELIST = 32;

/** Options of {@link RelistLoop}. `T` is what a poke carries (a trace context in pleg). */
export interface RelistLoopOptions<T = never> {
  /**
   * One relist, given the triggers of the pokes it serves (empty for a periodic relist; the first
   * {@link MAX_TRIGGERS_PER_RELIST} when more arrived); must not throw (GenericPleg.relist never does).
   */
  readonly relist: (triggers: readonly T[]) => Promise<unknown>;
  /** Receives an error `relist` threw (a bug: relist should report failures itself). */
  readonly onError: (e: unknown) => void;
  readonly periodMs: number;
  /** Pokes closer together than this collapse into one relist. @default 10 */
  readonly debounceMs?: number;
  readonly clock: Clock;
  readonly signal: AbortSignal;
}

/** Drives relists until the signal aborts. */
export class RelistLoop<T = never> {
  readonly #o: RelistLoopOptions<T>;
  /** Triggers of the pokes since the last relist started. */
  #triggers: T[] = [];
  #running = false;
  #again = false;
  #periodTimer: TimerHandle | undefined;
  #debounceTimer: TimerHandle | undefined;
  #idle: Promise<void> = Promise.resolve();
  #relists = 0;

  constructor(options: RelistLoopOptions<T>) {
    this.#o = options;
    options.signal.addEventListener('abort', () => this.#clearTimers(), { once: true });
  }

  /** Starts with an immediate relist. */
  start(): void {
    if (this.#o.signal.aborted) return;
    this.#schedule(0);
  }

  /**
   * Asks for a relist soon (after the debounce), or right after the one in progress. The
   * `trigger`, when given, is handed to that relist.
   */
  poke(trigger?: T): void {
    if (this.#o.signal.aborted) return;
    if (trigger !== undefined && this.#triggers.length < MAX_TRIGGERS_PER_RELIST) this.#triggers.push(trigger);
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
    this.#idle = (async () => {
      try {
        await this.#o.relist(triggers);
      } catch (e) {
        this.#o.onError(e);
      } finally {
        this.#running = false;
      }
      if (this.#o.signal.aborted) return;
      if (this.#again) {
        this.#again = false;
        this.#schedule(0);
      } else {
        this.#schedule(this.#o.periodMs);
      }
    })();
  }

  #schedule(ms: number): void {
    if (this.#periodTimer !== undefined) this.#o.clock.clearTimeout(this.#periodTimer);
    this.#periodTimer = this.#o.clock.setTimeout(() => {
      this.#periodTimer = undefined;
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
