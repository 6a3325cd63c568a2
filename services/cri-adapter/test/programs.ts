/**
 * What each command these tests give their containers does, on the fake runtime of
 * `@splitlet/cri/testing` (which runs no shell). Each entry is what busybox `sh` does with that
 * command as PID 1; the pod contract tests check the real behaviour on the simulator and containerd.
 * An unlisted command fails StartContainer/ExecSync loudly instead of running something else.
 */
import type { FakeProcess, FakeProgram } from '@splitlet/cri/testing';

const forever = (): Promise<number> => new Promise(() => undefined);
const exitOnTerm = (p: FakeProcess): Promise<number> => p.signalled.then(() => 0);

/** `echo … > /dev/termination-log`: without a mount there, the file stays in the container's own filesystem. */
function terminationLog(p: FakeProcess, text: string): void {
  try {
    p.writeFile('/dev/termination-log', text);
  } catch {
    // not mounted: written inside the container, invisible to the node
  }
}

/** `sleep S; exit N` (cut short by SIGKILL). */
const sleepThenExit =
  (ms: number, code: number): FakeProgram =>
  (p) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve(code), ms);
      p.killed.addEventListener('abort', () => clearTimeout(timer), { once: true });
    });

const SCRIPTS: Readonly<Record<string, FakeProgram>> = {
  "trap 'exit 0' TERM; sleep 1000 & wait": exitOnTerm,
  "trap '' TERM; sleep 1000": forever,
  "trap '' TERM; sleep 3600": forever,
  'echo started; sleep 3600': (p) => (p.stdout('started\n'), forever()),
  'cat /etc/hosts; echo "bye from c" > /dev/termination-log; exit 3': (p) => (p.stdout(p.readFile('/etc/hosts') ?? ''), terminationLog(p, 'bye from c\n'), 3),
  'echo line one; echo line two >&2; exit 1': (p) => (p.stdout('line one\n'), p.stderr('line two\n'), 1),
  'cat /etc/hosts; echo "ip=$POD_IP"': (p) => (p.stdout(p.readFile('/etc/hosts') ?? ''), p.stdout(`ip=${p.env['POD_IP'] ?? ''}\n`), 0),
  'echo x > /dev/termination-log; exit 1': (p) => (terminationLog(p, 'x\n'), 1),
  'sleep 0.2; exit 3': sleepThenExit(200, 3),
};

/** The program for an argv; throws for a command no test declared. */
export function testPrograms(argv: readonly string[]): FakeProgram | undefined {
  if (argv.length === 0) return undefined; // the image's default process: runs until stopped
  const [cmd, flag, script] = argv;
  if (cmd === 'sleep') return forever; // PID 1 ignores SIGTERM: killed at the timeout
  if (cmd === 'true') return () => 0;
  if (cmd === 'cat' && flag !== undefined) return (p) => (p.stdout(p.readFile(flag) ?? ''), 0);
  if (cmd === 'sh' && flag === '-c' && script !== undefined) {
    const exit = /^(?:echo (\w+); )?exit (\d+)$/.exec(script);
    if (exit !== null) return (p) => (exit[1] !== undefined && p.stdout(`${exit[1]}\n`), Number(exit[2]));
    const known = SCRIPTS[script];
    if (known !== undefined) return known;
  }
  throw new Error(`no test program for ${JSON.stringify(argv)}: add it to services/cri-adapter/test/programs.ts`);
}
