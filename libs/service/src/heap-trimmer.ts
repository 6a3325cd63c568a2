/**
 * Gives the memory a burst left behind back to the system once the process is quiet again.
 *
 * V8 keeps the pages a burst made its heap grow by after their objects died (its page pool, and a
 * young generation grown to its maximum): a 1,000-pod burst left cri-adapter at ~250 MiB of RSS
 * with ~30 MiB of live heap, for minutes. Only a memory-reducing GC releases them, and V8 runs one
 * by itself (its memory reducer) only once the process allocates under ~1 MB/s, which a process
 * holding many pods (relists, watches, heartbeats) never does. The trimmer runs that GC itself:
 * every `intervalMs` it looks at the process, and once it has been quiet for `quietIntervals` in a
 * row — under `quietCpuShare` of a core and its event loop busy under `quietLoopShare` of the time —
 * while its RSS is `minGrowthBytes` above what the last trim left, it runs one memory-reducing GC (at
 * most one per `minTrimIntervalMs`). Both signals, because on a loaded machine a process with work
 * waiting gets little CPU (its CPU share looks quiet) but its event loop is busy all the time.
 *
 * ```
 * tick ─► busy (CPU ≥ quietCpuShare or loop ≥ quietLoopShare) ─► quiet count = 0 ─────────► wait
 *      ─► quiet for < quietIntervals, RSS < floor + minGrowthBytes, or trimmed < minTrimIntervalMs ago ─► wait
 *      ─► otherwise ─► reducing GC ─► floor = RSS after, quiet count = 0 ─────────────────► wait
 * ```
 *
 * The GC is `gc({type: 'major', flavor: 'last-resort'})`, which exists when the process runs with
 * `--expose-gc` (`splitlet up` starts every process so); without it there is no trimmer. It is two
 * compacting collections of the live heap: ~70–110 ms of CPU for a ~20 MiB heap, only when the
 * process is quiet, once after a burst (and once after start-up).
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
  /** The share of the time since the previous call the event loop was busy (0–1). @default from performance.eventLoopUtilization() */
  readonly loopBusyShare?: () => number;
  /**
   * How often the process is looked at. @default 1000 — at 2 s an idle process woke half as often
   * (~0.02 % of a core less each), but the trims after start-up and after a burst came seconds
   * later, and the bench's RSS right after them was up to 50 MiB higher.
   */
  readonly intervalMs?: number;
  /** Below this share of one core over an interval (and the loop under `quietLoopShare`), the process is quiet. @default 0.25 */
  readonly quietCpuShare?: number;
  /** Below this share of an interval with its event loop busy (and the CPU under `quietCpuShare`), the process is quiet. @default 0.3 */
  readonly quietLoopShare?: number;
  /** Quiet intervals in a row before a trim. @default 2 */
  readonly quietIntervals?: number;
  /** RSS growth over what the last trim left (or over nothing, at start) that is worth a trim: a trim costs ~100 ms of CPU, and a process that grew less is far from its bound (200 MB holding 1,000 pods). @default 48 MiB */
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
  const loopBusyShare = o.loopBusyShare ?? eventLoopBusyShare();
  const intervalMs = o.intervalMs ?? 1000;
  const quietShare = o.quietCpuShare ?? 0.25;
  const quietLoop = o.quietLoopShare ?? 0.3;
  const quietIntervals = o.quietIntervals ?? 2;
  const minGrowth = o.minGrowthBytes ?? 48 * MiB;
  const minTrimInterval = o.minTrimIntervalMs ?? 15_000;
  let floor = 0;
  let lastTrim = -Infinity;
  let lastCpu = cpuMicros();
  let lastAt = clock.now();
  let quietFor = 0;
  let timer: TimerHandle | undefined;

  const tick = (): void => {
    timer = undefined;
    if (o.signal.aborted) return;
    const now = clock.now();
    const cpu = cpuMicros();
    const share = now > lastAt ? (cpu - lastCpu) / 1000 / (now - lastAt) : 1;
    const loop = loopBusyShare();
    lastCpu = cpu;
    lastAt = now;
    quietFor = share < quietShare && loop < quietLoop ? quietFor + 1 : 0;
    const before = rss();
    if (quietFor >= quietIntervals && before >= floor + minGrowth && now - lastTrim >= minTrimInterval) {
      const t0 = performance.now();
      o.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      const ms = performance.now() - t0;
      floor = rss();
      lastTrim = clock.now();
      quietFor = 0;
      // The trim's own CPU and loop time do not make the next interval look busy.
      lastCpu = cpuMicros();
      lastAt = lastTrim;
      loopBusyShare();
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

/** The event loop's busy share between calls, from `performance.eventLoopUtilization()`. */
function eventLoopBusyShare(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const d = performance.eventLoopUtilization(now, last);
    last = now;
    return d.utilization;
  };
}

/** The process's exposed `gc` (`--expose-gc`), if it has one. */
export function exposedGc(): ExposedGc | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? (gc as ExposedGc) : undefined;
}
