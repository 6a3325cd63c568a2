import { accessSync, constants as fsConstants } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { makeTempDir, type TempDir } from './temp-dir.js';
import { spawnProcess, type SpawnedProcess } from './spawn-process.js';
import { TestkitError, TestkitErrorCodes, isTestkitError } from './testkit-error.js';

/** Options of {@link startNatsServer}. */
export interface NatsServerOptions {
  /** Enable JetStream with a file store in the temp dir. @default true */
  readonly jetstream?: boolean;
  /** Client port. @default a free port chosen by the server (`-p -1`, read from its ports file) */
  readonly port?: number;
  /** The binary. @default `NATS_SERVER_BIN`, else `nats-server` on PATH or in /usr/sbin, /usr/local/sbin, /sbin */
  readonly bin?: string;
  /** Extra command-line arguments (e.g. `['-DV']`). */
  readonly args?: readonly string[];
  /** Readiness deadline per (re)start. @default 10000 */
  readonly startTimeoutMs?: number;
  /** Copy the server's log lines to stderr. @default false */
  readonly echo?: boolean;
}

/** A `nats-server` owned by a test. */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>`; stable across `restart()`. */
  readonly url: string;
  readonly port: number;
  /** The JetStream store dir (inside the temp dir; kept across `kill()`/`restart()`). */
  readonly storeDir: string;
  /** The current process id. */
  readonly pid: number;
  /** The current process's log lines. */
  logs(): readonly string[];
  /** Graceful stop (SIGTERM, SIGKILL after 10 s), then removes the temp dir. Idempotent; final. */
  stop(): Promise<void>;
  /** SIGKILL (a crash): the store is kept, `restart()` brings the server back. */
  kill(): Promise<void>;
  /** Stops the server if it runs (gracefully) and starts it again on the same port and store. */
  restart(): Promise<void>;
}

const EXTRA_BIN_DIRS = ['/usr/sbin', '/usr/local/sbin', '/sbin', '/usr/local/bin'];
const INSTALL_HINT =
  'Install it with `apt-get install nats-server` (Debian/Ubuntu), or download it from https://github.com/nats-io/nats-server/releases, or set NATS_SERVER_BIN=/path/to/nats-server.';

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    // Not there or not executable: the caller tries the next candidate.
    return false;
  }
}

/**
 * Locates the `nats-server` binary: `NATS_SERVER_BIN` when set (it must exist), else `PATH` plus
 * the sbin directories Debian installs it to.
 *
 * @param env where `NATS_SERVER_BIN` and `PATH` are read. @default process.env
 * @throws {@link TestkitError} `NatsServerNotFound` saying where it looked and how to install it.
 */
export function findNatsServer(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const explicit = env['NATS_SERVER_BIN'];
  if (explicit !== undefined && explicit !== '') {
    if (isExecutable(explicit)) return explicit;
    throw new TestkitError(TestkitErrorCodes.NatsServerNotFound, `NATS_SERVER_BIN=${explicit} is not an executable file. ${INSTALL_HINT}`);
  }
  const dirs = [...(env['PATH'] ?? '').split(delimiter).filter((d) => d !== ''), ...EXTRA_BIN_DIRS];
  for (const dir of dirs) {
    const candidate = join(dir, 'nats-server');
    if (isExecutable(candidate)) return candidate;
  }
  throw new TestkitError(TestkitErrorCodes.NatsServerNotFound, `nats-server binary not found (looked in NATS_SERVER_BIN, PATH and ${EXTRA_BIN_DIRS.join(', ')}). ${INSTALL_HINT}`);
}

/** Resolves when a TCP connection to 127.0.0.1:port succeeds, rejects when it is refused. */
function probe(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (e) => {
      socket.destroy();
      reject(e);
    });
  });
}

/**
 * The port a `-p -1` server chose: from its "Listening for client connections on" log line, else
 * from its ports file (written just after "Server is ready"), polled until `deadline`.
 */
async function discoverPort(proc: SpawnedProcess, portsDir: string, deadline: number): Promise<number> {
  for (const line of proc.lines) {
    const m = /Listening for client connections on [^\s]*:(\d+)/.exec(line);
    if (m?.[1] !== undefined) return Number(m[1]);
  }
  for (;;) {
    try {
      return await readPortsFile(portsDir, proc.pid);
    } catch (e) {
      if (Date.now() >= deadline) throw e;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function readPortsFile(dir: string, pid: number): Promise<number> {
  const file = (await readdir(dir)).find((f) => f.endsWith(`_${pid}.ports`));
  if (file === undefined) throw new Error(`no ports file for pid ${pid} in ${dir}`);
  const parsed = JSON.parse(await readFile(join(dir, file), 'utf8')) as { nats?: string[] };
  const url = parsed.nats?.[0];
  if (url === undefined) throw new Error(`ports file ${file} lists no client URL`);
  return Number(new URL(url).port);
}

/**
 * Starts a private `nats-server` for a test (the nats.js `NatsServer` launcher pattern): bound to
 * 127.0.0.1 on a free port, JetStream with its store in a fresh temp dir, waiting (up to
 * `startTimeoutMs`) until the server logs "Server is ready" and accepts TCP connections. Works with
 * nats-server 2.9.10. Always `stop()` it (in `after`); a server left running is SIGKILLed when the
 * test process exits.
 *
 * @throws {@link TestkitError} `NatsServerNotFound` (with install instructions), `ProcessExited`
 *   (e.g. port in use) or `Timeout`, the last two with the server's output.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const bin = options.bin ?? findNatsServer();
  const jetstream = options.jetstream ?? true;
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const dir: TempDir = await makeTempDir('splitlet-nats-');
  const storeDir = join(dir.path, 'jetstream');
  const portsDir = join(dir.path, 'ports');
  await mkdir(portsDir);

  async function launch(port: number | undefined): Promise<{ proc: SpawnedProcess; port: number }> {
    const args = ['-a', '127.0.0.1', '-p', String(port ?? -1), '--ports_file_dir', portsDir, ...(jetstream ? ['-js', '-sd', storeDir] : []), ...(options.args ?? [])];
    const proc = await spawnProcess({ cmd: bin, args, name: 'nats-server', ...(options.echo === undefined ? {} : { echo: options.echo }) });
    try {
      const deadline = Date.now() + startTimeoutMs;
      await proc.waitForLine(/Server is ready/, startTimeoutMs);
      const bound = port ?? (await discoverPort(proc, portsDir, deadline));
      await probe(bound);
      return { proc, port: bound };
    } catch (e) {
      await proc.kill();
      const output = proc.tail(40);
      if (isTestkitError(e, 'ProcessExited')) {
        throw new TestkitError(TestkitErrorCodes.ProcessExited, `nats-server (${bin} ${args.join(' ')}) exited during startup; its output:\n${output}`, { cause: e });
      }
      throw new TestkitError(
        TestkitErrorCodes.Timeout,
        `nats-server (${bin} ${args.join(' ')}) did not become ready within ${startTimeoutMs} ms ` +
          `(${e instanceof Error ? e.message.split('\n')[0] : String(e)}); its output:\n${output}`,
        { cause: e },
      );
    }
  }

  let current: { proc: SpawnedProcess; port: number };
  try {
    current = await launch(options.port);
  } catch (e) {
    await dir.cleanup();
    throw e;
  }
  const port = current.port;
  let stopped: Promise<void> | undefined;

  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    get pid() {
      return current.proc.pid;
    },
    logs: () => current.proc.lines,
    stop: () => {
      stopped ??= (async () => {
        await current.proc.stop('SIGTERM', 10_000);
        await dir.cleanup();
      })();
      return stopped;
    },
    kill: async () => {
      await current.proc.kill();
    },
    restart: async () => {
      if (stopped !== undefined) throw new Error('nats-server: restart() after stop(): the temp dir is gone');
      await current.proc.stop('SIGTERM', 10_000);
      current = await launch(port);
    },
  };
}
