/**
 * Spawns a nats-server with JetStream for `splitlet up` when NATS_URL is not given.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { CliError } from '../state-dir.js';

/** A free TCP port on 127.0.0.1 (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      res(true);
    });
    s.once('error', () => res(false));
  });
}

/** A spawned nats-server. */
export interface SpawnedNats {
  url: string;
  child: ChildProcess;
  stop(graceMs: number): Promise<void>;
}

/** Starts `nats-server -js` on a free loopback port with its store in `storeDir`. */
export async function spawnNatsServer(opts: { bin: string; storeDir: string; logFile: string }): Promise<SpawnedNats> {
  const probe = spawnSync(opts.bin, ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    throw new CliError(
      `cannot run ${opts.bin} (${probe.error.message}). Install it (Debian: \`apt-get install nats-server\`), set NATS_SERVER_BIN, or give NATS_URL of a running server with JetStream.`,
    );
  }
  const port = await freePort();
  const child = spawn(opts.bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', opts.storeDir, '-l', opts.logFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null) throw new CliError(`nats-server exited at start (code ${child.exitCode}): ${stderr.trim()} (see ${opts.logFile})`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new CliError(`nats-server did not accept connections on port ${port} within 10 s (see ${opts.logFile})`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url: `nats://127.0.0.1:${port}`,
    child,
    async stop(graceMs: number) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(t);
    },
  };
}
