/**
 * Runs a real `splitlet up` (every process its own OS process, a spawned nats-server) in a temp
 * state dir, and drives it with the real CLI.
 */
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { errorMessage } from '@splitlet/api';
import { containerdPaths, missingPrerequisites } from '../../libs/node-setup/src/index.ts';
import type { Identity, NatsCredential } from '@splitlet/bus';
import { readCredential } from '../../services/cli/src/up/nats-config.ts';

const execFileP = promisify(execFile);

export const repoRoot = resolve(import.meta.dirname, '..', '..');
const cliBin = join(repoRoot, 'services', 'cli', 'bin', 'splitlet.js');

export interface Instance {
  stateDir: string;
  nodeName: string;
  child: ChildProcess;
  output: string[];
  /** Runs `splitlet <args>` against this instance; resolves stdout (throws with stderr on failure). */
  cli(args: string[], input?: string): Promise<string>;
  /** `get pods -o json` items. */
  pods(): Promise<PodJson[]>;
  info(): InstanceJson;
  /** A NATS identity's credentials of this instance (`splitlet up` writes them into the state dir). */
  natsCredential(identity: Identity): NatsCredential;
  stop(): Promise<number | null>;
}

export interface InstanceJson {
  nodeName: string;
  natsUrl: string;
  processes: { name: string; pid: number; healthPort?: number }[];
}

export interface PodJson {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string> };
  spec: { containers: { name: string; image?: string }[] };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    podIP?: string;
    conditions?: { type: string; status: string; reason?: string }[];
    containerStatuses?: {
      name: string;
      ready: boolean;
      restartCount: number;
      image: string;
      containerID?: string;
      state?: {
        running?: { startedAt?: string };
        waiting?: { reason?: string; message?: string };
        terminated?: { exitCode: number; reason?: string; finishedAt?: string; startedAt?: string };
      };
      lastState?: { terminated?: { exitCode: number; reason?: string; finishedAt?: string; startedAt?: string } };
    }[];
  };
}

/**
 * Starts `splitlet up` and waits until every process reports ready. `stateDir`: use this (empty)
 * folder instead of a new temp one, so a caller can clean up what outlives a failed start (the
 * containerd that `--runtime containerd` starts there).
 */
