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
import { ContainerFs, SimFsError, errnoText } from './container-fs.js';
import type { OutputSink } from '@splitlet/cri';
import { defaultAction, Killed, NULL_SINK, parseSignal, raceKill, SIGNUM, sleepMs, type ContainerSetting, type Io, type Program, type ProgramEnv, type SignalRouter, type SimSignal } from './program.js';
import { httpd, nc, placeholder, wget } from './net-programs.js';
import { id, whoami } from './system-programs.js';
import { BUSYBOX_APPLETS } from '@splitlet/images';
import { parseScript, ShellSyntaxError, type AndOr, type Command, type List, type Pipeline, type Redirect, type SimpleCommand, type Word } from '../shell/shell-parser.js';

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
    super(
      executable.includes('/')
        ? `exec: "${executable}": stat ${executable}: no such file or directory`
        : `exec: "${executable}": executable file not found in $PATH`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Plumbing
// ---------------------------------------------------------------------------------------------

/** `exit n` (or `exec` finishing) unwinding the shell. */
class ShellExit {
  constructor(readonly status: number) {}
}

/** `break n` / `continue n`. */
class LoopControl {
  constructor(
    readonly kind: 'break' | 'continue',
    public levels: number,
  ) {}
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function fsErrorText(e: unknown): string {
  return e instanceof SimFsError ? errnoText(e.errno) : String(e);
}

// ---------------------------------------------------------------------------------------------
// Applets
// ---------------------------------------------------------------------------------------------

function parseDuration(arg: string): number | undefined {
  if (arg === 'inf' || arg === 'infinity') return Infinity;
  const m = /^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$/.exec(arg);
  if (m === null) return undefined;
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  return Number(m[1]) * unit * 1000;
}

function interpretEscapes(s: string): { text: string; stop: boolean } {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '\\' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const n = s[++i] as string;
    switch (n) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\x07';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case 'c':
        return { text: out, stop: true };
      case '0': {
        const m = /^[0-7]{0,3}/.exec(s.slice(i + 1))?.[0] ?? '';
        out += String.fromCharCode(parseInt(m === '' ? '0' : m, 8));
        i += m.length;
        break;
      }
      default:
        out += `\\${n}`;
    }
  }
  return { text: out, stop: false };
}

const echo: Program = async (argv, io) => {
  let i = 1;
  let newline = true;
  let escapes = false;
  for (; i < argv.length && /^-[neE]+$/.test(argv[i] as string); i++) {
    for (const f of (argv[i] as string).slice(1)) {
      if (f === 'n') newline = false;
      else if (f === 'e') escapes = true;
      else escapes = false;
    }
  }
  let text = argv.slice(i).join(' ');
  if (escapes) {
    const r = interpretEscapes(text);
    text = r.text;
    if (r.stop) newline = false;
  }
  io.stdout.write(newline ? `${text}\n` : text);
  return 0;
};

