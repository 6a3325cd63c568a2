/**
 * `splitlet up` leaves no orphans and survives its nats-server dying; the CLI never hangs.
 * Real processes: `splitlet up --runtime sim` with its own nats-server, killed and signalled the
 * ways a user, npm or a process manager does. The processes of an instance are found by its state
 * dir in their command line (nats-server's `-sd`) or environment (every process's
 * `SPLITLET_STATE_DIR` / `HEALTH_PORT_FILE`): on Node 24 `ps -o comm` says MainThread.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import { GrpcRuntimeService } from '@splitlet/cri';
import { freePort, liveProcesses } from '@splitlet/testkit';
import { podNamed, repoRoot, startSplitlet, waitFor, waitReady } from './harness.ts';
import type { Instance } from './harness.ts';

const execFileP = promisify(execFile);
const cliBin = join(repoRoot, 'services', 'cli', 'bin', 'splitlet.js');

/** Pids of every process whose command line or environment names `stateDir` (never this one). */
function processesOf(stateDir: string): { pid: number; cmd: string }[] {
  return liveProcesses({ environ: true })
    .filter((p) => p.argv.some((a) => a.includes(stateDir)) || (p.environ ?? []).some((e) => e.includes(stateDir)))
    .map((p) => ({ pid: p.pid, cmd: p.argv.join(' ') }));
}

