/**
 * The nats-server of `splitlet up` (when NATS_URL is not given), as a supervised process.
 */
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from '@splitlet/service';
import { fileURLToPath } from 'node:url';
import { CliError } from '../state-dir.js';
import type { ProcessSpec } from './supervisor.js';
import type { Identity, NatsCredential } from '@splitlet/bus';
import { writeNatsAuthConfig } from './nats-config.js';

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

/** Whether something accepts TCP connections at a `nats://host:port` URL within `timeoutMs`. */
export function natsReachable(url: string, timeoutMs: number): Promise<boolean> {
  let host = '127.0.0.1';
  let port = 4222;
  try {
    const u = new URL(url.split(',')[0]!.trim());
    host = u.hostname || host;
    port = Number(u.port || '4222');
  } catch {
    return Promise.resolve(false);
  }
  return new Promise((res) => {
    const s = connect({ host, port });
    const t = setTimeout(() => (s.destroy(), res(false)), timeoutMs);
    s.once('connect', () => (clearTimeout(t), s.destroy(), res(true)));
    s.once('error', () => (clearTimeout(t), res(false)));
  });
}

/** The guard process's main module (see nats-guard.ts). */
const GUARD_MAIN = fileURLToPath(new URL('./nats-guard.js', import.meta.url));

/**
 * The nats-server of `splitlet up` as a supervised process: `nats-guard.js` runs
 * `nats-server -c <state>/nats.conf` (nats-config.ts: a fixed loopback port, JetStream with its
 * store in `storeDir`, one user per identity), so a restart (the supervisor restarts it when it
 * dies) serves the same streams and buckets at the same URL to the same users.
 */
export async function natsServerSpec(opts: {
  bin: string;
  storeDir: string;
  logFile: string;
  stateRoot: string;
  node: string;
  /** The node's pod-worker partitions (`--partitions`). @default DEFAULT_PARTITIONS */
  partitions?: number | undefined;
}): Promise<{ spec: ProcessSpec; url: string; port: number; credentials: Map<Identity, NatsCredential> }> {
  const probe = spawnSync(opts.bin, ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    throw new CliError(
      `cannot run ${opts.bin} (${probe.error.message}). Install it (Debian: \`apt-get install nats-server\`), set NATS_SERVER_BIN, or give NATS_URL of a running server with JetStream.`,
    );
  }
  const port = await freePort();
  const { configFile, credentials } = writeNatsAuthConfig({
    stateRoot: opts.stateRoot,
    host: '127.0.0.1',
    port,
    storeDir: opts.storeDir,
    node: opts.node,
    partitions: opts.partitions,
  });
  const args = ['-c', configFile, '-l', opts.logFile];
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    credentials,
    spec: { name: 'nats', main: GUARD_MAIN, env: { NATS_SERVER_BIN: opts.bin, NATS_SERVER_ARGS: JSON.stringify(args) } },
  };
}

/** Waits until the spawned nats-server accepts connections; an error naming its log after `timeoutMs`. */
export async function waitForNats(port: number, logFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await canConnect(port))) {
    if (Date.now() > deadline) throw new CliError(`nats-server did not accept connections on port ${port} within ${timeoutMs / 1000} s (see ${logFile})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