const printf: Program = async (argv, io) => {
  const format = argv[1];
  if (format === undefined) {
    io.stderr.write('printf: missing format\n');
    return 1;
  }
  const args = argv.slice(2);
  let out = '';
  let status = 0;
  do {
    let consumed = 0;
    const body = format.replace(/%([-+ 0#]*)(\d*)(?:\.(\d+))?([sdiuxXoc%b])/g, (_m, flags: string, width: string, prec: string | undefined, conv: string) => {
      if (conv === '%') return '%';
      const arg = args[consumed++] ?? '';
      let s: string;
      if (conv === 's' || conv === 'b') {
        s = conv === 'b' ? interpretEscapes(arg).text : arg;
        if (prec !== undefined) s = s.slice(0, Number(prec));
      } else if (conv === 'c') {
        s = arg.slice(0, 1);
      } else {
        const n = arg === '' ? 0 : Number(arg);
        if (!Number.isFinite(n)) {
          io.stderr.write(`printf: invalid number '${arg}'\n`);
          status = 1;
        }
        const v = Math.trunc(Number.isFinite(n) ? n : 0);
        s = conv === 'x' ? v.toString(16) : conv === 'X' ? v.toString(16).toUpperCase() : conv === 'o' ? v.toString(8) : String(v);
      }
      const w = Number(width || 0);
      if (s.length < w) s = flags.includes('-') ? s.padEnd(w) : s.padStart(w, flags.includes('0') && conv !== 's' ? '0' : ' ');
      return s;
    });
    out += interpretEscapes(body).text;
    if (consumed === 0) break;
    args.splice(0, consumed);
  } while (args.length > 0);
  io.stdout.write(out);
  return status;
};

const sleep: Program = async (argv, io, env) => {
  if (argv.length < 2) {
    io.stderr.write('sleep: missing operand\n');
    return 1;
  }
  let total = 0;
  for (const arg of argv.slice(1)) {
    const ms = parseDuration(arg);
    if (ms === undefined) {
      io.stderr.write(`sleep: invalid number '${arg}'\n`);
      return 1;
    }
    total += ms;
  }
  await sleepMs(total, env.kill);
  return 0;
};

const cat: Program = async (argv, io, env) => {
  const files = argv.slice(1).filter((a) => a !== '-u');
  if (files.length === 0) files.push('-');
  let status = 0;
  for (const f of files) {
    if (f === '-') {
      io.stdout.write(io.stdin ?? '');
      continue;
    }
    try {
      io.stdout.write(env.fs.readFile(f, env.cwd));
    } catch (e) {
      status = 1;
      if (e instanceof SimFsError && e.errno === 'EISDIR') io.stderr.write(`cat: read error: Is a directory\n`);
      else io.stderr.write(`cat: can't open '${f}': ${fsErrorText(e)}\n`);
    }
  }
  return status;
};

const touch: Program = async (argv, io, env) => {
  let status = 0;
  for (const f of argv.slice(1).filter((a) => !a.startsWith('-'))) {
    try {
      if (env.fs.stat(f, env.cwd) === undefined) env.fs.writeFile(f, env.cwd, '', true);
    } catch (e) {
      status = 1;
      io.stderr.write(`touch: ${f}: ${fsErrorText(e)}\n`);
    }
  }
  return status;
};

const mkdir: Program = async (argv, io, env) => {
  const recursive = argv.some((a) => /^-[a-z]*p/.test(a));
  let status = 0;
  for (const d of argv.slice(1).filter((a) => !a.startsWith('-'))) {
    try {
      env.fs.mkdir(d, env.cwd, recursive);
    } catch (e) {
      status = 1;
      io.stderr.write(`mkdir: can't create directory '${d}': ${fsErrorText(e)}\n`);
    }
  }
  return status;
};

const rm: Program = async (argv, io, env) => {
  const flags = argv
    .slice(1)
    .filter((a) => a.startsWith('-'))
    .join('');
  const force = flags.includes('f');
  const recursive = /[rR]/.test(flags);
  let status = 0;
  for (const f of argv.slice(1).filter((a) => !a.startsWith('-'))) {
    try {
      env.fs.remove(f, env.cwd, recursive);
    } catch (e) {
      if (force && e instanceof SimFsError && e.errno === 'ENOENT') continue;
      status = 1;
      if (e instanceof SimFsError && e.errno === 'EISDIR') io.stderr.write(`rm: '${f}' is a directory\n`);
      else io.stderr.write(`rm: can't remove '${f}': ${fsErrorText(e)}\n`);
    }
  }
  return status;
};

function testExpr(args: string[], env: ProgramEnv, io: Io): number {
  const num = (s: string): number | undefined => (/^\s*-?\d+\s*$/.test(s) ? Number(s) : undefined);
  const evalArgs = (a: string[]): boolean | number => {
    if (a.length === 0) return false;
    if (a[0] === '!' && a.length > 1) {
      const r = evalArgs(a.slice(1));
      return typeof r === 'number' ? r : !r;
    }
    const [x, op, y] = a as [string, string | undefined, string | undefined];
    if (a.length === 1) return x !== '';
    if (a.length === 2) {
      const st = env.fs.stat(op as string, env.cwd);
      switch (x) {
        case '-n':
          return op !== '';
        case '-z':
          return op === '';
        case '-e':
        case '-r':
        case '-w':
        case '-x':
          return st !== undefined;
        case '-f':
          return st?.type === 'file';
        case '-d':
          return st?.type === 'dir';
        case '-s':
          return st !== undefined && st.size > 0;
      }
      io.stderr.write(`sh: ${x}: unknown operand\n`);
      return 2;
    }
    if (a.length === 3) {
      if (op === '=' || op === '==') return x === y;
      if (op === '!=') return x !== y;
      const ints = ['-eq', '-ne', '-lt', '-le', '-gt', '-ge'];
      if (ints.includes(op as string)) {
        const l = num(x);
        const r = num(y as string);
        if (l === undefined || r === undefined) {
          io.stderr.write(`sh: invalid number '${l === undefined ? x : y}'\n`);
          return 2;
        }
        return { '-eq': l === r, '-ne': l !== r, '-lt': l < r, '-le': l <= r, '-gt': l > r, '-ge': l >= r }[op as '-eq'];
      }
    }
    // `a -a b` / `a -o b`
    const and = a.indexOf('-a');
    if (and > 0) {
      const l = evalArgs(a.slice(0, and));
      const r = evalArgs(a.slice(and + 1));
      return typeof l === 'number' ? l : typeof r === 'number' ? r : l && r;
    }
    const or = a.indexOf('-o');
    if (or > 0) {
      const l = evalArgs(a.slice(0, or));
      const r = evalArgs(a.slice(or + 1));
      return typeof l === 'number' ? l : typeof r === 'number' ? r : l || r;
    }
    io.stderr.write(`sh: syntax error: ${a.join(' ')}\n`);
    return 2;
  };
  const r = evalArgs(args);
  return typeof r === 'number' ? r : r ? 0 : 1;
}

const test: Program = async (argv, io, env) => {
  let args = argv.slice(1);
  if (argv[0] === '[') {
    if (args[args.length - 1] !== ']') {
      io.stderr.write('sh: [: missing ]\n');
      return 2;
    }
    args = args.slice(0, -1);
  }
  return testExpr(args, env, io);
};

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

const printenv: Program = async (argv, io, env) => {
  if (argv.length === 1) {
    io.stdout.write([...env.env].map(([k, v]) => `${k}=${v}\n`).join(''));
    return 0;
  }
  let status = 0;
  for (const name of argv.slice(1)) {
    const v = env.env.get(name);
    if (v === undefined) status = 1;
    else io.stdout.write(`${v}\n`);
  }
  return status;
};

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const date: Program = async (argv, io) => {
  const d = new Date();
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const fmt = argv.find((a) => a.startsWith('+'));
  if (fmt !== undefined) {
    const out = fmt.slice(1).replace(/%([sYmdHMSN%])/g, (_m, c: string) => {
      switch (c) {
        case 's':
          return String(Math.floor(d.getTime() / 1000));
        case 'Y':
          return String(d.getUTCFullYear());
        case 'm':
          return p2(d.getUTCMonth() + 1);
        case 'd':
          return p2(d.getUTCDate());
        case 'H':
          return p2(d.getUTCHours());
        case 'M':
          return p2(d.getUTCMinutes());
        case 'S':
          return p2(d.getUTCSeconds());
        case 'N':
          return String(d.getUTCMilliseconds() * 1_000_000).padStart(9, '0');
        default:
          return '%';
      }
    });
    io.stdout.write(`${out}\n`);
    return 0;
  }
  const t = `${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`;
  io.stdout.write(`${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${p2(d.getUTCDate())} ${t} UTC ${d.getUTCFullYear()}\n`);
  return 0;
};

const tail: Program = async (argv, io, env) => {
  let follow = false;
  let lines = 10;
  const files: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-f' || a === '-F') follow = true;
    else if (a === '-n') lines = Number(argv[++i] ?? 10);
    else if (/^-n?\d+$/.test(a)) lines = Number(a.replace(/^-n?/, ''));
    else files.push(a);
  }
  let status = 0;
  for (const f of files) {
    try {
      const content = env.fs.readFile(f, env.cwd);
      const all = content.split('\n');
      if (all[all.length - 1] === '') all.pop();
      const last = all.slice(Math.max(0, all.length - lines));
      if (last.length > 0) io.stdout.write(`${last.join('\n')}\n`);
    } catch (e) {
      status = 1;
      io.stderr.write(`tail: can't open '${f}': ${fsErrorText(e)}\n`);
    }
  }
  if (follow) await sleepMs(Infinity, env.kill); // follows forever; only SIGKILL ends it
  return status;
};

