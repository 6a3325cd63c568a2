/**
 * Runs every splitlet process as its own OS process, prefixes their output, restarts a process
 * that dies (with backoff, like a process supervisor), and stops them all in reverse order.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { formatLogLine } from './console-format.js';
import type { LogFormat } from './console-format.js';

/** One process to supervise. */
export interface ProcessSpec {
  /** Unique name, also the log prefix (`pod-worker-2`). */
  name: string;
  /** The service's main module (a path to a .js file). */
  main: string;
  env: Record<string, string>;
  /** File the process writes its health port into (removed at each start: a port file is the current process's). */
  portFile?: string;
}

export interface SupervisorOptions {
  nodeBin: string;
  /** Flags given to `nodeBin` before each process's main (V8 heap bounds). @default [] */
  nodeFlags?: readonly string[];
  logsDir: string;
  /** Where prefixed lines go. */
  out: NodeJS.WritableStream;
  restart: boolean;
  /** Called when the set of pids changes (start, restart). */
  onChange?: () => void;
  color: boolean;
  /** `console`: readable lines (console-format.ts); `json`: each line as written, prefixed. @default 'console' */
  format?: LogFormat;
}

interface Running {
  spec: ProcessSpec;
  child: ChildProcess | undefined;
  restarts: number;
  startedAt: number;
  stopping: boolean;
  restartTimer: NodeJS.Timeout | undefined;
  log: WriteStream;
  exited: Promise<void>;
}

/**
 * Signals a process's whole group (each runs detached, in its own): a SIGKILLed nats guard must not
 * leave its nats-server behind, re-parented to init (seen after the reliability suites' runs).
 */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) {
      process.kill(-child.pid, signal);
      return;
    }
  } catch {
    // no such group any more: fall back to the process
  }
  child.kill(signal);
}

/** Whether the process of `r` is running: started, and not exited or killed since. */
function live(r: Running): r is Running & { child: ChildProcess } {
  return r.child !== undefined && r.child.exitCode === null && r.child.signalCode === null;
}

/** The health port the process wrote into its port file; undefined until it did. */
function healthPortOf(r: Running): number | undefined {
  if (r.spec.portFile === undefined) return undefined;
  try {
    const port = Number(readFileSync(r.spec.portFile, 'utf8').trim());
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined; // not written yet
  }
}

const COLORS = [31, 32, 33, 34, 35, 36, 91, 92, 93, 94, 95, 96];

/** Supervises a fixed set of processes. */
export class Supervisor {
  readonly #opts: SupervisorOptions;
  readonly #procs: Running[] = [];
  #stopping = false;

  constructor(opts: SupervisorOptions) {
    this.#opts = opts;
  }

