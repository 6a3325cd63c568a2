/**
 * When to relist: every period, and soon after a poke — never two relists at once.
 *
 * Models the `wait.Until(g.Relist, relistPeriod)` driver of GenericPLEG.Start (the period is measured
 * from the end of one relist to the start of the next), plus splitlet's poke: cri-adapter asks for a
 * relist right after a runtime change so a pod does not wait up to a full period.
 *
 *     poke ──10 ms debounce──▶ relist ──period──▶ relist ──period──▶ …
 *     poke during a relist  ──▶ one more relist right after it
 */
import type { Clock, TimerHandle } from '@splitlet/service';

/** Options of {@link RelistLoop}. */
export interface RelistLoopOptions {
  /** One relist; must not throw (GenericPleg.relist never does). */
  readonly relist: () => Promise<unknown>;
  /** Receives an error `relist` threw (a bug: relist should report failures itself). */
  readonly onError: (e: unknown) => void;
  readonly periodMs: number;
  /** Pokes closer together than this collapse into one relist. @default 10 */
  readonly debounceMs?: number;
  readonly clock: Clock;
  readonly signal: AbortSignal;
}

/** Drives relists until the signal aborts. */
export class RelistLoop {
  readonly #o: RelistLoopOptions;
  #running = false;
  #again = false;
  #periodTimer: TimerHandle | undefined;
  #debounceTimer: TimerHandle | undefined;
  #idle: Promise<void> = Promise.resolve();
  #relists = 0;

  constructor(options: RelistLoopOptions) {
    this.#o = options;
    options.signal.addEventListener('abort', () => this.#clearTimers(), { once: true });
  }

  /** Starts with an immediate relist. */
  start(): void {
    if (this.#o.signal.aborted) return;
    this.#schedule(0);
  }

  /** Asks for a relist soon (after the debounce), or right after the one in progress. */
  poke(): void {
    if (this.#o.signal.aborted) return;
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
    this.#idle = (async () => {
      try {
        await this.#o.relist();
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