/** The pause image's `/pause`: blocks until SIGINT/SIGTERM, then exits 0. */
const pause: Program = async (_argv, _io, env) => {
  await raceKill(
    new Promise<void>((resolve) => {
      if (env.router !== undefined) {
        const router = env.router;
        router.handler = (sig) => {
          if (sig === 'TERM' || sig === 'INT') resolve();
          else defaultAction(router, sig);
        };
      }
    }),
    env.kill,
  );
  return 0;
};

const hostname: Program = async (_argv, io, env) => {
  io.stdout.write(`${env.hostname}\n`);
  return 0;
};

const trueProgram: Program = async () => 0;
const falseProgram: Program = async () => 1;

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
  const shell = new Shell(env, positional, opts);
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
}

async function runProgram(program: Program, argv: string[], io: Io, env: ProgramEnv): Promise<number> {
  if (env.kill.aborted) throw new Killed();
  return program(argv, io, env);
}

/** The setting of a process started without one (tests): root, loopback, only busybox programs. */
export function defaultContainerSetting(kill: AbortSignal): ContainerSetting {
  return { podIp: '127.0.0.1', containerKill: kill, user: { uid: 0, gid: 0, groups: [] }, imagePrograms: new Map(), unknown: 'not-found' };
}

// ---------------------------------------------------------------------------------------------
// The shell
// ---------------------------------------------------------------------------------------------

interface Job {
  done: Promise<number>;
  abort: AbortController;
}

