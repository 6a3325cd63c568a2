import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { findNatsServer, isTestkitError, startNatsServer, type NatsServer } from '../src/index.js';

/** Connects with a raw socket and returns the server's first protocol line (INFO {...}). */
function readInfo(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let buf = '';
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error(`no INFO from 127.0.0.1:${port} within 5 s`));
    });
    socket.on('data', (d: Buffer) => {
      buf += d.toString();
      const i = buf.indexOf('\r\n');
      if (i >= 0) {
        socket.destroy();
        resolve(buf.slice(0, i));
      }
    });
    socket.on('error', reject);
  });
}

function infoJson(line: string): Record<string, unknown> {
  assert.match(line, /^INFO \{/);
  return JSON.parse(line.slice('INFO '.length)) as Record<string, unknown>;
}

describe('startNatsServer', () => {
  const servers: NatsServer[] = [];
  after(() => Promise.all(servers.map((s) => s.stop())));

  it('starts a JetStream server on a free loopback port with a temp store', async () => {
    const s = await startNatsServer();
    servers.push(s);
    assert.equal(s.url, `nats://127.0.0.1:${s.port}`);
    assert.notEqual(s.port, 4222, 'not the machine-wide server');
    const info = infoJson(await readInfo(s.port));
    assert.equal(info['jetstream'], true);
    assert.equal(info['port'], s.port);
    assert.ok(existsSync(s.storeDir));
  });

  it('restart() and kill()+restart() keep the port and the store', async () => {
    const s = await startNatsServer();
    servers.push(s);
    const firstPid = s.pid;
    await s.restart();
    assert.notEqual(s.pid, firstPid);
    assert.equal(infoJson(await readInfo(s.port))['port'], s.port);

    const beforeKill = s.pid;
    await s.kill();
    await assert.rejects(readInfo(s.port), /ECONNREFUSED/);
    assert.ok(existsSync(s.storeDir), 'store survives a crash');
    await s.restart();
    assert.notEqual(s.pid, beforeKill);
    assert.equal(infoJson(await readInfo(s.port))['jetstream'], true);
  });

  it('without JetStream, and on a requested port', async () => {
    const probe = await startNatsServer({ jetstream: false });
    const port = probe.port;
    await probe.stop();
    const s = await startNatsServer({ jetstream: false, port });
    servers.push(s);
    assert.equal(s.port, port);
    const info = infoJson(await readInfo(port));
    assert.notEqual(info['jetstream'], true);
  });

  it('stop() removes the temp dir and is idempotent', async () => {
    const s = await startNatsServer();
    await s.stop();
    await s.stop();
    assert.equal(existsSync(s.storeDir), false);
    await assert.rejects(readInfo(s.port));
  });

  it('reports a port in use with the server output', async () => {
    const s = await startNatsServer({ jetstream: false });
    servers.push(s);
    await assert.rejects(startNatsServer({ jetstream: false, port: s.port }), (e) => {
      assert.ok(isTestkitError(e, 'ProcessExited'), String(e));
      assert.match((e as Error).message, /exited during startup; its output:\n[\s\S]*address already in use/);
      return true;
    });
  });
});

describe('findNatsServer', () => {
  it('finds the binary on PATH or in sbin', () => {
    assert.match(findNatsServer({ PATH: '/nonexistent' }), /nats-server$/);
  });

  it('explains how to install it when NATS_SERVER_BIN is wrong', () => {
    assert.throws(
      () => findNatsServer({ NATS_SERVER_BIN: '/nope/nats-server' }),
      (e) =>
        isTestkitError(e, 'NatsServerNotFound') && /NATS_SERVER_BIN=\/nope\/nats-server/.test((e as Error).message) && /apt-get install nats-server/.test((e as Error).message),
    );
  });

  it('startNatsServer fails with that error, before spawning anything', async () => {
    await assert.rejects(startNatsServer({ bin: '/nope/nats-server' }), (e) => isTestkitError(e, 'ProcessExited') && /cannot start/.test((e as Error).message));
  });
});
