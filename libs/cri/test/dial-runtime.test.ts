import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { dialRuntime } from '../src/index.js';
import { startFakeCri, type FakeCri } from '../src/testing/index.js';

describe('dialRuntime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dial-'));
  let server: FakeCri | undefined;
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('retries until the runtime answers, reporting each failed attempt', async () => {
    const socketPath = join(dir, 'cri.sock');
    const attempts: number[] = [];
    const ac = new AbortController();
    const dialled = dialRuntime({ endpoint: `unix://${socketPath}`, connectTimeoutMs: 200, signal: ac.signal }, (attempt) => {
      attempts.push(attempt);
      if (attempt === 1) void startFakeCri({ socketPath }).then((s) => (server = s));
    });
    const client = await dialled;
    assert.ok(client !== undefined);
    assert.deepEqual(attempts.slice(0, 1), [1]);
    assert.ok((await client.Version({})).runtimeName.length > 0);
    client.close();
  });

  it('resolves undefined once the signal aborts', async () => {
    const ac = new AbortController();
    const dialled = dialRuntime({ endpoint: `unix://${join(dir, 'never.sock')}`, connectTimeoutMs: 100, signal: ac.signal }, () => ac.abort());
    assert.equal(await dialled, undefined);
  });
});