class Shell {
  readonly vars = new Map<string, string>();
  readonly exported = new Set<string>();
  positional: string[];
  status = 0;
  lastBackground = '';
  readonly traps = new Map<SimSignal | 'EXIT', string>();
  readonly pending: SimSignal[] = [];
  readonly wakers = new Set<(sig: SimSignal) => void>();
  readonly jobs = new Map<number, Job>();
  readonly opts: { errexit: boolean; xtrace: boolean };
  cwd: string;
  /** Set when this shell is PID 1; signals arrive through it. */
  router: SignalRouter | undefined;
  /** The process's own stdout/stderr (where traps write). */
  baseIo: Io = { stdout: NULL_SINK, stderr: NULL_SINK };
  /** Pids handed to background jobs (`$!`), shared with subshells. */
  pids = { next: 2 };

  constructor(
    readonly env: ProgramEnv,
    positional: string[],
    opts: { errexit: boolean; xtrace: boolean },
  ) {
    for (const [k, v] of env.env) {
      this.vars.set(k, v);
      this.exported.add(k);
    }
    this.positional = positional;
    this.opts = { ...opts };
    this.cwd = env.cwd;
  }

  get name(): string {
    return this.positional[0] ?? 'sh';
  }

  /** A subshell: a copy of the variables and options, with traps reset (ignored signals stay ignored). */
  fork(kill: AbortSignal = this.env.kill): Shell {
    const child = new Shell({ ...this.env, kill, cwd: this.cwd, env: this.exportedEnv(), router: undefined }, [...this.positional], this.opts);
    for (const [k, v] of this.vars) child.vars.set(k, v);
    child.exported.clear();
    for (const k of this.exported) child.exported.add(k);
    for (const [sig, action] of this.traps) if (action === '') child.traps.set(sig, '');
    child.status = this.status;
    child.lastBackground = this.lastBackground;
    child.baseIo = this.baseIo;
    child.pids = this.pids;
    return child;
  }

  exportedEnv(extra: readonly [string, string][] = []): Map<string, string> {
    const env = new Map<string, string>();
    for (const k of this.exported) {
      const v = this.vars.get(k);
      if (v !== undefined) env.set(k, v);
    }
    for (const [k, v] of extra) env.set(k, v);
    return env;
  }

  /**
   * A signal sent to this shell as the main process: queued if trapped, ignored for `trap ''`;
   * untrapped, ignored as PID 1 (no default action) and fatal otherwise.
   */
  deliverSignal(sig: SimSignal): void {
    const action = this.traps.get(sig);
    if (action === undefined) {
      if (this.router !== undefined) defaultAction(this.router, sig);
      return;
    }
    if (action === '') return;
    this.pending.push(sig);
    for (const wake of [...this.wakers]) wake(sig);
  }

  /** Runs a script to the end (or `exit`), then the EXIT trap. Returns the exit status. */
  async runSource(source: string, io: Io): Promise<number> {
    this.baseIo = io;
    let status: number;
    try {
      const list = parseScript(source);
      status = await this.runList(list, io, false);
    } catch (e) {
      if (e instanceof ShellExit) status = e.status;
      else if (e instanceof ShellSyntaxError) {
        io.stderr.write(`${this.name}: ${e.message}\n`);
        status = 2;
      } else if (e instanceof LoopControl) status = this.status;
      else throw e;
    }
    return this.runExitTrap(status);
  }

  async runExitTrap(status: number): Promise<number> {
    const action = this.traps.get('EXIT');
    if (action === undefined || action === '') return status;
    this.traps.delete('EXIT');
    this.status = status;
    try {
      await this.runList(parseScript(action), this.baseIo, false);
    } catch (e) {
      if (e instanceof ShellExit) return e.status;
      if (e instanceof ShellSyntaxError) this.baseIo.stderr.write(`${this.name}: ${e.message}\n`);
      else throw e;
    }
    return status;
  }

  /** Runs queued trap actions (between commands, as sh does). */
  async runTraps(): Promise<void> {
    if (this.env.kill.aborted) throw new Killed();
    while (this.pending.length > 0) {
      const sig = this.pending.shift() as SimSignal;
      const action = this.traps.get(sig);
      if (action === undefined || action === '') continue;
      const saved = this.status;
      try {
        await this.runList(parseScript(action), this.baseIo, false);
      } catch (e) {
        if (e instanceof ShellSyntaxError) this.baseIo.stderr.write(`${this.name}: ${e.message}\n`);
        else throw e;
      }
      this.status = saved;
    }
  }

  async runList(list: List, io: Io, cond: boolean): Promise<number> {
    for (const item of list.items) {
      await this.runTraps();
      if (item.background) {
        this.startJob(item.andOr, io);
        this.status = 0;
      } else {
        this.status = await this.runAndOr(item.andOr, io, cond);
      }
      await this.runTraps();
    }
    return this.status;
  }

