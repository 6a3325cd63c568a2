/**
 * The simulated busybox: a table of scripts with their expected output and exit code. When a real
 * `busybox` binary is on PATH the same table also runs through `busybox sh -c` (and, as root with
 * `unshare`, the signal table runs with sh as PID 1 of a new PID namespace), so the simulator cannot
 * drift from the real thing. Without busybox those comparisons are skipped with the reason.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ContainerFs } from '../src/process/container-fs.js';
import type { SimSignal } from '../src/process/program.js';
import { spawnProcess } from '../src/process/sim-process.js';
import { evalArithmetic } from '../src/shell/shell.js';
import { parseScript } from '../src/shell/shell-parser.js';

interface Case {
  script: string;
  stdout: string;
  stderr?: string;
  exit: number;
}

/** `$D` is a scratch directory, mounted at the same path in the simulated container. */
const CASES: Case[] = [
  { script: 'true', stdout: '', exit: 0 },
  { script: 'false', stdout: '', exit: 1 },
  { script: 'exit 3', stdout: '', exit: 3 },
  { script: 'exit 300', stdout: '', exit: 44 },
  { script: 'echo a; echo b', stdout: 'a\nb\n', exit: 0 },
  { script: 'false && echo no || echo yes', stdout: 'yes\n', exit: 0 },
  { script: 'true || echo no; echo $?', stdout: '0\n', exit: 0 },
  { script: 'false; echo $?', stdout: '1\n', exit: 0 },
  { script: '! false && echo negated', stdout: 'negated\n', exit: 0 },
  { script: 'nosuchcmd', stdout: '', stderr: 'sh: nosuchcmd: not found\n', exit: 127 },
  { script: 'echo "a  b"   c', stdout: 'a  b c\n', exit: 0 },
  { script: 'echo \'single $HOME\' "double"', stdout: 'single $HOME double\n', exit: 0 },
  { script: 'echo -n x; echo y', stdout: 'xy\n', exit: 0 },
  { script: 'echo -e "a\\tb"; echo "a\\tb"', stdout: 'a\tb\na\\tb\n', exit: 0 },
  { script: 'printf "%s-%d\\n" a 1 b 2', stdout: 'a-1\nb-2\n', exit: 0 },
  { script: 'printf "%5s|%-3s|%03d\\n" ab c 7', stdout: '   ab|c  |007\n', exit: 0 },
  { script: 'X="one two"; echo $X; echo "$X"; for w in $X; do echo "[$w]"; done', stdout: 'one two\none two\n[one]\n[two]\n', exit: 0 },
  { script: 'x=$(echo hi; echo there); echo "$x"', stdout: 'hi\nthere\n', exit: 0 },
  { script: 'x=`echo back`; echo $x', stdout: 'back\n', exit: 0 },
  { script: 'i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; done', stdout: '1\n2\n3\n', exit: 0 },
  { script: 'i=5; until [ $i -le 3 ]; do i=$((i - 1)); done; echo $i $((i * 2 + 1)) $(( (i+1) % 3 ))', stdout: '3 7 1\n', exit: 0 },
  { script: 'for i in 1 2 3 4; do [ $i = 3 ] && break; echo $i; done', stdout: '1\n2\n', exit: 0 },
  { script: 'for i in 1 2 3; do [ $i = 2 ] && continue; echo $i; done', stdout: '1\n3\n', exit: 0 },
  { script: 'if false; then echo a; elif true; then echo b; else echo c; fi', stdout: 'b\n', exit: 0 },
  { script: 'if [ -z "" ] && [ -n x ] && [ 2 -gt 1 ] && [ a != b ]; then echo ok; fi', stdout: 'ok\n', exit: 0 },
  { script: '[ 1 -eq 2 ]; echo $?; test ! -f /nonexistent; echo $?', stdout: '1\n0\n', exit: 0 },
  { script: '{ echo g1; echo g2; } ; ( exit 4 ); echo $?', stdout: 'g1\ng2\n4\n', exit: 0 },
  { script: 'set -e; echo before; false; echo after', stdout: 'before\n', exit: 1 },
  { script: 'set -e; false || true; if false; then :; fi; echo survived', stdout: 'survived\n', exit: 0 },
  { script: 'f() { echo x; }', stdout: '', stderr: 'ignored', exit: 2 },
  { script: 'echo out; echo err >&2', stdout: 'out\n', stderr: 'err\n', exit: 0 },
  { script: 'echo err 2>&1 >&2', stdout: 'err\n', exit: 0 },
  { script: "trap 'echo bye' EXIT; echo hi", stdout: 'hi\nbye\n', exit: 0 },
  { script: "trap 'echo bye' EXIT; exit 5", stdout: 'bye\n', exit: 5 },
  { script: 'sleep 0.01 & wait; echo waited $?', stdout: 'waited 0\n', exit: 0 },
  { script: 'sleep 5 & kill $!; wait $!; echo $?', stdout: '143\n', exit: 0 },
  { script: 'sleep abc', stdout: '', stderr: "sleep: invalid number 'abc'\n", exit: 1 },
  { script: 'exec echo replaced; echo never', stdout: 'replaced\n', exit: 0 },
  { script: 'echo x > $D/f && echo y >> $D/f && cat $D/f', stdout: 'x\ny\n', exit: 0 },
  { script: 'touch $D/t && test -f $D/t && test ! -s $D/t && echo empty', stdout: 'empty\n', exit: 0 },
  { script: 'mkdir -p $D/a/b && test -d $D/a/b && rm -r $D/a && test ! -e $D/a && echo gone', stdout: 'gone\n', exit: 0 },
  { script: 'cd $D && echo rel > r.txt && cat $D/r.txt', stdout: 'rel\n', exit: 0 },
  { script: 'echo x > $D/missing/y; echo $?', stdout: '1\n', stderr: "sh: can't create $D/missing/y: nonexistent directory\n", exit: 0 },
  { script: 'cat $D/none', stdout: '', stderr: "cat: can't open '$D/none': No such file or directory\n", exit: 1 },
  { script: 'echo a; echo "unterminated', stdout: '', stderr: 'sh: syntax error: unterminated quoted string\n', exit: 2 },
  { script: 'if true; then echo a; fi fi', stdout: '', stderr: 'sh: syntax error: unexpected "fi"\n', exit: 2 },
];

