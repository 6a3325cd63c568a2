/**
 * Gives the memory a burst left behind back to the system once the process is quiet again.
 *
 * V8 keeps the pages a burst made its heap grow by after their objects died (its page pool, and a
 * young generation grown to its maximum): a 1,000-pod burst left cri-adapter at ~250 MiB of RSS
 * with ~30 MiB of live heap, for minutes. Only a memory-reducing GC releases them, and V8 runs one
 * by itself (its memory reducer) only once the process allocates under ~1 MB/s, which a process
 * holding many pods (relists, watches, heartbeats) never does. The trimmer runs that GC itself:
 * every `intervalMs` it reads the process's CPU time and RSS, and when the process used less than
 * `quietCpuShare` of a core in the last interval while its RSS is `minGrowthBytes` above what the
 * last trim left, it runs one memory-reducing GC (at most one per `minTrimIntervalMs`).
 *
 * ```
 * tick ─► busy (CPU share ≥ quietCpuShare) ─────────────────────────────► wait
 *      ─► quiet, RSS < floor + minGrowthBytes, or trimmed < minTrimIntervalMs ago ─► wait
 *      ─► quiet, RSS ≥ floor + minGrowthBytes ─► reducing GC ─► floor = RSS after ─► wait
 * ```
 *
 * The GC is `gc({type: 'major', flavor: 'last-resort'})`, which exists when the process runs with
 * `--expose-gc` (`splitlet up` starts every process so); without it there is no trimmer. It blocks
 * the event loop for one full collection of the live heap (tens of ms), only when the process is
 * quiet, once per burst.
 */
import { realClock, type Clock, type TimerHandle } from './clock.js';

/** V8's `gc` of `--expose-gc`, with the options it takes. */
export type ExposedGc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => unknown;

/** One trim, for the log and the metric. */
export interface HeapTrim {
  readonly rssBefore: number;
  readonly rssAfter: number;
  readonly ms: number;
}

/** Options of {@link startHeapTrimmer}. */
export interface HeapTrimmerOptions {
  /** The memory-reducing GC. */
  readonly gc: ExposedGc;
  /** Stops the trimmer. */
  readonly signal: AbortSignal;
  /** @default realClock */
  readonly clock?: Clock;
  /** Resident set size in bytes. @default process.memoryUsage.rss */
  readonly rss?: () => number;
  /** CPU time used so far, user + system, in microseconds. @default from process.cpuUsage() */
  readonly cpuMicros?: () => number;
  /** How often the process is looked at. @default 1000 */
  readonly intervalMs?: number;
  /** Below this share of one core over an interval, the process is quiet. @default 0.2 */
  readonly quietCpuShare?: number;
  /** RSS growth over what the last trim left (or over nothing, at start) that is worth a trim. @default 24 MiB */
  readonly minGrowthBytes?: number;
  /** At most one trim per this many milliseconds. @default 15000 */
  readonly minTrimIntervalMs?: number;
  /** Called after each trim. */
  readonly onTrim?: (t: HeapTrim) => void;
}

const MiB = 1024 * 1024;

/**
 * Starts the trimmer; it stops when `signal` aborts. Its timer does not keep the process alive.
 * Not re-entrant with itself: one instance per process.
 */
export function startHeapTrimmer(o: HeapTrimmerOptions): void {
  const clock = o.clock ?? realClock;
  const rss = o.rss ?? (() => process.memoryUsage.rss());
  const cpuMicros =
    o.cpuMicros ??
    (() => {
      const c = process.cpuUsage();
      return c.user + c.system;
    });
  const intervalMs = o.intervalMs ?? 1000;
  const quietShare = o.quietCpuShare ?? 0.2;
  const minGrowth = o.minGrowthBytes ?? 24 * MiB;
  const minTrimInterval = o.minTrimIntervalMs ?? 15_000;
  let floor = 0;
  let lastTrim = -Infinity;
  let lastCpu = cpuMicros();
  let lastAt = clock.now();
  let timer: TimerHandle | undefined;

  const tick = (): void => {
    timer = undefined;
    if (o.signal.aborted) return;
    const now = clock.now();
    const cpu = cpuMicros();
    const share = now > lastAt ? (cpu - lastCpu) / 1000 / (now - lastAt) : 1;
    lastCpu = cpu;
    lastAt = now;
    const before = rss();
    if (share < quietShare && before >= floor + minGrowth && now - lastTrim >= minTrimInterval) {
      const t0 = performance.now();
      o.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      const ms = performance.now() - t0;
      floor = rss();
      lastTrim = clock.now();
      // The trim's own CPU does not make the next interval look busy.
      lastCpu = cpuMicros();
      lastAt = lastTrim;
      o.onTrim?.({ rssBefore: before, rssAfter: floor, ms });
    }
    schedule();
  };
  const schedule = (): void => {
    timer = clock.setTimeout(tick, intervalMs);
    (timer as { unref?: () => void }).unref?.();
  };
  o.signal.addEventListener(
    'abort',
    () => {
      if (timer !== undefined) clock.clearTimeout(timer);
    },
    { once: true },
  );
  if (!o.signal.aborted) schedule();
}

/** The process's exposed `gc` (`--expose-gc`), if it has one. */
export function exposedGc(): ExposedGc | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? (gc as ExposedGc) : undefined;
}
