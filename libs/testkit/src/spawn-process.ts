import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { reapOnExit } from './reaper.js';
import { TestkitError, TestkitErrorCodes } from './testkit-error.js';

/** Options of {@link spawnProcess}. */
export interface SpawnProcessOptions {
  /** The executable (a path, or a name looked up on PATH). */
  readonly cmd: string;
  readonly args?: readonly string[];
  /**
   * Variables layered over this process's environment; an `undefined` value removes one.
   * @default {} (inherit everything)
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Names the process in errors. @default the basename of `cmd` */
  readonly name?: string;
  readonly cwd?: string;
  /** Also copy each line to stderr as `[name] line` (debugging a failing test). @default false */
  readonly echo?: boolean;
  /** Keep at most this many lines (oldest dropped). @default 10000 */
  readonly maxLines?: number;
}

/** How a process ended. `exitCode` folds a signal into the shell's `128 + n`. */
export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly exitCode: number;
}

/** A child process under test. */
export interface SpawnedProcess {
  readonly name: string;
  readonly pid: number;
  /** stdout and stderr lines, in arrival order (a live view). */
  readonly lines: readonly string[];
  /** Resolves when the process exits. */
  readonly exited: Promise<ExitStatus>;
  /** The exit status, once exited. */
  status(): ExitStatus | undefined;
  /**
   * Resolves with the match of the first line (at index `fromLine` or later, already printed or
   * future) that matches `pattern` (a string matches as a substring).
   * @throws {@link TestkitError} `Timeout` after `timeoutMs`, `ProcessExited` when the process ends first;
   *   both messages end with the last lines of output.
   */
  waitForLine(pattern: RegExp | string, timeoutMs?: number, fromLine?: number): Promise<RegExpMatchArray>;
  /**
   * Sends `signal` (default SIGTERM), waits up to `timeoutMs` (default 10000) for the exit, then
   * SIGKILLs. Resolves with the exit code (137 when it had to be killed). Idempotent.
   */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number>;
  /** SIGKILL; resolves with the exit code (137). */
  kill(): Promise<number>;
  /** The last `n` lines as one string, for error messages. */
  tail(n?: number): string;
}

function toStatus(code: number | null, signal: NodeJS.Signals | null): ExitStatus {
  const exitCode = code ?? (signal === null ? 1 : 128 + (constants.signals[signal] ?? 0));
  return { code, signal, exitCode };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Starts a real OS process for an integration test, collecting its output as lines. The process is
 * SIGKILLed if the test process exits without stopping it. Rejects if it cannot be spawned (e.g.
 * the command does not exist).
 */
export async function spawnProcess(options: SpawnProcessOptions): Promise<SpawnedProcess> {
  const name = options.name ?? options.cmd.split('/').pop() ?? options.cmd;
  const maxLines = options.maxLines ?? 10_000;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...options.env })) if (v !== undefined) env[k] = v;

  const child: ChildProcess = spawn(options.cmd, [...(options.args ?? [])], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (e) => reject(new TestkitError(TestkitErrorCodes.ProcessExited, `${name}: cannot start '${options.cmd}': ${e.message}`, { cause: e })));
  });
  reapOnExit(child);
  const pid = child.pid ?? -1;

  const lines: string[] = [];
  const listeners = new Set<() => void>();
  const push = (line: string): void => {
    lines.push(line);
    if (lines.length > maxLines) lines.splice(0, lines.length - maxLines);
    if (options.echo === true) process.stderr.write(`[${name}] ${line}\n`);
    for (const l of listeners) l();
  };
  const splitter = () => {
    let buf = '';
    return {
      data: (d: Buffer) => {
        buf += d.toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          push(buf.slice(0, i).replace(/\r$/, ''));
          buf = buf.slice(i + 1);
        }
      },
      end: () => {
        if (buf !== '') push(buf);
        buf = '';
      },
    };
  };
  const out = splitter();
  const err = splitter();
  child.stdout?.on('data', out.data).on('end', out.end);
  child.stderr?.on('data', err.data).on('end', err.end);

  let status: ExitStatus | undefined;
  // 'close' fires after the exit *and* the end of both output streams, so no line is missed.
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('close', (code, signal) => {
      status = toStatus(code, signal);
      for (const l of listeners) l();
      resolve(status);
    });
  });

  const tail = (n = 30): string => lines.slice(-n).join('\n');

  const waitForLine = (pattern: RegExp | string, timeoutMs = 10_000, fromLine = 0): Promise<RegExpMatchArray> => {
    const re = typeof pattern === 'string' ? new RegExp(escapeRegExp(pattern)) : pattern;
    let next = fromLine;
    return new Promise((resolve, reject) => {
      const done = (): void => {
        listeners.delete(check);
        clearTimeout(timer);
      };
      function check(): void {
        // `lines` may have been trimmed at the front; indexes are best-effort then.
        for (; next < lines.length; next++) {
          const m = (lines[next] ?? '').match(re);
          if (m !== null) {
            done();
            resolve(m);
            return;
          }
        }
        if (status !== undefined) {
          done();
          reject(new TestkitError(TestkitErrorCodes.ProcessExited, `${name} exited (code ${status.exitCode}) before printing a line matching ${re}; last output:\n${tail()}`));
        }
      }
      listeners.add(check);
      const timer = setTimeout(() => {
        done();
        reject(new TestkitError(TestkitErrorCodes.Timeout, `${name} printed no line matching ${re} within ${timeoutMs} ms; last output:\n${tail()}`));
      }, timeoutMs);
      check();
    });
  };

  let stopping: Promise<number> | undefined;
  const stop = (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<number> => {
    stopping ??= (async () => {
      if (status !== undefined) return status.exitCode;
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), timeoutMs);
      });
      const first = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (first === 'late') child.kill('SIGKILL');
      return (await exited).exitCode;
    })();
    return stopping;
  };

  return {
    name,
    pid,
    lines,
    exited,
    status: () => status,
    waitForLine,
    stop,
    kill: async () => {
      if (status === undefined) child.kill('SIGKILL');
      return (await exited).exitCode;
    },
    tail,
  };
}
