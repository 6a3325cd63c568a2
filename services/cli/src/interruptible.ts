/**
 * The watch loops of the CLI (`logs -f`, `events -w`, `get partitions -w`) run until Ctrl-C or
 * SIGTERM: the signal aborts them, and the handlers are removed when they end.
 */

/** Runs `fn` with a signal that aborts on SIGINT/SIGTERM. */
export async function untilInterrupted<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await fn(ac.signal);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** Calls `step` every `everyMs` (the first time after one period) until Ctrl-C or SIGTERM. */
export function pollUntilInterrupted(everyMs: number, step: () => Promise<void>): Promise<void> {
  return untilInterrupted(async (signal) => {
    while (!signal.aborted) {
      await new Promise<void>((r) => {
        const timer = setTimeout(r, everyMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), r()), { once: true });
      });
      if (!signal.aborted) await step();
    }
  });
}
