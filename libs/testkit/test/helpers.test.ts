import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { eventually, freePort, isTestkitError, liveProcesses, logRecords, makeTempDir, procStat, spawnProcess } from '../src/index.js';

describe('eventually', () => {
  it('resolves with the first truthy value, retrying throws and falsy values', async () => {
    let n = 0;
    const v = await eventually(
      () => {
        n++;
        if (n === 1) throw new Error('not yet');
        return n >= 3 ? { n } : undefined;
      },
      { intervalMs: 1 },
    );
    assert.deepEqual(v, { n: 3 });
  });

  it('times out with the last error as message and cause', async () => {
    const started = Date.now();
    await assert.rejects(
      eventually(
        async () => {
          throw new Error('pod is Pending');
        },
        { timeoutMs: 100, intervalMs: 10, message: 'pod Running' },
      ),
      (e) => {
        assert.ok(isTestkitError(e, 'Timeout'));
        assert.match((e as Error).message, /^pod Running not met within 100 ms \(\d+ attempts\); last: pod is Pending$/);
        assert.equal(((e as Error).cause as Error).message, 'pod is Pending');
        return true;
      },
    );
    assert.ok(Date.now() - started < 2000);
  });

  it('reports a last falsy value, and abandons an attempt that hangs past the deadline', async () => {
    await assert.rejects(
      eventually(() => false, { timeoutMs: 30, intervalMs: 5 }),
      /last: returned false/,
    );
    await assert.rejects(
      eventually(() => new Promise(() => {}), { timeoutMs: 50 }),
      /still running at the deadline/,
    );
  });
});

describe('freePort / makeTempDir', () => {
  it('freePort returns a bindable loopback port', async () => {
    const port = await freePort();
    assert.ok(port > 0 && port < 65536);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    server.close();
  });

  it('makeTempDir creates a dir that cleanup removes', async () => {
    const dir = await makeTempDir('splitlet-test-');
    assert.match(dir.path, /splitlet-test-/);
    await writeFile(join(dir.path, 'f'), 'x');
    await dir.cleanup();
    await dir.cleanup();
    assert.equal(existsSync(dir.path), false);
  });
});

describe('spawnProcess', () => {
  const node = process.execPath;

  it('collects stdout and stderr lines and waits for a line', async () => {
    const p = await spawnProcess({
      name: 'printer',
      cmd: node,
      args: ['-e', 'console.log("one"); console.error("two on stderr"); process.stdout.write("port=4321\\npartial")'],
    });
    const m = await p.waitForLine(/port=(\d+)/, 5000);
    assert.equal(m[1], '4321');
    const status = await p.exited;
    assert.deepEqual(status, { code: 0, signal: null, exitCode: 0 });
    assert.deepEqual([...p.lines].sort(), ['one', 'partial', 'port=4321', 'two on stderr']);
    assert.ok(p.pid > 0);
  });

  it('passes env and rejects waitForLine when the process exits first', async () => {
    const p = await spawnProcess({ cmd: node, args: ['-e', 'console.log(process.env.SPLITLET_X); process.exit(3)'], env: { SPLITLET_X: 'hello' } });
    await assert.rejects(p.waitForLine('never printed'), (e) => {
      assert.ok(isTestkitError(e, 'ProcessExited'));
      assert.match((e as Error).message, /exited \(code 3\)[\s\S]*hello/);
      return true;
    });
    assert.equal((await p.exited).exitCode, 3);
  });

  it('waitForLine times out with the output so far', async () => {
    const p = await spawnProcess({ cmd: node, args: ['-e', 'console.log("booting"); setInterval(() => {}, 1000)'] });
    await p.waitForLine('booting');
    await assert.rejects(p.waitForLine(/ready/, 50), (e) => isTestkitError(e, 'Timeout') && /booting/.test((e as Error).message));
    assert.equal(await p.stop(), 128 + 15);
  });

  it('stop() returns the exit code of a graceful exit, and escalates to SIGKILL', async () => {
    const graceful = await spawnProcess({
      cmd: node,
      args: ['-e', 'process.on("SIGTERM", () => { console.log("draining"); process.exit(0); }); console.log("up"); setInterval(() => {}, 1000)'],
    });
    await graceful.waitForLine('up');
    assert.equal(await graceful.stop(), 0);
    assert.ok(graceful.lines.includes('draining'));

    const stubborn = await spawnProcess({
      cmd: node,
      args: ['-e', 'process.on("SIGTERM", () => console.log("ignoring")); console.log("up"); setInterval(() => {}, 1000)'],
    });
    await stubborn.waitForLine('up');
    assert.equal(await stubborn.stop('SIGTERM', 200), 137);
    assert.equal((await stubborn.exited).signal, 'SIGKILL');
  });

  it('kill() sends SIGKILL; spawning a missing command rejects', async () => {
    const p = await spawnProcess({ cmd: node, args: ['-e', 'setInterval(() => {}, 1000)'] });
    assert.equal(await p.kill(), 137);
    await assert.rejects(spawnProcess({ cmd: '/nonexistent/binary' }), /cannot start '\/nonexistent\/binary'/);
  });
});

describe('logRecords', () => {
  it('returns the JSON records, by exact msg when asked', () => {
    const lines = ['plain text', '{"msg":"sync start","uid":"a"}', '{"msg":"sync start later"}', '{broken', '[1,2]', '{"msg":"sync end","uid":"a"}'];
    assert.deepEqual(logRecords(lines, 'sync start'), [{ msg: 'sync start', uid: 'a' }]);
    assert.equal(logRecords(lines).length, 3);
    assert.deepEqual(logRecords(lines, 'sync'), []);
  });
});

describe('liveProcesses / procStat', () => {
  it('finds a process by its argv and environment, leaves out zombies and itself', async () => {
    const marker = `procfs-${process.pid}-${Date.now()}`;
    // sh starts a child it never waits for and becomes `sleep`: the child, once exited, stays a zombie.
    const p = await spawnProcess({ cmd: 'sh', args: ['-c', 'sleep 0 & exec sleep 300', marker], env: { PROCFS_MARKER: marker } });
    try {
      const found = await eventually(() => liveProcesses({ environ: true }).find((e) => e.pid === p.pid && e.argv[0] === 'sleep'), { message: 'the sleep in liveProcesses' });
      assert.deepEqual(found.argv, ['sleep', '300']);
      assert.ok(found.environ?.includes(`PROCFS_MARKER=${marker}`));
      assert.equal(liveProcesses().find((e) => e.pid === p.pid)?.environ, undefined, 'no environment unless asked for');
      assert.match(procStat(p.pid)[0] ?? '', /^[RS]$/);
      assert.equal(Number(procStat(p.pid)[1]), process.pid, 'field 4 is the parent pid');
      const zombie = await eventually(
        () => {
          const kids = readFileSync(`/proc/${p.pid}/task/${p.pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
          return kids.find((k) => procStat(k)[0] === 'Z');
        },
        { message: "sh's exited child, a zombie" },
      );
      const pids = liveProcesses().map((e) => e.pid);
      assert.ok(!pids.includes(zombie), 'a zombie is not live');
      assert.ok(!pids.includes(process.pid), 'the caller is left out');
    } finally {
      await p.stop();
    }
    assert.throws(() => procStat(p.pid), /ENOENT/);
  });
});
