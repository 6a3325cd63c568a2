/**
 * Simulated container processes: a small busybox — `sh` and a handful of applets — interpreted in
 * memory, so a manifest written for a busybox image behaves the same here as on containerd.
 *
 * Signal model (as in a real PID namespace):
 * - Only the container's main process receives the runtime's stop signal.
 * - In its own PID namespace (CRI pid mode CONTAINER, what the kubelet asks for) it is PID 1, and
 *   PID 1 has no default signal actions: a signal it has no handler for is ignored. So `sleep 100`,
 *   or `sh -c` without a trap, ignores SIGTERM and runs until SIGKILL.
 * - Sharing the sandbox's PID namespace (pid mode POD, the CRI zero value, or NODE) it is not PID 1:
 *   an untrapped signal has its default action, so SIGTERM ends it with 143 (and containerd then
 *   kills the rest of the container's processes). Measured on containerd 1.6 + runc 1.1.
 * - `sh` runs a trap only between commands: a trapped signal that arrives during a foreground
 *   `sleep` is handled when the sleep ends; `wait` returns at once (status 128+n) and the trap runs.
 *   That is why `trap 'exit 0' TERM; sleep 1000 & wait` stops promptly and
 *   `trap 'exit 0' TERM; sleep 1000` does not (checked against busybox 1.35 ash as PID 1).
 * - `trap '' TERM` ignores the signal; `/pause` exits 0 on SIGTERM/SIGINT, like the pause image.
 * - SIGKILL (aborting {@link ProcessContext.kill}) ends everything at once: exit code 137.
 *
 *   container process (PID 1 = sh with `trap 'exit 0' TERM`)
 *   ──running── SIGTERM ──▶ pending ── current command ends ──▶ trap runs ──▶ exit 0
 *                                  └── `wait` is interrupted at once ───────┘
 *   ──running── (no trap) SIGTERM ignored ── … timeout … ── SIGKILL ──▶ exit 137
 */
import type { OutputSink } from '@splitlet/cri';
import { BUSYBOX_APPLETS } from '@splitlet/images';
import { Shell, ShellExit } from '../shell/shell.js';
import { cat, date, echo, falseProgram, hostname, mkdir, pause, printenv, printf, rm, sleep, tail, test, touch, trueProgram } from './applets.js';
import { fsErrorText, type ContainerFs } from './container-fs.js';
import { httpd, nc, placeholder, wget } from './net-programs.js';
import { defaultAction, Killed, runProgram, SIGNUM, sleepMs, type ContainerSetting, type Io, type Program, type ProgramEnv, type SignalRouter, type SimSignal } from './program.js';
import { id, killall, whoami } from './system-programs.js';

/** Everything a process sees. */
export interface ProcessContext {
  fs: ContainerFs;
  hostname: string;
  /** The environment (the container's envs, plus PATH/HOSTNAME/HOME defaults). */
  env: Readonly<Record<string, string>>;
  /** Working directory. */
  cwd: string;
  stdout: OutputSink;
  stderr: OutputSink;
  /** CRI `stdin: true`: stdin stays open, so a bare `sh` waits for input instead of exiting. */
  stdinOpen: boolean;
  /** Aborting it SIGKILLs the process and everything it started. */
  kill: AbortSignal;
  /** The container's network, user and image programs. @default {@link defaultContainerSetting} */
  container?: ContainerSetting;
}

/** A running simulated process. */
export interface SimProcess {
  /** Resolves with the exit code (137 after SIGKILL). Never rejects. */
  readonly exited: Promise<number>;
  /** Delivers a signal to it (only meaningful for PID 1). SIGKILL is done by aborting `kill`. */
  signal(sig: SimSignal): void;
}

/** argv[0] is not an executable of the simulated image; the message is runc's. */
export class ExecNotFoundError extends Error {
  override readonly name = 'ExecNotFoundError';
  constructor(readonly executable: string) {
    super(executable.includes('/') ? `exec: "${executable}": stat ${executable}: no such file or directory` : `exec: "${executable}": executable file not found in $PATH`);
  }
}

