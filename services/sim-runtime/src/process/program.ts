/**
 * What every simulated program shares: signals, the I/O and environment a program gets, and the
 * sleeping/kill plumbing (see sim-process.ts for the signal model).
 */
import type { OutputSink } from '@splitlet/cri';
import type { ContainerFs } from './container-fs.js';

/** Signals the simulator can deliver. */
export type SimSignal = 'HUP' | 'INT' | 'QUIT' | 'KILL' | 'USR1' | 'USR2' | 'TERM';

export const SIGNUM: Readonly<Record<SimSignal, number>> = { HUP: 1, INT: 2, QUIT: 3, KILL: 9, USR1: 10, USR2: 12, TERM: 15 };

/** Parses `TERM`, `SIGTERM` or `15` (as `trap`, `kill` and an image's StopSignal write them). */
export function parseSignal(name: string): SimSignal | 'EXIT' | undefined {
  const upper = name.toUpperCase().replace(/^SIG/, '');
  if (upper === 'EXIT' || upper === '0') return 'EXIT';
  if (Object.hasOwn(SIGNUM, upper)) return upper as SimSignal;
  const n = Number(name);
  return (Object.keys(SIGNUM) as SimSignal[]).find((s) => SIGNUM[s] === n);
}

/** Thrown through a process when it is SIGKILLed. */
export class Killed extends Error {
  override readonly name = 'Killed';
}

export interface Io {
  stdout: OutputSink;
  stderr: OutputSink;
  stdin?: string;
}

export const NULL_SINK: OutputSink = { write: () => undefined };

/**
 * Where the main process's signals go; the program running as the main process installs its
 * handler. With no handler a signal is ignored as PID 1, and otherwise has its default action
 * (`terminate`).
 */
export interface SignalRouter {
  handler: ((sig: SimSignal) => void) | undefined;
  /** The main process is PID 1 of its own PID namespace. */
  readonly pid1: boolean;
  /** The default action of a signal without a handler: ends the whole process (128 + signal number). */
  readonly terminate: (sig: SimSignal) => void;
}

/** A signal nobody handles: ignored by PID 1, the default action (terminate) otherwise. */
export function defaultAction(router: SignalRouter, sig: SimSignal): void {
  if (!router.pid1) router.terminate(sig);
}

/**
 * What a container has besides its filesystem: its pod's network and identity, and which
 * executables its image holds. Shared by every process of the container (and its ExecSyncs).
 */
export interface ContainerSetting {
  /** The pod IP: servers listen on it, and the container's `localhost` is it. */
  readonly podIp: string;
  /** Aborted when the container stops: daemons (`httpd` without `-f`) live until then. */
  readonly containerKill: AbortSignal;
  /** The user processes run as (CRI `run_as_user`/`run_as_group`/`supplemental_groups`). */
  readonly user: { readonly uid: number; readonly gid: number; readonly groups: readonly number[] };
  /** The image's executables beyond the simulated busybox programs (e.g. `nginx`). */
  readonly imagePrograms: ReadonlyMap<string, Program>;
  /**
   * An executable the simulator does not know: `not-found` (a busybox image: exec fails as runc's),
   * or `placeholder` (an image whose contents are unknown: it runs as a long-running process).
   */
  readonly unknown: 'not-found' | 'placeholder';
  /** The container's running programs, by name (what `killall` signals). */
  readonly processes: Set<ProcessEntry>;
}

/** A running program of a container, as `killall` sees it. */
export interface ProcessEntry {
  readonly name: string;
  signal(sig: SimSignal): void;
}

export interface ProgramEnv {
  container: ContainerSetting;
  fs: ContainerFs;
  hostname: string;
  cwd: string;
  env: Map<string, string>;
  kill: AbortSignal;
  stdinOpen: boolean;
  /** Set when this program is PID 1. */
  router: SignalRouter | undefined;
}

export type Program = (argv: string[], io: Io, env: ProgramEnv) => Promise<number>;

const MAX_TIMEOUT_MS = 2_147_483_647;

/** Resolves after `ms` (Infinity: never), or rejects with Killed when `kill` aborts; the timer is always cleared. */
export function sleepMs(ms: number, kill: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (kill.aborted) {
      reject(new Killed());
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const onKill = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      reject(new Killed());
    };
    let remaining = ms;
    const arm = (): void => {
      if (!Number.isFinite(remaining)) return;
      const step = Math.min(remaining, MAX_TIMEOUT_MS);
      remaining -= step;
      timer = setTimeout(() => {
        if (remaining > 0) arm();
        else {
          kill.removeEventListener('abort', onKill);
          resolve();
        }
      }, step);
    };
    kill.addEventListener('abort', onKill, { once: true });
    arm();
  });
}

/** Races `p` against SIGKILL. */
export function raceKill<T>(p: Promise<T>, kill: AbortSignal): Promise<T> {
  if (kill.aborted) return Promise.reject(new Killed());
  return new Promise<T>((resolve, reject) => {
    const onKill = (): void => reject(new Killed());
    kill.addEventListener('abort', onKill, { once: true });
    p.then(
      (v) => {
        kill.removeEventListener('abort', onKill);
        resolve(v);
      },
      (e: unknown) => {
        kill.removeEventListener('abort', onKill);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/**
 * Runs a program (unless the process was SIGKILLed already), listed in its container's process
 * table while it runs. A signal sent to it (`killall`) goes to PID 1's handler (PID 1 ignores one it
 * has no handler for, even SIGKILL from inside its namespace), and otherwise ends it with 128 + n.
 */
export async function runProgram(program: Program, argv: string[], io: Io, env: ProgramEnv): Promise<number> {
  if (env.kill.aborted) throw new Killed();
  const router = env.router;
  const term = new AbortController();
  let fatal: SimSignal | undefined;
  const entry: ProcessEntry = {
    name: (argv[0] ?? '').slice((argv[0] ?? '').lastIndexOf('/') + 1),
    signal: (sig) => {
      if (router !== undefined) {
        if (router.handler !== undefined) router.handler(sig);
        else defaultAction(router, sig);
      } else if (fatal === undefined) {
        fatal = sig;
        term.abort();
      }
    },
  };
  env.container.processes.add(entry);
  try {
    return await program(argv, io, router !== undefined ? env : { ...env, kill: AbortSignal.any([env.kill, term.signal]) });
  } catch (e) {
    if (e instanceof Killed && fatal !== undefined && !env.kill.aborted) return 128 + SIGNUM[fatal];
    throw e;
  } finally {
    env.container.processes.delete(entry);
  }
}