  startJob(andOr: AndOr, io: Io): void {
    const abort = new AbortController();
    const kill = AbortSignal.any([this.env.kill, abort.signal]);
    const child = this.fork(kill);
    const pid = this.pids.next++;
    const done = child.runAndOr(andOr, io, false).then(
      (status) => status,
      (e: unknown) => {
        if (e instanceof ShellExit) return e.status;
        if (e instanceof Killed) return 128 + (typeof abort.signal.reason === 'number' ? abort.signal.reason : SIGNUM.KILL);
        if (e instanceof LoopControl) return child.status;
        io.stderr.write(`sim-runtime: internal error in background job: ${e instanceof Error ? e.message : String(e)}\n`);
        return 1;
      },
    );
    this.jobs.set(pid, { done, abort });
    this.lastBackground = String(pid);
  }

  async runAndOr(andOr: AndOr, io: Io, cond: boolean): Promise<number> {
    let status = await this.runPipeline(andOr.first, io, cond || andOr.rest.length > 0);
    for (const [i, { op, pipeline }] of andOr.rest.entries()) {
      if ((op === '&&' && status !== 0) || (op === '||' && status === 0)) continue;
      await this.runTraps();
      status = await this.runPipeline(pipeline, io, cond || i < andOr.rest.length - 1);
    }
    return status;
  }

  async runPipeline(p: Pipeline, io: Io, cond: boolean): Promise<number> {
    const status = await this.runCommand(p.command, io, cond || p.negate);
    return p.negate ? (status === 0 ? 1 : 0) : status;
  }

  async runCommand(cmd: Command, io: Io, cond: boolean): Promise<number> {
    if (cmd.type === 'simple') return this.runSimple(cmd, io, cond);
    const redirected = await this.applyRedirects(cmd.redirects, io);
    if (typeof redirected === 'number') return redirected;
    switch (cmd.type) {
      case 'if': {
        for (const clause of cmd.clauses) {
          if ((await this.runList(clause.cond, redirected, true)) === 0) return this.runList(clause.body, redirected, cond);
        }
        return cmd.otherwise !== undefined ? this.runList(cmd.otherwise, redirected, cond) : 0;
      }
      case 'loop': {
        let status = 0;
        for (;;) {
          await yieldToEventLoop();
          if (this.env.kill.aborted) throw new Killed();
          try {
            const c = await this.runList(cmd.cond, redirected, true);
            if ((c === 0) === cmd.until) break;
            status = await this.runList(cmd.body, redirected, cond);
          } catch (e) {
            if (!(e instanceof LoopControl)) throw e;
            if (e.levels > 1) {
              e.levels--;
              throw e;
            }
            if (e.kind === 'break') break;
          }
        }
        return status;
      }
      case 'for': {
        const items: string[] = [];
        if (cmd.items === undefined) items.push(...this.positional.slice(1));
        else for (const w of cmd.items) items.push(...(await this.expandWord(w)));
        let status = 0;
        for (const item of items) {
          await yieldToEventLoop();
          this.vars.set(cmd.name, item);
          try {
            status = await this.runList(cmd.body, redirected, cond);
          } catch (e) {
            if (!(e instanceof LoopControl)) throw e;
            if (e.levels > 1) {
              e.levels--;
              throw e;
            }
            if (e.kind === 'break') break;
          }
        }
        return status;
      }
      case 'group': {
        if (!cmd.subshell) return this.runList(cmd.body, redirected, cond);
        const child = this.fork();
        try {
          return await child.runList(cmd.body, redirected, cond);
        } catch (e) {
          if (e instanceof ShellExit) return e.status;
          throw e;
        }
      }
    }
  }

  async runSimple(cmd: SimpleCommand, io: Io, cond: boolean): Promise<number> {
    const argv: string[] = [];
    let substitutionStatus: number | undefined;
    const before = this.status;
    for (const w of cmd.words) argv.push(...(await this.expandWord(w)));
    const assigns: [string, string][] = [];
    for (const a of cmd.assigns) assigns.push([a.name, await this.expandJoined(a.value)]);
    if (this.status !== before) substitutionStatus = this.status;
    const redirected = await this.applyRedirects(cmd.redirects, io);
    let status: number;
    if (typeof redirected === 'number') {
      status = redirected;
    } else if (argv.length === 0) {
      for (const [k, v] of assigns) this.vars.set(k, v);
      status = substitutionStatus ?? 0;
    } else {
      if (this.opts.xtrace) io.stderr.write(`+ ${[...assigns.map(([k, v]) => `${k}=${v}`), ...argv].join(' ')}\n`);
      status = await this.execute(argv, redirected, assigns);
    }
    this.status = status;
    if (status !== 0 && this.opts.errexit && !cond) throw new ShellExit(status);
    return status;
  }

