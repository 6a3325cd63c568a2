/**
 * The simulated busybox applets that need no shell: echo, printf, sleep, cat, touch, mkdir, rm,
 * test, printenv, date, tail, hostname, true, false, and the pause image's `/pause`.
 */
import { fsErrorText, SimFsError } from './container-fs.js';
import { defaultAction, raceKill, sleepMs, type Io, type Program, type ProgramEnv } from './program.js';

export function parseDuration(arg: string): number | undefined {
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

export const echo: Program = async (argv, io) => {
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

export const printf: Program = async (argv, io) => {
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

export const sleep: Program = async (argv, io, env) => {
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

export const cat: Program = async (argv, io, env) => {
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

export const touch: Program = async (argv, io, env) => {
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

export const mkdir: Program = async (argv, io, env) => {
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

export const rm: Program = async (argv, io, env) => {
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

export const test: Program = async (argv, io, env) => {
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

export const printenv: Program = async (argv, io, env) => {
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

export const date: Program = async (argv, io) => {
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

export const tail: Program = async (argv, io, env) => {
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
export const pause: Program = async (_argv, _io, env) => {
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

export const hostname: Program = async (_argv, io, env) => {
  io.stdout.write(`${env.hostname}\n`);
  return 0;
};

export const trueProgram: Program = async () => 0;
export const falseProgram: Program = async () => 1;
