/**
 * The one config-error path, on the real processes (each service's built `dist/main.js`): a bad
 * variable ends the process before anything starts, with exit code 2 and exactly one stderr line
 * that names the variable and why (never its value), and nothing on stdout.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

interface Case {
  readonly service: string;
  readonly env: Record<string, string>;
  readonly stderr: string;
}

/** Valid except NODE_NAME, which holds a value that must not be echoed. */
const badNode = { NATS_URL: 'nats://127.0.0.1:1', NODE_NAME: 'Secret_Node', OTEL_SDK_DISABLED: 'true' };
const nodeNameLine = (service: string) => `${service}: invalid configuration: NODE_NAME: must be a lowercase DNS-1123 subdomain\n`;

const CASES: readonly Case[] = [
  { service: 'config-source', env: { ...badNode, MANIFEST_DIR: '/tmp/manifests' }, stderr: nodeNameLine('config-source') },
  { service: 'cri-adapter', env: { ...badNode, CRI_ENDPOINT: 'unix:///run/containerd/containerd.sock' }, stderr: nodeNameLine('cri-adapter') },
  { service: 'pleg', env: badNode, stderr: nodeNameLine('pleg') },
  { service: 'prober', env: { ...badNode, CRI_ENDPOINT: 'unix:///run/containerd/containerd.sock' }, stderr: nodeNameLine('prober') },
  {
    service: 'prober',
    env: { NATS_URL: 'nats://127.0.0.1:1', NODE_NAME: 'node-a', OTEL_SDK_DISABLED: 'true' },
    stderr: 'prober: invalid configuration: CRI_ENDPOINT: is required but not set\n',
  },
  { service: 'pod-worker', env: badNode, stderr: nodeNameLine('pod-worker') },
  { service: 'status-manager', env: badNode, stderr: nodeNameLine('status-manager') },
  { service: 'sync-loop', env: badNode, stderr: nodeNameLine('sync-loop') },
  { service: 'volume-manager', env: { ...badNode, ROOT_DIR: '/tmp/kubelet' }, stderr: nodeNameLine('volume-manager') },
  {
    service: 'sim-runtime',
    env: { SIM_SOCKET: 'Secret_relative.sock' },
    stderr: 'sim-runtime: invalid configuration: SIM_SOCKET: must be an absolute path (optionally prefixed with unix://)\n',
  },
  {
    // Names the entry it refuses (stream names and durations are no secret).
    service: 'status-manager',
    env: { NATS_URL: 'nats://127.0.0.1:1', NODE_NAME: 'node-a', OTEL_SDK_DISABLED: 'true', STREAM_MAX_AGE: 'SL_SPANS=10m,SL_BOGUS=1h' },
    stderr: 'status-manager: invalid configuration: STREAM_MAX_AGE: unknown stream "SL_BOGUS" (the streams: SL_CONFIG, SL_WORK, SL_PLEG, SL_STATUS, SL_EVENTS, SL_DLQ, SL_SPANS)\n',
  },
  {
    service: 'pleg',
    env: { NATS_URL: 'nats://127.0.0.1:1', NODE_NAME: 'node-a', OTEL_TRACES_SAMPLER: 'Secret_sampler' },
    stderr:
      "pleg: invalid OpenTelemetry configuration: OTEL_TRACES_SAMPLER: 'Secret_sampler' is not supported (use one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)\n",
  },
];

function run(main: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [main], { cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('a bad environment ends every process with exit 2 and one stderr line', { concurrency: 3 }, () => {
  for (const c of CASES) {
    const main = fileURLToPath(new URL(`../../services/${c.service}/dist/main.js`, import.meta.url));
    it(`${c.service}: ${c.stderr.trim().split(': ').slice(-2).join(': ')}`, { timeout: 60_000 }, async () => {
      assert.ok(existsSync(main), `${main} is missing: run npm run build first`);
      const r = await run(main, c.env);
      assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
      assert.equal(r.stderr, c.stderr);
      assert.equal(r.stdout, '', 'nothing started, nothing logged');
      // The telemetry case names its value (the OTel spec's own message); env values are never echoed.
      if (!c.stderr.includes('OpenTelemetry')) assert.doesNotMatch(r.stderr, /Secret/);
    });
  }
});