  /** Runs a builtin or a program. */
  async execute(argv: string[], io: Io, assigns: [string, string][]): Promise<number> {
    const name = argv[0] as string;
    const builtin = this.builtin(name);
    if (builtin !== undefined) {
      for (const [k, v] of assigns) this.vars.set(k, v);
      return builtin(argv, io);
    }
    const program = resolveCommand(name, this.env.container);
    if (program === undefined) {
      io.stderr.write(`${this.name}: ${name}: not found\n`);
      return 127;
    }
    return runProgram(program, argv, io, this.programEnv(this.exportedEnv(assigns), undefined));
  }

  programEnv(env: Map<string, string>, router: SignalRouter | undefined): ProgramEnv {
    return { container: this.env.container, fs: this.env.fs, hostname: this.env.hostname, cwd: this.cwd, env, kill: this.env.kill, stdinOpen: false, router };
  }

  builtin(name: string): ((argv: string[], io: Io) => Promise<number>) | undefined {
    switch (name) {
      case ':':
      case 'true':
        return async () => 0;
      case 'false':
        return async () => 1;
      case 'echo':
      case 'printf':
      case 'test':
      case '[': {
        const program = PROGRAMS[name] as Program;
        return (argv, io) => program(argv, io, this.programEnv(this.exportedEnv(), undefined));
      }
      case 'exit':
        return async (argv, io) => {
          const arg = argv[1];
          if (arg === undefined) throw new ShellExit(this.status);
          if (!/^-?\d+$/.test(arg)) {
            io.stderr.write(`${this.name}: exit: Illegal number: ${arg}\n`);
            throw new ShellExit(2);
          }
          throw new ShellExit(((Number(arg) % 256) + 256) % 256);
        };
      case 'trap':
        return async (argv, io) => this.trap(argv, io);
      case 'wait':
        return async (argv) => this.wait(argv);
      case 'kill':
        return async (argv, io) => this.kill(argv, io);
      case 'export':
      case 'readonly':
        return async (argv) => {
          for (const a of argv.slice(1).filter((x) => x !== '-p')) {
            const eq = a.indexOf('=');
            const key = eq < 0 ? a : a.slice(0, eq);
            if (eq >= 0) this.vars.set(key, a.slice(eq + 1));
            this.exported.add(key);
          }
          return 0;
        };
      case 'unset':
        return async (argv) => {
          for (const a of argv.slice(1).filter((x) => !x.startsWith('-'))) {
            this.vars.delete(a);
            this.exported.delete(a);
          }
          return 0;
        };
      case 'cd':
        return async (argv, io) => {
          const target = argv[1] ?? this.vars.get('HOME') ?? '/';
          const abs = this.env.fs.absolute(target, this.cwd);
          if (this.env.fs.stat(abs, '/')?.type !== 'dir') {
            io.stderr.write(`${this.name}: cd: can't cd to ${target}: No such file or directory\n`);
            return 2;
          }
          this.cwd = abs;
          this.vars.set('PWD', abs);
          return 0;
        };
      case 'pwd':
        return async (_argv, io) => {
          io.stdout.write(`${this.cwd}\n`);
          return 0;
        };
      case 'set':
        return async (argv) => {
          for (let i = 1; i < argv.length; i++) {
            const a = argv[i] as string;
            if (a === '--') {
              this.positional = [this.name, ...argv.slice(i + 1)];
              break;
            }
            if (a === '-o' || a === '+o') {
              i++;
              continue;
            }
            if (/^[-+][a-z]+$/.test(a)) {
              const on = a.startsWith('-');
              if (a.includes('e')) this.opts.errexit = on;
              if (a.includes('x')) this.opts.xtrace = on;
            }
          }
          return 0;
        };
      case 'shift':
        return async (argv) => {
          const n = Number(argv[1] ?? 1);
          if (n > this.positional.length - 1) return 1;
          this.positional = [this.name, ...this.positional.slice(1 + n)];
          return 0;
        };
      case 'break':
      case 'continue':
        return async (argv) => {
          throw new LoopControl(name, Math.max(1, Number(argv[1] ?? 1)));
        };
      case 'exec':
        return async (argv, io) => this.exec(argv, io);
      default:
        return undefined;
    }
  }

  trap(argv: string[], io: Io): number {
    if (argv.length === 1) {
      for (const [sig, action] of this.traps) io.stdout.write(`trap -- '${action}' ${sig}\n`);
      return 0;
    }
    let action: string | undefined = argv[1] as string;
    let sigs = argv.slice(2);
    if (/^\d+$/.test(action) && sigs.length === 0) {
      // `trap 15`: reset
      sigs = [action];
      action = undefined;
    }
    if (action === '-') action = undefined;
    for (const s of sigs) {
      const sig = parseSignal(s);
      if (sig === undefined) {
        io.stderr.write(`${this.name}: trap: ${s}: bad trap\n`);
        return 1;
      }
      if (action === undefined) this.traps.delete(sig);
      else this.traps.set(sig, action);
    }
    return 0;
  }

