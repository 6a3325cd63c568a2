/**
 * Real-runtime overhead (DESIGN.md §7, issue 3): busybox pods on the project's own containerd,
 * splitlet end to end (manifest written → first Running status in `sl_status`) next to the same pod
 * made directly (the runtime floor: what a kubelet does on its way to a Running status — the pod's
 * directories and managed files, RunPodSandbox, PodSandboxStatus, ImageStatus, CreateContainer,
 * StartContainer, ContainerStatus — with the sandbox and container configs cri-adapter generates for
 * that manifest; lib/direct-cri.ts), sequential and at concurrency 5, with the ratio.
 *
 * Fairness on a shared machine: both sides run on the same containerd with the splitlet node up
 * (idle but for its 1 s relist while the direct pods run; the direct pods carry no pod-UID label, so
 * it neither sees nor kills them), one warm-up pod each first, and the rows interleave — a batch of
 * direct pods, a pause, the same number of splitlet pods, a pause — so a change in the machine's load
 * hits both sides alike. The pause (`--settle-ms`) lets each batch's follow-up work end before the
 * other side's batch starts. Needs root and containerd/runc/CNI/busybox-static.
 *
 * Usage: npm run bench:containerd [-- --pods 10 --concurrency 5 --settle-ms 1500 --splitlet-root DIR --out FILE]
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { GrpcRuntimeService } from '@splitlet/cri';
import { Buckets, Keys, PodStatusRecord } from '@splitlet/api';
import { startNatsServer } from '@splitlet/testkit';
import { waitReady } from '../integration/harness.ts';
import { ensureLocalRuntime, missingPrerequisites, stopContainerd } from '../../libs/node-setup/src/index.ts';
import { BENCH_COMMAND, runDirectPod } from './lib/direct-cri.ts';
import { gitCommit, loadAverage, pct } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '5' },
    'settle-ms': { type: 'string', default: '1500' },
    'splitlet-root': { type: 'string' },
    out: { type: 'string' },
  },
});
const PODS = Number(values.pods);
const CONCURRENCY = Number(values.concurrency);
const SETTLE_MS = Number(values['settle-ms']);
for (const [k, v] of [
  ['pods', PODS],
  ['concurrency', CONCURRENCY],
  ['settle-ms', SETTLE_MS],
] as const) {
  if (!Number.isInteger(v) || v < (k === 'settle-ms' ? 0 : 1)) throw new Error(`--${k} must be a whole number${k === 'settle-ms' ? ' ≥ 0' : ' ≥ 1'}`);
}
const NODE = 'bench-ctr';
const ownRoot = resolve(import.meta.dirname, '..', '..');
const root = values['splitlet-root'] === undefined ? ownRoot : resolve(values['splitlet-root']);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `task(i)` for each i of the batch at once; returns each one's duration in ms. */
async function timedBatch(batch: readonly number[], task: (i: number) => Promise<void>): Promise<number[]> {
  return Promise.all(
    batch.map(async (i) => {
      const t0 = performance.now();
      await task(i);
      return performance.now() - t0;
    }),
  );
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0 || missingPrerequisites().length > 0) {
    console.log(`skipped: needs root and ${missingPrerequisites().join(', ') || 'root'}`);
    return;
  }
  const load0 = loadAverage();
  const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-ctrbench-'));
  const rows: string[] = [];
  try {
    const { runtime } = await ensureLocalRuntime(stateDir);
    const cri = await GrpcRuntimeService.connect({ endpoint: runtime.socket });
    const nats = await startNatsServer();
    const child = spawn(process.execPath, [join(root, 'services/cli/bin/splitlet.js'), 'up', '--runtime', 'containerd', '--node-name', NODE, '--pod-workers', '2'], {
      env: { ...process.env, NATS_URL: nats.url, SPLITLET_STATE_DIR: stateDir, LOG_LEVEL: 'warn', PUBLISH_SPANS: 'false' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    let exited: string | undefined;
    child.once('exit', (code, sig) => (exited = `splitlet up exited (${code ?? sig})`));
    const manifests: string[] = [];
    try {
      await waitReady(stateDir, 120_000, () => exited);
      const nc = await connect({ servers: nats.url });
      const kv = await new Kvm(nc).open(Buckets.status);
      const running = new Map<string, () => void>();
      const watch = await kv.watch({ key: Keys.nodePrefix(NODE), include: KvWatchInclude.UpdatesOnly });
      void (async () => {
        for await (const e of watch) {
          if (e.operation !== 'PUT') continue;
          const r = PodStatusRecord.safeParse(e.json());
          if (r.success && r.data.status.phase === 'Running') running.get(r.data.name)?.();
        }
      })();
      const dirs = { podRoot: join(stateDir, 'direct-pods'), logRoot: join(stateDir, 'direct-logs') };
      const direct = async (name: string): Promise<void> => {
        await runDirectPod(cri, dirs, name, { hidden: true });
      };
      const viaSplitlet = async (name: string): Promise<void> => {
        const done = new Promise<void>((r) => running.set(`${name}-${NODE}`, r));
        const file = join(stateDir, 'manifests', `${name}.json`);
        manifests.push(file);
        writeFileSync(
          file,
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name },
            spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: 'busybox:1.36', command: BENCH_COMMAND }] },
          }),
        );
        await done;
      };
      // Warm-up: the first pod of each side pays one-time costs (connections, lazy code generation).
      await direct('dwarm');
      await sleep(SETTLE_MS);
      await viaSplitlet('swarm');
      await sleep(SETTLE_MS);
      const row = (label: string, d: number[], s: number[]): string =>
        `${label.padEnd(16)} direct CRI p50 ${pct(d, 50).toFixed(0).padStart(5)} ms p90 ${pct(d, 90).toFixed(0).padStart(5)} ms | splitlet p50 ${pct(s, 50).toFixed(0).padStart(5)} ms p90 ${pct(s, 90).toFixed(0).padStart(5)} ms | ratio p50 ${(pct(s, 50) / pct(d, 50)).toFixed(2)}× p90 ${(pct(s, 90) / pct(d, 90)).toFixed(2)}×`;
      const measured: string[] = [];
      for (const [label, tag, limit] of [
        ['sequential', 's', 1],
        [`concurrency ${CONCURRENCY}`, 'c', CONCURRENCY],
      ] as const) {
        const d: number[] = [];
        const s: number[] = [];
        for (let first = 0; first < PODS; first += limit) {
          const batch = Array.from({ length: Math.min(limit, PODS - first) }, (_, k) => first + k);
          d.push(...(await timedBatch(batch, (i) => direct(`d${tag}${i}`))));
          await sleep(SETTLE_MS);
          s.push(...(await timedBatch(batch, (i) => viaSplitlet(`s${tag}${i}`))));
          await sleep(SETTLE_MS);
        }
        measured.push(row(label, d, s));
      }
      watch.stop();
      await nc.close();
      rows.push(`containerd ${runtime.version.runtimeVersion}, busybox pods, ${PODS} per row (target ratio ≤ 1.15× p50, ≤ 1.25× p90)`);
      rows.push(...measured);
      rows.push(`splitlet ${gitCommit(root)} (${root}), load average ${load0.join(' ')} → ${loadAverage().join(' ')}`);
      for (const f of manifests) rmSync(f, { force: true });
      await sleep(8000);
    } finally {
      child.kill('SIGTERM');
      if (exited === undefined) await new Promise((r) => child.once('exit', r));
      cri.close();
      await nats.stop();
    }
  } finally {
    await stopContainerd(stateDir, { removeState: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
  for (const r of rows) console.log(r);
  if (values.out !== undefined) appendFileSync(values.out, `${rows.join('\n')}\n`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