/** Scripts whose stderr wording differs from busybox on purpose (our errors say what is unsupported). */
const SIM_ONLY_STDERR = new Set(['f() { echo x; }']);

const CONTAINER_ENV = { PATH: '/bin:/usr/bin', HOME: '/root' };

async function runSim(argv: string[], dir: string, opts: { term?: () => Promise<void>; killAfterMs?: number } = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const kill = new AbortController();
  const fs = new ContainerFs([{ containerPath: dir, hostPath: dir, readonly: false }], 'sim-host');
  const proc = spawnProcess(
    argv,
    {
      fs,
      hostname: 'sim-host',
      env: { ...CONTAINER_ENV, D: dir },
      cwd: '/',
      stdout: { write: (t) => out.push(t) },
      stderr: { write: (t) => err.push(t) },
      stdinOpen: false,
      kill: kill.signal,
    },
    { pid1: true },
  );
  let timer: NodeJS.Timeout | undefined;
  if (opts.term !== undefined) {
    void opts.term().then(() => {
      proc.signal('TERM');
      timer = setTimeout(() => kill.abort(), opts.killAfterMs ?? 1000);
    });
  }
  const exit = await proc.exited;
  clearTimeout(timer);
  kill.abort();
  return { stdout: out.join(''), stderr: err.join(''), exit };
}

function findBusybox(): string | undefined {
  const r = spawnSync('busybox', ['true']);
  return r.status === 0 ? 'busybox' : undefined;
}