export async function startSplitlet(opts: { podWorkers?: number; nodeName?: string; env?: Record<string, string>; args?: string[]; stateDir?: string } = {}): Promise<Instance> {
  const stateDir = opts.stateDir ?? mkdtempSync(join(tmpdir(), 'splitlet-e2e-'));
  const nodeName = opts.nodeName ?? 'e2e-node';
  const output: string[] = [];
  const env: Record<string, string> = { ...(process.env as Record<string, string>), SPLITLET_STATE_DIR: stateDir, LOG_LEVEL: 'debug', ...opts.env };
  delete env['NATS_URL'];
  const child = spawn(process.execPath, [cliBin, 'up', '--node-name', nodeName, '--pod-workers', String(opts.podWorkers ?? 1), ...(opts.args ?? ['--runtime', 'sim'])], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buf = '';
  const onData = (d: Buffer): void => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      output.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const inst: Instance = {
    stateDir,
    nodeName,
    child,
    output,
    async cli(args, input) {
      const p = execFileP(process.execPath, [cliBin, ...args], { env: { ...env }, maxBuffer: 64 * 1024 * 1024 });
      if (input !== undefined) {
        p.child.stdin?.end(input);
      }
      const { stdout } = await p;
      return stdout;
    },
    async pods() {
      const out = await inst.cli(['get', 'pods', '-A', '-o', 'json']);
      return (JSON.parse(out) as { items: PodJson[] }).items;
    },
    info() {
      return JSON.parse(readFileSync(join(stateDir, 'instance.json'), 'utf8')) as InstanceJson;
    },
    natsCredential(identity) {
      const c = readCredential(stateDir, identity);
      if (c === undefined) throw new Error(`no NATS credentials for ${identity} in ${stateDir}`);
      return c;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(t);
      // SPLITLET_TEST_KEEP_STATE=1 keeps the state dir (process logs under logs/) for a post-mortem.
      if (process.env.SPLITLET_TEST_KEEP_STATE === '1') process.stderr.write(`kept ${stateDir}\n`);
      else rmSync(stateDir, { recursive: true, force: true });
      return code;
    },
  };
  try {
    await waitReady(stateDir, 60_000, () => (child.exitCode !== null ? `splitlet up exited with ${child.exitCode}:\n${output.slice(-50).join('\n')}` : undefined));
  } catch (e) {
    // The logs of the processes that never got ready, read before stop() removes the state dir.
    const tails = e instanceof NotReadyError ? `\n${logTails(stateDir, e.processes)}` : '';
    await inst.stop();
    throw new Error(`${(e as Error).message}:\n${output.slice(-80).join('\n')}${tails}`, { cause: e });
  }
  return inst;
}

/**
 * Why the tests that run a local containerd must be skipped here (printed by each test file), or
 * undefined: RUN_CONTAINERD_TESTS=0, not root, or a missing prerequisite.
 */
export function containerdSkipReason(): string | undefined {
  if (process.env['RUN_CONTAINERD_TESTS'] === '0') return 'RUN_CONTAINERD_TESTS=0';
  if (process.getuid?.() !== 0) return 'a local containerd needs root';
  const missing = missingPrerequisites();
  return missing.length > 0 ? `missing: ${missing.join(', ')}` : undefined;
}

/** The kubectl the cluster tests run: KUBECTL, or Debian's. */
export const KUBECTL = process.env['KUBECTL'] ?? '/usr/bin/kubectl';

/** Why the kubectl tests must be skipped here (printed by each test file), or undefined. */
export async function kubectlSkipReason(): Promise<string | undefined> {
  try {
    await execFileP(KUBECTL, ['version', '--client'], { timeout: 20_000 });
    return undefined;
  } catch (e) {
    return `kubectl not usable at ${KUBECTL}: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** The CRI socket `splitlet up --runtime <runtime>` serves in `stateDir`. */
export function criEndpointOf(runtime: 'sim' | 'containerd', stateDir: string): string {
  return runtime === 'sim' ? `unix://${join(stateDir, 'run', 'sim-runtime.sock')}` : `unix://${containerdPaths(stateDir).socket}`;
}

/**
 * Ends a `splitlet up` started in its own `stateDir`, also after a failed start: SIGTERM and wait,
 * then (`containerd`) drain and stop the containerd it started, then check it exited 0 and remove
 * the state dir.
 */
export async function stopSplitlet(s: Instance | undefined, stateDir: string | undefined, opts: { containerd: boolean }): Promise<void> {
  if (s !== undefined && s.child.exitCode === null && s.child.signalCode === null) {
    const exited = once(s.child, 'exit');
    s.child.kill('SIGTERM');
    await exited;
  }
  if (opts.containerd && stateDir !== undefined && existsSync(stateDir)) {
    // Also after a failed start: `splitlet up` may have started containerd before failing.
    await execFileP(process.execPath, [cliBin, 'runtime', 'down', '--purge'], { env: { ...process.env, SPLITLET_STATE_DIR: stateDir } });
  }
  if (s === undefined) {
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
    return;
  }
  assert.equal(await s.stop(), 0, 'splitlet up exits 0 on SIGTERM');
}

/** {@link waitReady} ran out of time; `processes` names those whose /readyz did not answer 200. */
export class NotReadyError extends Error {
  override readonly name = 'NotReadyError';
  constructor(
    message: string,
    readonly processes: readonly string[],
  ) {
    super(message);
  }
}

/** The last `n` lines of each named process's log in the state dir, for a failure message. */
function logTails(stateDir: string, names: readonly string[], n = 20): string {
  return names
    .map((name) => {
      const file = join(stateDir, 'logs', `${name}.log`);
      const lines = existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-n) : ['(no log file)'];
      return `--- ${name} (last ${lines.length} lines of logs/${name}.log)\n${lines.join('\n')}`;
    })
    .join('\n');
}

/**
 * Waits until the instance in `stateDir` lists its processes and every one answers /readyz with 200.
 * `fatal` may report a reason to stop waiting (e.g. the supervisor exited).
 */
export async function waitReady(stateDir: string, timeoutMs: number, fatal: () => string | undefined = () => undefined): Promise<void> {
  const file = join(stateDir, 'instance.json');
  const deadline = Date.now() + timeoutMs;
  let notReady: string[] | undefined;
  for (;;) {
    const why = fatal();
    if (why !== undefined) throw new Error(why);
    if (existsSync(file)) {
      const info = JSON.parse(readFileSync(file, 'utf8')) as InstanceJson;
      const ready = await Promise.all(
        info.processes.map(async (p) =>
          p.healthPort
            ? fetch(`http://127.0.0.1:${p.healthPort}/readyz`).then(
                (r) => r.ok,
                () => false,
              )
            : false,
        ),
      );
      if (ready.length > 0 && ready.every(Boolean)) return;
      notReady = info.processes.filter((_, i) => ready[i] !== true).map((p) => p.name);
    }
    if (Date.now() > deadline)
      throw new NotReadyError(`splitlet did not become ready within ${timeoutMs / 1000} s (not ready: ${notReady?.join(', ') ?? 'no instance.json yet'})`, notReady ?? []);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Polls `fn` until it returns a truthy value or throws no more; fails after `timeoutMs` with the last error. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${errorMessage(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A pod with the given phase by name. */
export function podNamed(pods: PodJson[], name: string): PodJson | undefined {
  return pods.find((p) => p.metadata.name === name);
}
