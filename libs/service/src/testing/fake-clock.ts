import type { Clock, TimerHandle } from '../clock.js';

interface FakeTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/**
 * A manual {@link Clock} for tests: time moves only when the test calls `advance`, and timers fire
 * (in due-time order, then creation order) as time passes them, with `now()` equal to each timer's
 * due time while it runs. Timers scheduled by a firing timer run in the same `advance` when due
 * within it. Models k8s.io/utils/clock/testing `FakeClock`.
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: FakeTimer[] = [];

  /** @param startMs the initial `now()`. @default 0 */
  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: FakeTimer = { id: this.#nextId++, due: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t !== handle);
  }

  /** How many timers are waiting (a test can assert none leaked). */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Due time of the next timer, if any. */
  nextTimerAt(): number | undefined {
    return this.#earliest(Number.POSITIVE_INFINITY)?.due;
  }

  /**
   * Moves time forward by `ms`, firing due timers synchronously. Promise continuations of the
   * fired callbacks run after this returns; use {@link FakeClock.advanceAsync} when they schedule
   * further timers that must fire within the same step. Returns how many timers fired.
   */
  advance(ms: number): number {
    const target = this.#now + Math.max(0, ms);
    let fired = 0;
    for (let t = this.#earliest(target); t !== undefined; t = this.#earliest(target)) {
      this.#fire(t);
      fired++;
    }
    this.#now = target;
    return fired;
  }

  /**
   * Like {@link FakeClock.advance}, but lets pending promise continuations run (one macrotask
   * turn) before starting and after each timer, so `await sleep(…)` loops can schedule their next
   * timer within the step. Returns how many timers fired.
   */
  async advanceAsync(ms: number): Promise<number> {
    const target = this.#now + Math.max(0, ms);
    let fired = 0;
    await turn();
    for (let t = this.#earliest(target); t !== undefined; t = this.#earliest(target)) {
      this.#fire(t);
      fired++;
      await turn();
    }
    this.#now = target;
    return fired;
  }

  #earliest(limit: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.#timers) {
      if (t.due > limit) continue;
      if (best === undefined || t.due < best.due || (t.due === best.due && t.id < best.id)) best = t;
    }
    return best;
  }

  #fire(t: FakeTimer): void {
    this.#timers = this.#timers.filter((x) => x !== t);
    this.#now = Math.max(this.#now, t.due);
    t.fn();
  }
}

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