describe('simulated sh (table)', { concurrency: true }, () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'sim-sh-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [i, c] of CASES.entries()) {
    it(`${c.script} → ${c.exit}`, async () => {
      const d = path.join(dir, `case-${i}`);
      mkdirSync(d);
      const r = await runSim(['sh', '-c', c.script], d);
      assert.equal(r.stdout, c.stdout.replaceAll('$D', d));
      assert.equal(r.exit, c.exit);
      if (c.stderr !== undefined && !SIM_ONLY_STDERR.has(c.script)) assert.equal(r.stderr, c.stderr.replaceAll('$D', d));
    });
  }

  it('reports unsupported syntax (pipes, case) instead of misreading it', () => {
    assert.throws(() => parseScript('echo a | cat'), /does not support pipes/);
    assert.throws(() => parseScript('case x in x) ;; esac'), /does not support "case"/);
  });

  it('parses a script once: the same source gives the same frozen tree; a syntax error is thrown every time', () => {
    const script = "trap 'exit 0' TERM; sleep 3600 & wait";
    const tree = parseScript(script);
    assert.equal(parseScript(script), tree);
    assert.ok(Object.isFrozen(tree) && Object.isFrozen(tree.items));
    assert.notEqual(parseScript(`${script} `), tree);
    assert.throws(() => parseScript('echo a | cat'), /does not support pipes/);
    assert.throws(() => parseScript('echo a | cat'), /does not support pipes/);
  });

  it('evaluates arithmetic', () => {
    const vars: Record<string, string> = { i: '4', j: '' };
    const look = (n: string) => vars[n] ?? '';
    assert.equal(evalArithmetic('i + 2 * 3', look), 10);
    assert.equal(evalArithmetic('(i + 2) * 3', look), 18);
    assert.equal(evalArithmetic('$i / 3 + j', look), 1);
    assert.equal(evalArithmetic('i > 3 && i != 5', look), 1);
    assert.equal(evalArithmetic('-i % 3', look), -1);
  });
});

