import { inspect } from 'node:util';
import { TestkitError, TestkitErrorCodes } from './testkit-error.js';

/** Options of {@link eventually}. */
export interface EventuallyOptions {
  /** Give up after this long. @default 10000 */
  readonly timeoutMs?: number;
  /** Pause between attempts. @default 50 */
  readonly intervalMs?: number;
  /** Says what was awaited, at the start of the timeout error. @default 'condition' */
  readonly message?: string;
}

/**
 * Polls `fn` until it returns (or resolves to) a truthy value without throwing, and resolves with
 * that value (typed without `undefined` and `null`: callers need not check again) — for state that converges asynchronously in integration tests ("the pod reaches
 * Running"), never as a disguised sleep. An attempt still running at the deadline is abandoned.
 *
 * @throws {@link TestkitError} `Timeout`, whose message and `cause` carry the last error (or the
 *   last falsy value).
 */
export async function eventually<T>(fn: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let last: unknown = new Error('no attempt finished');
  let attempts = 0;
  for (;;) {
    attempts++;
    const remaining = Math.max(0, deadline - Date.now());
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<{ timedOut: true }>((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), remaining);
    });
    try {
      const outcome = await Promise.race([
        Promise.resolve()
          .then(fn)
          .then((value) => ({ timedOut: false as const, value })),
        outOfTime,
      ]);
      if (!outcome.timedOut) {
        if (outcome.value) return outcome.value;
        last = new Error(`returned ${inspect(outcome.value)}`);
      } else {
        last = new Error(`the attempt was still running at the deadline (previous: ${describe(last)})`);
      }
    } catch (e) {
      last = e;
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() >= deadline) {
      throw new TestkitError(TestkitErrorCodes.Timeout, `${options.message ?? 'condition'} not met within ${timeoutMs} ms (${attempts} attempts); last: ${describe(last)}`, {
        cause: last,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : inspect(e);
}
