/**
 * The simulated busybox `sh` (ash): runs a parsed script (shell-parser.ts) with variables, traps,
 * background jobs, redirections and the builtins. One interpreter class over ~600 lines: its methods
 * share the shell's state (variables, traps, jobs, pending signals), so it stays in one file.
 *
 * One file on purpose: the evaluator of the shell's AST (lists, compounds, expansions, redirections) is one recursive walk; the parser and the applets live beside it.
 */
import type { OutputSink } from '@splitlet/cri';
import { echo, printf, test } from '../process/applets.js';
import { fsErrorText, SimFsError } from '../process/container-fs.js';
import {
  defaultAction,
  Killed,
  NULL_SINK,
  parseSignal,
  raceKill,
  runProgram,
  SIGNUM,
  type ContainerSetting,
  type Io,
  type Program,
  type ProgramEnv,
  type SignalRouter,
  type SimSignal,
} from '../process/program.js';
import { parseScript, ShellSyntaxError, type AndOr, type Command, type List, type Pipeline, type Redirect, type SimpleCommand, type Word } from './shell-parser.js';

/** Finds the program a command names in a container, or undefined when it has no such executable. */
export type CommandResolver = (name: string, container: ContainerSetting) => Program | undefined;

/** `exit n` (or `exec` finishing) unwinding the shell. */
export class ShellExit {
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

interface Job {
  done: Promise<number>;
  abort: AbortController;
}

export class Shell {
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
    /** Finds the program a command names (the container's executables). */
    readonly resolve: CommandResolver,
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
    const child = new Shell({ ...this.env, kill, cwd: this.cwd, env: this.exportedEnv(), router: undefined }, [...this.positional], this.opts, this.resolve);
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
    const program = this.resolve(name, this.env.container);
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
        const program = name === 'echo' ? echo : name === 'printf' ? printf : test;
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
    const first = argv[1] ?? ''; // argv holds `trap` and at least one operand here
    let action: string | undefined = first;
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
    const program = this.resolve(target, this.env.container);
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
