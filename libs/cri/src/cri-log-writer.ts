/**
 * The CRI container log format, as containerd writes it and the kubelet reads it
 * (`<RFC3339Nano time> <stdout|stderr> <F|P> <text>`, one line per line of output).
 */
import * as fs from 'node:fs';

const NS_PER_MS = 1_000_000n;
let clockBase = BigInt(Date.now()) * NS_PER_MS - process.hrtime.bigint();

/**
 * Now, in nanoseconds since the epoch: the monotonic clock, never behind the wall clock. The two
 * drift apart (NTP slews or steps the wall clock; seen: 20 ms in a minute and a half), and other
 * processes stamp with the wall clock — a container's exit then looked earlier than the Killing
 * event that stopped it. When the wall clock is ahead, the base moves up to it; never back.
 */
export function nowNs(): bigint {
  const mono = clockBase + process.hrtime.bigint();
  const wall = BigInt(Date.now()) * NS_PER_MS;
  if (wall <= mono) return mono;
  clockBase += wall - mono;
  return wall;
}

/**
 * Formats nanoseconds since the epoch like Go's `time.RFC3339Nano` in UTC
 * (`2024-05-01T10:00:00.123456789Z`, trailing zeros of the fraction dropped).
 */
export function formatRfc3339Nano(ns: bigint): string {
  const ms = ns / NS_PER_MS;
  const iso = new Date(Number(ms)).toISOString(); // 2024-05-01T10:00:00.123Z
  const fraction = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
}

/** Where a process's output goes. */
export interface OutputSink {
  write(text: string): void;
}

/**
 * Writes a container's stdout/stderr to its CRI log file. Complete lines are written as `F` records
 * as they are produced; a last line without a newline is written as a `P` (partial) record when the
 * container exits ({@link CriLogWriter.flush}), as containerd does for output that does not end with
 * a newline. Writes are synchronous, so the file is complete once the container is reported EXITED.
 * Long lines are not split into `P` records.
 */
export class CriLogWriter {
  readonly #path: string | undefined;
  readonly #partial = { stdout: '', stderr: '' };

  /** @param path the log file; undefined discards output (no log directory/path configured). */
  constructor(path: string | undefined) {
    this.#path = path;
  }

  /** Creates the file if needed (appends otherwise). Throws if its directory does not exist, like containerd. */
  open(): void {
    if (this.#path === undefined) return;
    fs.closeSync(fs.openSync(this.#path, 'a'));
  }

  /** A sink for one stream. */
  sink(stream: 'stdout' | 'stderr'): OutputSink {
    return { write: (text) => this.#write(stream, text) };
  }

  #write(stream: 'stdout' | 'stderr', text: string): void {
    if (this.#path === undefined || text === '') return;
    const lines = (this.#partial[stream] + text).split('\n');
    this.#partial[stream] = lines.pop() ?? '';
    if (lines.length === 0) return;
    const ts = formatRfc3339Nano(nowNs());
    this.#append(lines.map((l) => `${ts} ${stream} F ${l}\n`).join(''));
  }

  /** Writes any unterminated last line of each stream, as a partial record. */
  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.#partial[stream];
      this.#partial[stream] = '';
      if (rest !== '' && this.#path !== undefined) this.#append(`${formatRfc3339Nano(nowNs())} ${stream} P ${rest}\n`);
    }
  }

  #append(data: string): void {
    if (this.#path === undefined) return;
    try {
      fs.appendFileSync(this.#path, data);
    } catch {
      // The log file was removed (the kubelet rotates/deletes logs); output is lost, as with a real runtime.
    }
  }
}
