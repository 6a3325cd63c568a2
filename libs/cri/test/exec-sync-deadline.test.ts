/**
 * ExecSync's deadline through GrpcRuntimeService → serveCri → the fake runtime: the kubelet's rule
 * (remote_runtime.go ExecSync) — `timeout` plus the client timeout, none at all for `timeout` 0 —
 * and the runtime's own timeout answering DeadlineExceeded.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcRuntimeService, isCriError } from '../src/index.js';
import { defaultDeadlineMs } from '../src/grpc-runtime-service.js';
import { startFakeCri, type FakeCri, type FakeProgram } from '../src/testing/index.js';

/** `sleep-then MS CODE [TEXT]`: waits, prints TEXT, exits CODE; anything else runs until stopped. */
const programs = (argv: readonly string[]): FakeProgram | undefined =>
  argv[0] === 'sleep-then'
    ? async (p) => {
        await new Promise((r) => setTimeout(r, Number(argv[1])));
        if (argv[3] !== undefined) p.stdout(`${argv[3]}\n`);
        return Number(argv[2]);
      }
    : undefined;

describe('ExecSync deadline', () => {
  let simCri: FakeCri;
  let short: GrpcRuntimeService;
  let dir: string;
  let containerId: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'exec-deadline-'));
    simCri = await startFakeCri({ programs });
    // A client whose default timeout (100 ms) is far below the commands' run time.
    short = await GrpcRuntimeService.connect({ endpoint: simCri.endpoint, timeoutMs: 100 });
    // The pod and container are set up through a client with a generous timeout: only ExecSync is
    // under test, and a loaded machine must not fail the setup.
    const setup = await GrpcRuntimeService.connect({ endpoint: simCri.endpoint, timeoutMs: 60_000 });
    const config = { metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 }, logDirectory: dir };
    const { podSandboxId } = await setup.RunPodSandbox({ config });
    mkdirSync(path.join(dir, 'main'));
    ({ containerId } = await setup.CreateContainer({
      podSandboxId,
      sandboxConfig: config,
      config: { metadata: { name: 'main', attempt: 0 }, image: { image: 'busybox:1.36' }, command: ['sleep', '3600'], logPath: 'main/0.log' },
    }));
    await setup.StartContainer({ containerId });
    setup.close();
  });
  after(async () => {
    short.close();
    await simCri.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('computes timeout + client timeout, and no deadline for timeout 0', () => {
    assert.equal(defaultDeadlineMs('ExecSync', { timeout: '2' }, 120_000), 122_000);
    assert.equal(defaultDeadlineMs('ExecSync', { timeout: '0' }, 120_000), Infinity);
    assert.equal(defaultDeadlineMs('ExecSync', {}, 120_000), Infinity);
    assert.equal(defaultDeadlineMs('ListContainers', { timeout: '2' }, 120_000), 120_000);
  });

  it('lets a command with a timeout run past the client timeout', async () => {
    const r = await short.ExecSync({ containerId, cmd: ['sleep-then', '400', '0', 'done'], timeout: '5' });
    assert.equal(r.exitCode, 0);
    assert.equal(Buffer.from(r.stdout).toString(), 'done\n');
  });

  it('puts no deadline on a command with timeout 0', async () => {
    const r = await short.ExecSync({ containerId, cmd: ['sleep-then', '400', '7'], timeout: '0' });
    assert.equal(r.exitCode, 7);
  });

  it("fails with the runtime's DeadlineExceeded when the command outlives its timeout", async () => {
    await assert.rejects(short.ExecSync({ containerId, cmd: ['sleep-then', '30000', '0'], timeout: '1' }), (e) => isCriError(e, 'DeadlineExceeded'));
  });

  it('still honours an explicit per-call deadline', async () => {
    await assert.rejects(short.ExecSync({ containerId, cmd: ['sleep-then', '30000', '0'], timeout: '0' }, { deadlineMs: 200 }), (e) => isCriError(e, 'DeadlineExceeded'));
  });
});
