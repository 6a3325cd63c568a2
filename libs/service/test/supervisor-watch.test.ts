/** runService's supervisor watch: a process whose parent is no longer its supervisor drains. */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '@splitlet/telemetry';
import { runService, SUPERVISOR_CHECK_MS } from '../src/run-service.js';
import type { RunServiceOptions } from '../src/run-service.js';

const quiet = createLogger({ service: 'test', level: 'error', stream: { write: () => true } });

/** A service supervised by pid 4242 that exits through a seam: `exited` resolves with its code, `exitCode()` is undefined until then. */
function supervised(watch: Pick<RunServiceOptions, 'parentPid' | 'supervisorStdin'>): { exited: Promise<number>; exitCode: () => number | undefined } {
  let exitCode: number | undefined;
  const exited = new Promise<number>((r) => {
    void runService({
      name: 'watched',
      logger: quiet,
      port: 0,
      handleProcessEvents: false,
      supervisorPid: 4242,
      ...watch,
      exit: (code) => {
        exitCode = code;
        r(code);
      },
      start: () => undefined,
    });
  });
  return { exited, exitCode: () => exitCode };
}

describe('runService supervisorPid', () => {
  it('drains once the parent pid is no longer the supervisor, and not before', async () => {
    let parent = 4242;
    const svc = supervised({ parentPid: () => parent });
    await new Promise((r) => setTimeout(r, SUPERVISOR_CHECK_MS * 3));
    assert.equal(svc.exitCode(), undefined, 'still running while its parent is the supervisor');
    const t0 = Date.now();
    parent = 1;
    assert.equal(await svc.exited, 0);
    assert.ok(Date.now() - t0 < SUPERVISOR_CHECK_MS * 4, `drained ${Date.now() - t0} ms after re-parenting`);
  });

  it("with the supervisor's stdin pipe, drains when it ends, without polling the parent pid", async () => {
    const stdin = new PassThrough();
    let parentReads = 0;
    const svc = supervised({
      supervisorStdin: stdin,
      parentPid: () => {
        parentReads++;
        return 1; // re-parented already: polling would drain at once
      },
    });
    await new Promise((r) => setTimeout(r, SUPERVISOR_CHECK_MS * 3));
    assert.equal(svc.exitCode(), undefined, 'still running while the pipe is open');
    assert.equal(parentReads, 0, 'the parent pid is not polled');
    stdin.end();
    assert.equal(await svc.exited, 0);
  });
});