const envProgram: Program = async (argv, io, env) => {
  const assigns = argv.slice(1).filter((a) => a.includes('='));
  const vars = new Map(env.env);
  for (const a of assigns) vars.set(a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1));
  const rest = argv.slice(1).filter((a) => !a.includes('=') && a !== '-i');
  if (rest.length > 0) {
    const program = resolveCommand(rest[0] as string, env.container);
    if (program === undefined) {
      io.stderr.write(`env: can't execute '${rest[0]}': No such file or directory\n`);
      return 127;
    }
    // env execs the program: it takes over the signals (with no handler of its own yet).
    if (env.router !== undefined) env.router.handler = undefined;
    return runProgram(program, rest, io, { ...env, env: vars });
  }
  io.stdout.write([...vars].map(([k, v]) => `${k}=${v}\n`).join(''));
  return 0;
};

const sh: Program = async (argv, io, env) => {
  let i = 1;
  let cmode = false;
  const opts = { errexit: false, xtrace: false };
  for (; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') {
      i++;
      break;
    }
    if (!/^-[a-z]+$/.test(a)) break;
    for (const f of a.slice(1)) {
      if (f === 'c') cmode = true;
      else if (f === 'e') opts.errexit = true;
      else if (f === 'x') opts.xtrace = true;
    }
  }
  const name = argv[0] as string;
  let script: string;
  let positional: string[];
  if (cmode) {
    const s = argv[i];
    if (s === undefined) {
      io.stderr.write(`${name}: -c requires an argument\n`);
      return 2;
    }
    script = s;
    positional = [argv[i + 1] ?? name, ...argv.slice(i + 2)];
  } else if (argv[i] !== undefined) {
    const file = argv[i] as string;
    try {
      script = env.fs.readFile(file, env.cwd);
    } catch (e) {
      io.stderr.write(`${name}: can't open '${file}': ${fsErrorText(e)}\n`);
      return 2;
    }
    positional = argv.slice(i);
  } else {
    // No script: sh reads stdin. Without stdin attached it reads EOF and exits; with stdin it waits.
    if (env.stdinOpen) await sleepMs(Infinity, env.kill);
    return 0;
  }
  const shell = new Shell(env, positional, opts, resolveCommand);
  if (env.router !== undefined) {
    const router = env.router;
    router.handler = (sig) => shell.deliverSignal(sig);
    shell.router = router;
  }
  return shell.runSource(script, io);
};

const busybox: Program = async (argv, io, env) => {
  const applet = argv[1];
  if (applet === undefined) {
    io.stdout.write('BusyBox (sim-runtime) multi-call binary.\n');
    return 0;
  }
  const program = applet.includes('/') ? undefined : resolveCommand(applet, env.container);
  if (program === undefined || program === pause || program === placeholder || env.container.imagePrograms.has(applet)) {
    io.stderr.write(`${applet}: applet not found\n`);
    return 127;
  }
  return runProgram(program, argv.slice(1), io, env);
};

const PROGRAMS: Readonly<Record<string, Program>> = {
  sh,
  ash: sh,
  busybox,
  echo,
  printf,
  sleep,
  cat,
  touch,
  mkdir,
  rm,
  test,
  '[': test,
  env: envProgram,
  printenv,
  date,
  tail,
  hostname,
  true: trueProgram,
  false: falseProgram,
  pause,
  httpd,
  wget,
  nc,
  id,
  whoami,
  killall,
};

const BIN_DIRS = new Set(['/bin', '/sbin', '/usr/bin', '/usr/sbin', '/usr/local/bin']);

/**
 * The program an argv[0] names in this container, or undefined if its image has no such
 * executable: a simulated busybox program (bare or under a bin directory), one of the image's own
 * (`nginx`), or, in an image whose contents are unknown, a long-running placeholder.
 */
export function resolveCommand(argv0: string, container: ContainerSetting): Program | undefined {
  if (argv0 === '/pause') return pause;
  const slash = argv0.lastIndexOf('/');
  const dir = slash < 0 ? undefined : argv0.slice(0, slash) || '/';
  const base = argv0.slice(slash + 1);
  const own = container.imagePrograms.get(argv0) ?? container.imagePrograms.get(base);
  if (own !== undefined && (dir === undefined || BIN_DIRS.has(dir) || container.imagePrograms.has(argv0))) return own;
  const inBin = dir === undefined || BIN_DIRS.has(dir);
  if (inBin && base !== 'pause' && Object.hasOwn(PROGRAMS, base)) return PROGRAMS[base];
  if (container.unknown === 'placeholder') return base !== '' ? placeholder : undefined;
  return inBin && OFFICIAL_APPLETS.has(base) ? notSimulated : undefined;
}