/** Waits until no process of `stateDir` is left; resolves the time it took (ms), or throws listing them. */
async function allGone(stateDir: string, since: number, timeoutMs: number): Promise<number> {
  for (;;) {
    const left = processesOf(stateDir);
    if (left.length === 0) return Date.now() - since;
    if (Date.now() - since > timeoutMs) throw new Error(`${left.length} processes left after ${timeoutMs} ms:\n${left.map((p) => `${p.pid} ${p.cmd}`).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Last resort for a failed test: SIGKILL whatever of `stateDir` is still running. */
function killLeftovers(stateDir: string): void {
  for (const p of processesOf(stateDir)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function natsServerOf(stateDir: string): number | undefined {
  return processesOf(stateDir).find((p) => p.cmd.startsWith('nats-server') || p.cmd.includes('/nats-server '))?.pid;
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) {
    killLeftovers(d);
    rmSync(d, { recursive: true, force: true });
  }
});

function tracked(s: Instance): Instance {
  dirs.push(s.stateDir);
  return s;
}

describe('splitlet up: no orphans, NATS supervised, CLI never hangs', { timeout: 600_000 }, () => {
  test('the supervisor killed with -9: every process drains and is gone within 10 s', async () => {
    const s = tracked(await startSplitlet({ nodeName: 'orphan-node' }));
    const before = processesOf(s.stateDir).length;
    assert.ok(before >= 10, `expected the whole node running, found ${before}`);
    const t0 = Date.now();
    s.child.kill('SIGKILL');
    const ms = await allGone(s.stateDir, t0, 10_000);
    console.log(`kill -9 of the supervisor: ${before} processes, all gone in ${ms} ms`);
  });

  test('`npx splitlet up` stopped with SIGTERM to npx (npm does not pass it on): all gone within 10 s', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-npx-'));
    dirs.push(stateDir);
    const env: NodeJS.ProcessEnv = { ...process.env, SPLITLET_STATE_DIR: stateDir, PATH: `${join(repoRoot, 'node_modules', '.bin')}:${process.env['PATH'] ?? ''}` };
    delete env['NATS_URL'];
    const npx = spawn('npx', ['--no-install', 'splitlet', 'up', '--runtime', 'sim', '--node-name', 'npx-node'], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    npx.stdout.on('data', (d: Buffer) => (output += d.toString()));
    npx.stderr.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await waitReady(stateDir, 90_000, () => (npx.exitCode !== null ? `npx exited with ${npx.exitCode}: ${output.slice(-3000)}` : undefined));
      const before = processesOf(stateDir).length;
      const t0 = Date.now();
      process.kill(npx.pid!, 'SIGTERM');
      const ms = await allGone(stateDir, t0, 10_000);
      console.log(`SIGTERM to npx: ${before} processes, all gone in ${ms} ms`);
    } finally {
      if (npx.exitCode === null && npx.signalCode === null) npx.kill('SIGKILL');
      killLeftovers(stateDir);
    }
  });

  test('SIGTERM with NATS killed: every process gone within 5 s, exit 0', async () => {
    const s = tracked(await startSplitlet({ nodeName: 'nonats-node', args: ['--runtime', 'sim', '--no-restart'] }));
    const nats = natsServerOf(s.stateDir);
    assert.ok(nats, 'the spawned nats-server is found by its store dir');
    process.kill(nats, 'SIGKILL');
    // Let the processes see the connection drop (they reconnect every 250 ms).
    await waitFor('the processes to notice NATS is gone', async () => s.output.some((l) => /nats-server ended by SIGKILL|exited with signal SIGKILL/.test(l)), 10_000);
    await new Promise((r) => setTimeout(r, 1000));
    const before = processesOf(s.stateDir).length;
    const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
    const t0 = Date.now();
    s.child.kill('SIGTERM');
    const ms = await allGone(s.stateDir, t0, 5000);
    assert.equal(await exited, 0, s.output.slice(-20).join('\n'));
    console.log(`SIGTERM with NATS down: ${before} processes, all gone in ${ms} ms`);
  });

  test('a CLI command against a closed port fails fast, naming the URL and the cause', async () => {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    const t0 = Date.now();
    const err = await execFileP(process.execPath, [cliBin, 'get', 'pods', '--nats-url', url], { timeout: 20_000 }).then(
      () => assert.fail('get pods succeeded without NATS'),
      (e: { code?: number; stderr?: string }) => e,
    );
    const ms = Date.now() - t0;
    assert.notEqual(err.code, 0);
    assert.match(err.stderr ?? '', new RegExp(`cannot reach NATS at ${url.replaceAll('.', '\\.')}: .*refused`));
    assert.ok(ms < 10_000, `failed after ${ms} ms`); // mostly Node start-up on a loaded machine: the refusal itself is immediate
    const bad = await execFileP(process.execPath, [cliBin, 'get', 'pods', '--nats-url', url, '--request-timeout', 'soon']).then(
      () => assert.fail('accepted a bad --request-timeout'),
      (e: { stderr?: string }) => e,
    );
    assert.match(bad.stderr ?? '', /--request-timeout must be a duration/);
    console.log(`get pods against a closed port: exit ${err.code} in ${ms} ms`);
  });

  test('nats-server killed with -9 under splitlet up: restarted, the node resumes, no pod started twice', async () => {
    const node = 'natsrestart-node';
    const s = tracked(await startSplitlet({ nodeName: node, podWorkers: 2 }));
    // Static pods (files in manifests/) are named NAME-NODE, as the kubelet names mirror pods.
    const pod = (name: string): string => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec: {containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]}\n`;
    const manifests = join(s.stateDir, 'manifests');
    writeFileSync(join(manifests, 'before.yaml'), pod('before'));
    await waitFor('pod before Running', async () => podNamed(await s.pods(), `before-${node}`)?.status?.phase === 'Running', 60_000);
    const pids = new Map(s.info().processes.map((p) => [p.name, p.pid]));
    const nats = natsServerOf(s.stateDir);
    assert.ok(nats);
    const t0 = Date.now();
    process.kill(nats, 'SIGKILL');
    const again = await waitFor(
      'a new nats-server',
      async () => {
        const p = natsServerOf(s.stateDir);
        return p !== undefined && p !== nats ? p : undefined;
      },
      30_000,
    );
    await s.cli(['get', 'pods']).then(() => undefined);
    console.log(`nats-server ${nats} killed; ${again} serving again after ${Date.now() - t0} ms`);
    writeFileSync(join(manifests, 'after.yaml'), pod('after'));
    await waitFor('pod after Running', async () => podNamed(await s.pods(), `after-${node}`)?.status?.phase === 'Running', 90_000);
    console.log(`pod applied after the restart Running ${Date.now() - t0} ms after the kill`);
    const pods = await s.pods();
    assert.equal(podNamed(pods, `before-${node}`)?.status?.phase, 'Running');
    assert.equal(podNamed(pods, `before-${node}`)?.status?.containerStatuses?.[0]?.restartCount, 0);
    const now = new Map(s.info().processes.map((p) => [p.name, p.pid]));
    assert.deepEqual(now, pids, 'no process was restarted: each reconnected on its own');
    const rt = await GrpcRuntimeService.connect({ endpoint: `unix://${join(s.stateDir, 'run', 'sim-runtime.sock')}`, timeoutMs: 10_000 });
    try {
      const sandboxes = (await rt.ListPodSandbox({})).items ?? [];
      const perPod = new Map<string, number>();
      for (const b of sandboxes) perPod.set(b.metadata?.name ?? '', (perPod.get(b.metadata?.name ?? '') ?? 0) + 1);
      assert.deepEqual(Object.fromEntries(perPod), { [`before-${node}`]: 1, [`after-${node}`]: 1 }, 'one sandbox per pod');
    } finally {
      rt.close();
    }
    const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
    s.child.kill('SIGTERM');
    assert.equal(await exited, 0);
    await allGone(s.stateDir, Date.now(), 10_000);
  });
});