  /** Starts a process (and remembers it for restarts and shutdown). */
  start(spec: ProcessSpec): void {
    const r: Running = {
      spec,
      child: undefined,
      restarts: 0,
      startedAt: 0,
      stopping: false,
      restartTimer: undefined,
      log: createWriteStream(join(this.#opts.logsDir, `${spec.name}.log`), { flags: 'a' }),
      exited: Promise.resolve(),
    };
    this.#procs.push(r);
    this.#launch(r);
  }

  #width(): number {
    return Math.max(...this.#procs.map((p) => p.spec.name.length), 14);
  }

  #colorOf(name: string): number {
    return COLORS[this.#procs.findIndex((p) => p.spec.name === name) % COLORS.length] ?? 37;
  }

  #prefix(name: string): string {
    const label = name.padEnd(this.#width());
    if (!this.#opts.color) return `${label} | `;
    return `\u001b[${this.#colorOf(name)}m${label} |\u001b[0m `;
  }

  /** A line of a process's output, as the console shows it. */
  #render(name: string, line: string): string | undefined {
    if (this.#opts.format === 'json') return `${this.#prefix(name)}${line}`;
    return formatLogLine(name, line, { color: this.#opts.color, processWidth: this.#width(), processColor: this.#colorOf(name) });
  }

  /** The supervisor's own note about a process (exited, restarting), as a warning line. */
  #note(name: string, text: string): void {
    const record = JSON.stringify({ time: new Date().toISOString(), level: 'warn', service: 'splitlet-up', msg: text });
    this.#opts.out.write(`${this.#opts.format === 'json' ? `${this.#prefix(name)}${text}` : this.#render(name, record)}\n`);
  }

  #launch(r: Running): void {
    if (r.spec.portFile !== undefined) rmSync(r.spec.portFile, { force: true });
    // Each process in its own process group: a terminal's Ctrl-C reaches only the supervisor, which
    // then stops the processes one by one (a second signal would make them skip their drain).
    const child = spawn(this.#opts.nodeBin, [...(this.#opts.nodeFlags ?? []), r.spec.main], {
      // SPLITLET_SUPERVISOR_PID: the process drains on its own once this supervisor is gone, which
      // its stdin tells it (SPLITLET_SUPERVISOR_STDIN): this end is never written to, and the
      // system closes it when this process exits, even by SIGKILL.
      env: { ...process.env, ...r.spec.env, SPLITLET_SUPERVISOR_PID: String(process.pid), SPLITLET_SUPERVISOR_STDIN: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdin?.on('error', () => undefined);
    r.child = child;
    r.startedAt = Date.now();
    const pipe = (stream: NodeJS.ReadableStream): void => {
      const rl = createInterface({ input: stream });
      rl.on('line', (line) => {
        r.log.write(`${line}\n`);
        const shown = this.#render(r.spec.name, line);
        if (shown !== undefined) this.#opts.out.write(`${shown}\n`);
      });
    };
    if (child.stdout) pipe(child.stdout);
    if (child.stderr) pipe(child.stderr);
    r.exited = new Promise((resolveExit) => {
      child.once('exit', (code, signal) => {
        resolveExit();
        if (r.stopping || this.#stopping) return;
        const how = signal ? `signal ${signal}` : `code ${code}`;
        this.#note(r.spec.name, `process exited with ${how}`);
        if (!this.#opts.restart) return;
        // Backoff: 1 s doubling to 30 s; a process that ran for a minute starts over.
        if (Date.now() - r.startedAt > 60_000) r.restarts = 0;
        const delay = Math.min(30_000, 1000 * 2 ** r.restarts);
        r.restarts++;
        this.#note(r.spec.name, `restarting in ${delay / 1000}s`);
        r.restartTimer = setTimeout(() => {
          r.restartTimer = undefined;
          if (!this.#stopping) this.#launch(r);
        }, delay);
      });
    });
    this.#opts.onChange?.();
  }

  /** The current pid and health port of each process. */
  snapshot(): { name: string; pid: number; healthPort?: number }[] {
    return this.#procs.map((r) => {
      const out: { name: string; pid: number; healthPort?: number } = { name: r.spec.name, pid: r.child?.pid ?? 0 };
      const port = healthPortOf(r);
      if (port !== undefined) out.healthPort = port;
      return out;
    });
  }

  /**
   * Whether a running process had not written its health port yet (since it started) in `snap`, a
   * {@link snapshot}: the one just saved, so that a port written after it is not taken as saved.
   */
  portsPending(snap: readonly { name: string; healthPort?: number }[] = this.snapshot()): boolean {
    return this.#procs.some((r) => r.spec.portFile !== undefined && live(r) && snap.find((p) => p.name === r.spec.name)?.healthPort === undefined);
  }

  /** Last resort (a second signal, or the supervisor exiting abruptly): SIGKILL every process still running. */
  killAll(): void {
    this.#stopping = true;
    for (const r of this.#procs) if (live(r)) killGroup(r.child, 'SIGKILL');
  }

  /**
   * Stops every process. `ordered`: in reverse start order, each SIGTERMed once the one after it
   * exited (NATS is up, so each drains through it). Otherwise all at once (NATS is gone: nothing to
   * drain through, and one by one would add up each process's wait). Whatever is still running
   * `graceMs` after the call is SIGKILLed.
   */
  async stopAll(opts: { graceMs: number; ordered: boolean }): Promise<void> {
    this.#stopping = true;
    const deadline = Date.now() + opts.graceMs;
    for (const r of this.#procs) {
      if (r.restartTimer) clearTimeout(r.restartTimer);
      r.restartTimer = undefined;
      r.stopping = true;
    }
    const killer = setTimeout(() => {
      for (const r of this.#procs) {
        if (!live(r)) continue;
        this.#note(r.spec.name, `did not stop within ${opts.graceMs} ms, killing`);
        killGroup(r.child, 'SIGKILL');
      }
    }, opts.graceMs);
    if (opts.ordered) {
      for (const r of [...this.#procs].reverse()) {
        if (!live(r)) continue;
        r.child.kill('SIGTERM');
        await r.exited;
        if (Date.now() > deadline) break;
      }
    } else {
      for (const r of this.#procs) if (live(r)) r.child.kill('SIGTERM');
    }
    await Promise.all(this.#procs.map((r) => r.exited));
    clearTimeout(killer);
    await Promise.all(this.#procs.map((r) => new Promise<void>((res) => r.log.end(res))));
  }
}