  async wait(argv: string[]): Promise<number> {
    const ids = argv.slice(1).map(Number);
    const targets = ids.length > 0 ? ids.map((id) => [id, this.jobs.get(id)] as const) : [...this.jobs.entries()];
    const live = targets.filter((t): t is readonly [number, Job] => t[1] !== undefined);
    if (live.length === 0) return ids.length > 0 ? 127 : 0;
    // A trapped signal interrupts wait at once (POSIX), with status 128+n; the trap runs right after.
    if (this.pending.length > 0) return 128 + SIGNUM[this.pending[0] as SimSignal];
    let wake: ((sig: SimSignal) => void) | undefined;
    const signalled = new Promise<{ sig: SimSignal }>((resolve) => {
      wake = (sig) => resolve({ sig });
      this.wakers.add(wake);
    });
    try {
      const r = await raceKill(Promise.race([Promise.all(live.map(([, job]) => job.done)).then((codes) => ({ codes })), signalled]), this.env.kill);
      if ('sig' in r) return 128 + SIGNUM[r.sig];
      for (const [id] of live) this.jobs.delete(id);
      return ids.length > 0 ? (r.codes[r.codes.length - 1] ?? 0) : 0;
    } finally {
      if (wake !== undefined) this.wakers.delete(wake);
    }
  }

  kill(argv: string[], io: Io): number {
    let sig: SimSignal = 'TERM';
    let i = 1;
    const first = argv[1];
    if (first === '-s') {
      sig = (parseSignal(argv[2] ?? '') as SimSignal | undefined) ?? 'TERM';
      i = 3;
    } else if (first !== undefined && /^-[A-Za-z0-9]+$/.test(first)) {
      const parsed = parseSignal(first.slice(1));
      if (parsed === undefined || parsed === 'EXIT') {
        io.stderr.write(`${this.name}: kill: bad signal name '${first.slice(1)}'\n`);
        return 1;
      }
      sig = parsed;
      i = 2;
    }
    let status = 0;
    for (const target of argv.slice(i)) {
      const pid = Number(target);
      const job = this.jobs.get(pid);
      if (job !== undefined) {
        // A background job is not PID 1: an untrapped signal terminates it.
        job.abort.abort(SIGNUM[sig]);
      } else if (pid === 1 && this.router?.pid1 === true) {
        if (this.router.handler !== undefined) this.router.handler(sig);
      } else {
        io.stderr.write(`${this.name}: kill: can't kill pid ${target}: No such process\n`);
        status = 1;
      }
    }
    return status;
  }

  async exec(argv: string[], io: Io): Promise<number> {
    if (argv.length === 1) return 0;
    const target = argv[1] as string;
    const program = resolveCommand(target, this.env.container);
    if (program === undefined) {
      io.stderr.write(`${this.name}: exec: ${target}: not found\n`);
      throw new ShellExit(127);
    }
    // The shell is replaced: its traps and signal handling are gone; the new program may install its own.
    this.traps.clear();
    if (this.router !== undefined) this.router.handler = undefined;
    const status = await runProgram(program, argv.slice(1), io, this.programEnv(this.exportedEnv(), this.router));
    throw new ShellExit(status);
  }

  async applyRedirects(redirects: Redirect[], io: Io): Promise<Io | number> {
    if (redirects.length === 0) return io;
    const out: Io = { ...io };
    for (const r of redirects) {
      const target = await this.expandJoined(r.target);
      if (r.op === '>&') {
        if (target === '-') {
          if (r.fd === 1) out.stdout = NULL_SINK;
          else if (r.fd === 2) out.stderr = NULL_SINK;
        } else if (target === '1' || target === '2') {
          const sink = target === '1' ? out.stdout : out.stderr;
          if (r.fd === 1) out.stdout = sink;
          else if (r.fd === 2) out.stderr = sink;
        } else {
          io.stderr.write(`${this.name}: ${target}: bad file descriptor\n`);
          return 1;
        }
        continue;
      }
      if (r.op === '<') {
        try {
          out.stdin = this.env.fs.readFile(target, this.cwd);
        } catch {
          io.stderr.write(`${this.name}: can't open ${target}: no such file\n`);
          return 1;
        }
        continue;
      }
      const fs = this.env.fs;
      const cwd = this.cwd;
      try {
        fs.writeFile(target, cwd, '', r.op === '>>');
      } catch (e) {
        const text = e instanceof SimFsError && e.errno === 'ENOENT' ? 'nonexistent directory' : fsErrorText(e);
        io.stderr.write(`${this.name}: can't create ${target}: ${text}\n`);
        return 1;
      }
      const sink: OutputSink = {
        write: (text) => {
          try {
            fs.writeFile(target, cwd, text, true);
          } catch {
            // The file went away (or became unwritable) after it was opened; the data is lost, as with a real fd.
          }
        },
      };
      if (r.fd === 1) out.stdout = sink;
      else if (r.fd === 2) out.stderr = sink;
    }
    return out;
  }