const OFFICIAL_APPLETS: ReadonlySet<string> = new Set(BUSYBOX_APPLETS);

/** The busybox applets the simulator runs (each one is an applet of the official busybox image). */
export const SIMULATED_APPLETS: readonly string[] = Object.keys(PROGRAMS).filter((p) => p !== 'pause' && p !== 'busybox');

/** An applet busybox has and the simulator does not simulate: a clear error instead of a wrong result. */
const notSimulated: Program = async (argv, io) => {
  io.stderr.write(`sim-runtime: ${argv[0] ?? ''}: busybox has this applet but the simulator does not simulate it (see services/sim-runtime/README.md)\n`);
  return 127;
};

/** The setting of a process started without one (tests): root, loopback, only busybox programs. */
export function defaultContainerSetting(kill: AbortSignal): ContainerSetting {
  return { podIp: '127.0.0.1', containerKill: kill, user: { uid: 0, gid: 0, groups: [] }, imagePrograms: new Map(), unknown: 'not-found', processes: new Set() };
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

/** How {@link spawnProcess} delivers `signal()`s. */
export interface SpawnOptions {
  /** The process is PID 1 of its own PID namespace: signals without a handler are ignored. */
  readonly pid1: boolean;
  /**
   * Whether `signal()` reaches the process at all. @default pid1. A container's main process in a
   * shared PID namespace is `{pid1: false, signals: true}`: untrapped signals terminate it (128+n).
   * An exec'd process is `{pid1: false}`: the runtime never signals it.
   */
  readonly signals?: boolean;
}

/**
 * Starts `argv` as a process. Throws {@link ExecNotFoundError} synchronously when argv[0] is not an
 * executable (the caller turns that into a start failure). Signals follow {@link SpawnOptions}:
 * as PID 1 a signal without a handler is ignored; otherwise it ends the process with 128 + n.
 */
export function spawnProcess(argv: readonly string[], ctx: ProcessContext, options: SpawnOptions): SimProcess {
  const argv0 = argv[0];
  if (argv0 === undefined) throw new ExecNotFoundError('');
  const container = ctx.container ?? defaultContainerSetting(ctx.kill);
  const program = resolveCommand(argv0, container);
  if (program === undefined) throw new ExecNotFoundError(argv0);
  // The default action of a fatal signal: everything the process started ends with it.
  const terminated = new AbortController();
  let fatal: SimSignal | undefined;
  const router: SignalRouter | undefined =
    (options.signals ?? options.pid1)
      ? {
          handler: undefined,
          pid1: options.pid1,
          terminate: (sig) => {
            if (terminated.signal.aborted) return;
            fatal = sig;
            terminated.abort();
          },
        }
      : undefined;
  const kill = options.pid1 ? ctx.kill : AbortSignal.any([ctx.kill, terminated.signal]);
  const env: ProgramEnv = {
    container,
    fs: ctx.fs,
    hostname: ctx.hostname,
    cwd: ctx.cwd,
    env: new Map(Object.entries(ctx.env)),
    kill,
    stdinOpen: ctx.stdinOpen,
    router,
  };
  const io: Io = { stdout: ctx.stdout, stderr: ctx.stderr };
  const exited = (async (): Promise<number> => {
    await Promise.resolve(); // start on the next microtask, after the caller recorded the process
    return runProgram(program, [...argv], io, env);
  })().then(
    (status) => (ctx.kill.aborted ? 137 : fatal !== undefined ? 128 + SIGNUM[fatal] : status),
    (e: unknown) => {
      if (ctx.kill.aborted) return 137;
      if (fatal !== undefined) return 128 + SIGNUM[fatal];
      if (e instanceof Killed) return 137;
      if (e instanceof ShellExit) return e.status;
      ctx.stderr.write(`sim-runtime: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      return 255;
    },
  );
  return {
    exited,
    signal(sig) {
      if (sig === 'KILL') return; // SIGKILL is the owner's abort of ctx.kill
      if (router === undefined) return;
      if (router.handler !== undefined) router.handler(sig);
      else defaultAction(router, sig);
    },
  };
}
