/**
 * The sim-runtime process: starts on SIM_SOCKET, answers CRI, logs JSON lines, and on SIGTERM
 * closes, removes its socket and exits 0. Also the config rules.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { GrpcRuntimeService, isCriError } from '@splitlet/cri';
import { loadConfig as loadEnv, type Env } from '@splitlet/service';
import { SimRuntimeEnv } from '../src/config.js';

const loadConfig = (env: Env) => loadEnv(SimRuntimeEnv, env);

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const mainTs = fileURLToPath(new URL('../src/main.ts', import.meta.url));

interface Running {
  child: ChildProcess;
  stderr: () => string;
  lines: () => Record<string, unknown>[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(env: Record<string, string>): Running {
  const child = spawn(process.execPath, ['--import', 'tsx', mainTs], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    stderr: () => err,
    exited,
    lines: () =>
      out
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('sim-runtime process', { concurrency: true }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sim-runtime-'));
  const running: Running[] = [];
  after(() => {
    for (const r of running) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves CRI on SIM_SOCKET, logs JSON lines, and exits 0 on SIGTERM with the socket removed', async () => {
    const socket = path.join(dir, 'nested', 'sim.sock');
    const logs = path.join(dir, 'logs');
    mkdirSync(path.join(logs, 'c'), { recursive: true });
    const r = start({ SIM_SOCKET: socket, SIM_LATENCY_MS: '{"Version":1}', SIM_FAILURES: '{"ListImages":{"code":"UNAVAILABLE","times":1}}', LOG_LEVEL: 'debug' });
    running.push(r);
    // connect() waits for the channel to be ready, i.e. until the process listens (bounded).
    const client = await GrpcRuntimeService.connect({ endpoint: `unix://${socket}`, connectTimeoutMs: 20_000 });
    try {
      const v = await client.Version({ version: '0.1.0' });
      assert.equal(v.runtimeName, 'splitlet-sim');
      assert.equal(v.runtimeApiVersion, 'v1');
      await assert.rejects(client.ListImages({}), (e) => isCriError(e, 'Unavailable'));
      const { podSandboxId } = await client.RunPodSandbox({ config: { metadata: { name: 'p', namespace: 'default', uid: 'u' }, logDirectory: logs } });
      const { containerId } = await client.CreateContainer({
        podSandboxId,
        config: { metadata: { name: 'c' }, image: { image: 'busybox' }, command: ['sh', '-c', "trap 'exit 0' TERM; sleep 600 & wait"], logPath: 'c/0.log' },
      });
      await client.StartContainer({ containerId });
    } finally {
      client.close();
    }
    assert.ok(existsSync(socket));

    r.child.kill('SIGTERM'); // a running simulated container must not hold the shutdown
    const { code, signal } = await r.exited;
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.equal(existsSync(socket), false);

    const lines = r.lines();
    for (const l of lines) {
      assert.equal(l['service'], 'sim-runtime');
      assert.equal(typeof l['time'], 'string');
      assert.ok(['debug', 'info', 'warn', 'error'].includes(l['level'] as string));
      assert.equal(typeof l['msg'], 'string');
    }
    const msgs = lines.map((l) => l['msg']);
    assert.ok(msgs.includes('serving CRI'));
    assert.ok(lines.some((l) => l['msg'] === 'rpc' && l['method'] === 'Version'));
    assert.ok(lines.some((l) => l['msg'] === 'rpc failed' && l['method'] === 'ListImages'));
    assert.deepEqual(msgs.slice(-2), ['shutting down', 'stopped']);
  });

  it('exits 2 with one stderr line naming the variable when SIM_SOCKET is missing', async () => {
    const r = start({});
    running.push(r);
    const { code } = await r.exited;
    assert.equal(code, 2);
    assert.equal(r.stderr(), 'sim-runtime: invalid configuration: SIM_SOCKET: is required but not set\n');
    assert.deepEqual(r.lines(), [], 'nothing started, nothing logged');
  });
});

describe('loadConfig', () => {
  it('reads the socket, latency (number or per RPC), failures, subnet and log level', () => {
    const { imageConfig, ...defaults } = loadConfig({ SIM_SOCKET: 'unix:///run/sim.sock' });
    assert.deepEqual(defaults, {
      HEALTH_PORT: 0,
      HEALTH_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      socketPath: '/run/sim.sock',
      latencyMs: {},
      failures: {},
      podSubnet: '127.77.0.0/16',
      pullBytesPerSecond: 100_000_000,
      images: ['docker.io/library/busybox:1.36', 'docker.io/library/busybox:1.37', 'docker.io/library/busybox:latest', 'registry.k8s.io/pause:3.9'],
      registry: 'open',
      privateRegistries: [],
    });
    assert.deepEqual(imageConfig('docker.io/library/busybox:1.36')?.cmd, ['sh'], 'busybox runs sh, as the image splitlet builds');
    assert.deepEqual(imageConfig('registry.k8s.io/pause:3.9')?.entrypoint, ['/bin/sleep']);
    assert.deepEqual(imageConfig('docker.io/library/nginx:1.25')?.cmd, ['nginx', '-g', 'daemon off;'], 'nginx runs what its image runs');
    assert.equal(imageConfig('example.com/app:1')?.unknownExecutable, 'placeholder', 'an unknown image runs a long-running default');
    const closed = loadConfig({ SIM_SOCKET: '/s', SIM_IMAGES: 'all', SIM_REGISTRY: 'unreachable', SIM_PULL_MB_PER_S: '20' });
    assert.deepEqual([closed.images, closed.registry, closed.pullBytesPerSecond], ['all', 'unreachable', 20_000_000]);
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_PULL_MB_PER_S: '0' }), /SIM_PULL_MB_PER_S: must be a positive number/);
    const priv = loadConfig({ SIM_SOCKET: '/s', SIM_PRIVATE_REGISTRIES: '[{"host":"127.0.0.1:5000","pathPrefix":"private/","username":"u","password":"p"}]' });
    assert.deepEqual(priv.privateRegistries, [{ host: '127.0.0.1:5000', pathPrefix: 'private/', username: 'u', password: 'p' }]);
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_PRIVATE_REGISTRIES: '{"host":' }), /SIM_PRIVATE_REGISTRIES: must be a JSON array/);
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_PRIVATE_REGISTRIES: '[{"host":"h"}]' }), /SIM_PRIVATE_REGISTRIES/);
    assert.deepEqual(loadConfig({ SIM_SOCKET: '/s', SIM_IMAGES: 'busybox:1.36, nginx:1.25' }).images, ['busybox:1.36', 'nginx:1.25']);
    const c = loadConfig({
      SIM_SOCKET: '/run/sim.sock',
      SIM_LATENCY_MS: '{"default":2,"PullImage":500}',
      SIM_FAILURES: '{"CreateContainer":{"code":"UNAVAILABLE","message":"busy","times":1,"rate":0.5}}',
      SIM_POD_SUBNET: '10.244.1.0/24',
      LOG_LEVEL: 'debug',
    });
    assert.deepEqual(c.latencyMs, { default: 2, PullImage: 500 });
    assert.deepEqual(c.failures, { CreateContainer: { code: 'UNAVAILABLE', message: 'busy', times: 1, rate: 0.5 } });
    assert.equal(c.podSubnet, '10.244.1.0/24');
    assert.deepEqual(loadConfig({ SIM_SOCKET: '/s', SIM_LATENCY_MS: '7' }).latencyMs, { default: 7 });
  });

  it('rejects bad values with every problem named', () => {
    assert.throws(() => loadConfig({ SIM_SOCKET: 'relative.sock' }), /SIM_SOCKET: must be an absolute path/);
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_LATENCY_MS: '{"Bogus":1}' }), /SIM_LATENCY_MS: Unrecognized key: "Bogus"/);
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_LATENCY_MS: 'fast' }), /SIM_LATENCY_MS: must be milliseconds/);
    assert.throws(
      () => loadConfig({ SIM_SOCKET: '/s', SIM_FAILURES: '{"CreateContainer":{"code":"NOPE"}}', SIM_POD_SUBNET: '10.0.0.0/99', LOG_LEVEL: 'loud' }),
      (e: unknown) => {
        const m = (e as Error).message;
        assert.match(m, /SIM_FAILURES\.CreateContainer\.code: unknown/);
        assert.match(m, /SIM_POD_SUBNET/);
        assert.match(m, /LOG_LEVEL/);
        return true;
      },
    );
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_FAILURES: 'not json' }), /SIM_FAILURES: not valid JSON/);
    assert.throws(() => loadConfig({ SIM_SOCKET: '/s', SIM_REGISTRY: 'sometimes' }), /SIM_REGISTRY/);
  });
});