  // ---- expansion ----

  lookup(name: string): string {
    switch (name) {
      case '?':
        return String(this.status);
      case '$':
        return this.router?.pid1 === true ? '1' : '7';
      case '!':
        return this.lastBackground;
      case '#':
        return String(Math.max(0, this.positional.length - 1));
      case '@':
      case '*':
        return this.positional.slice(1).join(' ');
    }
    if (/^\d+$/.test(name)) return this.positional[Number(name)] ?? '';
    return this.vars.get(name) ?? '';
  }

  async commandSubstitution(source: string): Promise<string> {
    const chunks: string[] = [];
    const child = this.fork();
    const status = await child.runSource(source, { stdout: { write: (t) => chunks.push(t) }, stderr: this.baseIo.stderr });
    this.status = status;
    return chunks.join('').replace(/\n+$/, '');
  }

  async expandPart(part: Word['parts'][number]): Promise<string> {
    switch (part.kind) {
      case 'lit':
        return part.text;
      case 'var':
        return this.lookup(part.name);
      case 'cmd':
        return this.commandSubstitution(part.source);
      case 'arith':
        return String(evalArithmetic(part.source, (n) => this.lookup(n)));
    }
  }

  /** Expands a word into fields: unquoted expansions are split on whitespace; quoted text never is. */
  async expandWord(word: Word): Promise<string[]> {
    const fields: string[] = [];
    let cur = '';
    let started = false;
    for (const part of word.parts) {
      const text = await this.expandPart(part);
      if (part.kind === 'lit' || part.quoted) {
        cur += text;
        if (part.quoted || text !== '') started = true;
        continue;
      }
      const pieces = text.split(/[ \t\n]+/);
      pieces.forEach((piece, i) => {
        if (i > 0 && started) {
          fields.push(cur);
          cur = '';
          started = false;
        }
        cur += piece;
        if (piece !== '') started = true;
      });
    }
    if (started) fields.push(cur);
    return fields;
  }

  /** Expands a word without field splitting (assignments, redirection targets). */
  async expandJoined(word: Word): Promise<string> {
    let out = '';
    for (const part of word.parts) out += await this.expandPart(part);
    return out;
  }
}

/** Evaluates `$(( … ))`: integers, variables, `+ - * / %`, comparisons, `&& || !`, parentheses. */
export function evalArithmetic(source: string, lookup: (name: string) => string): number {
  const src = source.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9?#$!])\}?/g, (_m, n: string) => lookup(n) || '0');
  const tokens = src.match(/\d+|[A-Za-z_][A-Za-z0-9_]*|&&|\|\||==|!=|<=|>=|[-+*/%()<>!]/g) ?? [];
  let pos = 0;
  const peek = (): string | undefined => tokens[pos];
  const next = (): string | undefined => tokens[pos++];
  const bad = (): never => {
    throw new ShellSyntaxError(`arithmetic syntax error: ${source}`);
  };
  const toInt = (v: string): number => (/^-?\d+$/.test(v.trim()) ? Number(v) : 0);
  const primary = (): number => {
    const t = next();
    if (t === undefined) return bad();
    if (t === '(') {
      const v = or();
      if (next() !== ')') bad();
      return v;
    }
    if (t === '-') return -primary();
    if (t === '+') return primary();
    if (t === '!') return primary() === 0 ? 1 : 0;
    if (/^\d+$/.test(t)) return Number(t);
    if (/^[A-Za-z_]/.test(t)) return toInt(lookup(t));
    return bad();
  };
  const binary = (ops: string[], lower: () => number, apply: (op: string, a: number, b: number) => number) => (): number => {
    let v = lower();
    for (let op = peek(); op !== undefined && ops.includes(op); op = peek()) {
      next();
      v = apply(op, v, lower());
    }
    return v;
  };
  const mul = binary(['*', '/', '%'], primary, (op, a, b) => {
    if (op !== '*' && b === 0) throw new ShellSyntaxError('arithmetic: divide by zero');
    return op === '*' ? a * b : op === '/' ? Math.trunc(a / b) : a % b;
  });
  const add = binary(['+', '-'], mul, (op, a, b) => (op === '+' ? a + b : a - b));
  const cmp = binary(['<', '<=', '>', '>='], add, (op, a, b) => Number(op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b));
  const eq = binary(['==', '!='], cmp, (op, a, b) => Number(op === '==' ? a === b : a !== b));
  const and = binary(['&&'], eq, (_op, a, b) => Number(a !== 0 && b !== 0));
  const or = binary(['||'], and, (_op, a, b) => Number(a !== 0 || b !== 0));
  if (tokens.length === 0) return 0;
  const v = or();
  if (pos < tokens.length) bad();
  return v;
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
