/** An opaque timer handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = object;

/**
 * The time source every component that waits or measures takes as a dependency (the kubelet's
 * `clock.Clock` field), so tests can drive time with `FakeClock` from `@splitlet/service/testing`.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a no-op for one that already fired or was cancelled. */
  clearTimeout(handle: TimerHandle): void;
}

/** The wall clock and Node's timers. */
export const realClock: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (fn: () => void, ms: number): TimerHandle => setTimeout(fn, ms),
  clearTimeout: (handle: TimerHandle) => clearTimeout(handle as NodeJS.Timeout),
});

/**
 * Waits `ms` milliseconds on `clock`, or less if `signal` aborts. Resolves `true` when the full time
 * passed and `false` when aborted (also when already aborted); never rejects. The timer and the
 * abort listener are always removed, so an abandoned loop leaks nothing. Loop shape:
 * `while (await sleep(periodMs, signal)) { … }`.
 */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock): Promise<boolean> {
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      resolve(false);
    };
    const timer = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
