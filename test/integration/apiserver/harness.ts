/**
 * A real API server process on a real nats-server, for the conformance and kubectl tests: the
 * kubeconfig it writes, a fetch with its CA and token, and teardown that ends both.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { freePort, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';

const MAIN = new URL('../../../services/apiserver/src/main.ts', import.meta.url).pathname;

/** A running API server. */
export interface ApiServerUnderTest {
  readonly url: string;
  readonly kubeconfig: string;
  readonly token: string;
  readonly nats: NatsServer;
  readonly dir: TempDir;
  proc: SpawnedProcess;
  /** An authenticated request; JSON body in and out. */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; text: string }>;
  /** kill -9 and start again on the same port and store. */
  restart(kill?: boolean): Promise<void>;
  stop(): Promise<void>;
}

async function spawnApiServer(natsUrl: string, dir: string, port: number, logLevel: string): Promise<SpawnedProcess> {
  const proc = await spawnProcess({
    cmd: process.execPath,
    args: ['--import', 'tsx', MAIN],
    name: 'apiserver',
    env: {
      NATS_URL: natsUrl,
      NODE_NAME: 'node-a',
      API_PORT: String(port),
      API_CERT_DIR: join(dir, 'pki'),
      API_KUBECONFIG: join(dir, 'kubeconfig'),
      HEALTH_PORT: '0',
      LOG_LEVEL: logLevel,
      PUBLISH_SPANS: 'false',
      OTEL_SDK_DISABLED: 'true',
    },
  });
  await proc.waitForLine('apiserver listening', 60_000);
  return proc;
}

/** Starts nats-server and the API server (logging at `logLevel`, default info). */
export async function startApiServer(logLevel = 'info'): Promise<ApiServerUnderTest> {
  const nats = await startNatsServer();
  const dir = await makeTempDir('apiserver-');
  const port = await freePort();
  let proc: SpawnedProcess;
  try {
    proc = await spawnApiServer(nats.url, dir.path, port, logLevel);
  } catch (e) {
    await nats.stop();
    await dir.cleanup();
    throw e;
  }
  const ca = await readFile(join(dir.path, 'pki', 'ca.crt'), 'utf8');
  const token = (await readFile(join(dir.path, 'pki', 'token'), 'utf8')).trim();
  const url = `https://127.0.0.1:${port}`;
  const t: ApiServerUnderTest = {
    url,
    kubeconfig: join(dir.path, 'kubeconfig'),
    token,
    nats,
    dir,
    proc,
    request(method, path, body, headers = {}) {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = httpsRequest(
          url + path,
          {
            method,
            ca,
            headers: {
              authorization: `Bearer ${token}`,
              ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
              ...headers,
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown;
              try {
                parsed = JSON.parse(text);
              } catch {
                parsed = undefined;
              }
              resolve({ status: res.statusCode ?? 0, body: parsed, text });
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        if (payload !== undefined) req.write(payload);
        req.end();
      });
    },
    async restart(kill = true) {
      if (kill) await t.proc.kill();
      else await t.proc.stop();
      t.proc = await spawnApiServer(nats.url, dir.path, port, logLevel);
    },
    async stop() {
      await t.proc.stop().catch(() => undefined);
      await nats.stop();
      await dir.cleanup();
    },
  };
  return t;
}

const REPO_ROOT = new URL('../../../', import.meta.url).pathname;
const STATUS_MANAGER_MAIN = join(REPO_ROOT, 'services/status-manager/src/main.ts');

/** Where {@link startStatusManager}'s process writes its health port (`/healthz`, `/metrics`). */
export const statusManagerPortFile = (api: ApiServerUnderTest): string => join(api.dir.path, 'status-manager.port');

/**
 * The real status-manager process in cluster mode, reporting node `node` to `api` (debug logging, no
 * spans), once it has started; `env` adds to or overrides its settings.
 */
export async function startStatusManager(api: ApiServerUnderTest, node: string, env: Readonly<Record<string, string>> = {}): Promise<SpawnedProcess> {
  const proc = await spawnProcess({
    cmd: process.execPath,
    args: ['--import', 'tsx', STATUS_MANAGER_MAIN],
    cwd: REPO_ROOT,
    name: 'status-manager',
    env: {
      NATS_URL: api.nats.url,
      NODE_NAME: node,
      KUBECONFIG: api.kubeconfig,
      HEALTH_PORT: '0',
      HEALTH_PORT_FILE: statusManagerPortFile(api),
      LOG_LEVEL: 'debug',
      PUBLISH_SPANS: 'false',
      OTEL_SDK_DISABLED: 'true',
      ...env,
    },
  });
  await proc.waitForLine('status-manager started', 60_000);
  return proc;
}