describe('simulated sh vs real busybox', () => {
  const busybox = findBusybox();
  let dir: string;
  let bin: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'sim-vs-busybox-'));
    bin = path.join(dir, 'bin');
    if (busybox !== undefined) {
      mkdirSync(bin);
      spawnSync(busybox, ['--install', '-s', bin]);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const skip = busybox === undefined ? 'no busybox on PATH (apt-get install busybox-static to compare)' : false;
  it('produces the same stdout and exit code as `busybox sh -c` for every table script', { skip }, async () => {
    await Promise.all(
      CASES.map(async (c, i) => {
        if (SIM_ONLY_STDERR.has(c.script)) return;
        const d = path.join(dir, `real-${i}`);
        const s = path.join(dir, `sim-${i}`);
        mkdirSync(d);
        mkdirSync(s);
        const [real, sim] = await Promise.all([runReal(bin, c.script.replaceAll('$D', d), d), runSim(['sh', '-c', c.script.replaceAll('$D', s)], s)]);
        assert.equal(sim.stdout.replaceAll(s, '<D>'), real.stdout.replaceAll(d, '<D>'), `stdout of ${c.script}`);
        assert.equal(sim.exit, real.exit, `exit code of ${c.script}`);
        const realErr = real.stderr.replaceAll(d, '<D>').replaceAll(`${bin}/sh`, 'sh');
        if (c.stderr !== undefined) assert.equal(sim.stderr.replaceAll(s, '<D>'), realErr, `stderr of ${c.script}`);
      }),
    );
  });

  // util-linux unshare, resolved on our PATH (busybox's own `unshare` applet lacks --kill-child).
  const unshare = spawnSync('sh', ['-c', 'command -v unshare'], { encoding: 'utf8' }).stdout.trim();
  const canUnshare = busybox !== undefined && unshare !== '' && process.getuid?.() === 0 && spawnSync(unshare, ['--pid', '--fork', '--kill-child', 'true']).status === 0;
  const SIGNAL_CASES: { script: string; exit: number }[] = [
    { script: "trap 'exit 0' TERM; echo ready; sleep 30 & wait", exit: 0 },
    { script: "trap 'echo got; exit 3' TERM; echo ready; while true; do sleep 0.05; done", exit: 3 },
    { script: "trap 'exit 0' TERM; echo ready; sleep 30", exit: 137 },
    { script: "trap '' TERM; echo ready; sleep 30 & wait", exit: 137 },
    { script: 'echo ready; sleep 30', exit: 137 },
  ];
  it('handles SIGTERM as PID 1 like busybox sh as PID 1 of a PID namespace', { skip: canUnshare ? false : 'needs busybox, root and unshare --pid' }, async () => {
    const killAfterMs = 600;
    await Promise.all(
      SIGNAL_CASES.map(async (c) => {
        const real = await runRealPid1(unshare, bin, c.script, killAfterMs);
        let ready!: () => void;
        const readyP = new Promise<void>((r) => (ready = r));
        const simOut: string[] = [];
        const fs = new ContainerFs([], 'h');
        const kill = new AbortController();
        const proc = spawnProcess(
          ['sh', '-c', c.script],
          {
            fs,
            hostname: 'h',
            env: CONTAINER_ENV,
            cwd: '/',
            stdinOpen: false,
            kill: kill.signal,
            stdout: {
              write: (t) => {
                simOut.push(t);
                if (t.includes('ready')) ready();
              },
            },
            stderr: { write: () => undefined },
          },
          { pid1: true },
        );
        await readyP;
        // `ready` is printed before the next command starts; one macrotask later the simulated sh is
        // inside it (every step up to a timer wait is a microtask), so TERM lands during `sleep`.
        await new Promise((r) => setImmediate(r));
        proc.signal('TERM' satisfies SimSignal);
        const timer = setTimeout(() => kill.abort(), killAfterMs);
        const simExit = await proc.exited;
        clearTimeout(timer);
        kill.abort();
        assert.equal(real.exit, c.exit, `busybox: ${c.script}`);
        assert.equal(simExit, c.exit, `sim: ${c.script}`);
        assert.equal(simOut.join(''), real.stdout, `stdout of ${c.script}`);
      }),
    );
  });
});

/** Runs `busybox sh -c script` with only busybox applets on PATH. */
function runReal(bin: string, script: string, d: string): Promise<{ stdout: string; stderr: string; exit: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(bin, 'sh'), ['-c', script], { env: { PATH: bin, HOME: '/root', D: d }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (exit) => resolve({ stdout, stderr, exit }));
  });
}

/** Runs busybox sh as PID 1 of a new PID namespace, sends SIGTERM once it printed `ready`, SIGKILLs after `killAfterMs`. */
function runRealPid1(unshare: string, bin: string, script: string, killAfterMs: number): Promise<{ exit: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(unshare, ['--pid', '--fork', '--kill-child', path.join(bin, 'sh'), '-c', script], { env: { PATH: bin }, stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    let signalled = false;
    let timer: NodeJS.Timeout | undefined;
    let termTimer: NodeJS.Timeout | undefined;
    const pid1 = (): number | undefined => {
      try {
        const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
        return children === '' ? undefined : Number(children.split(' ')[0]);
      } catch {
        return undefined;
      }
    };
    let exitCode: number | undefined;
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
      if (!signalled && stdout.includes('ready')) {
        signalled = true;
        const pid = pid1();
        if (pid === undefined) return reject(new Error('no PID 1 found'));
        // Let sh start the command after `echo ready` (a fork) before signalling, as the sim side does.
        termTimer = setTimeout(() => process.kill(pid, 'SIGTERM'), 50);
        timer = setTimeout(() => {
          const p = pid1();
          if (p !== undefined) {
            exitCode = 137;
            process.kill(p, 'SIGKILL');
          }
        }, 50 + killAfterMs);
      }
    });
    child.on('error', reject);
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      clearTimeout(termTimer);
      resolve({ exit: exitCode ?? code ?? (sig === null ? 1 : 128), stdout });
    });
  });
}
