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
 * other side's batch starts, so a pod's latency is measured on a node that has finished the
 * previous pod's work. `--back-to-back` measures instead as the first version of this benchmark
 * did: the direct rows, then the splitlet rows, each pod started as soon as one of its row was
 * Running — a splitlet pod then also competes with the previous pods' follow-up work (pleg's relist
 * and events, the next syncs, the mirror pod, statuses and events reported to the API server). Needs
 * root and containerd/runc/CNI/busybox-static.
 *
 * Usage: npm run bench:containerd [-- --pods 10 --concurrency 5 --settle-ms 1500 --back-to-back --splitlet-root DIR --out FILE]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
    'back-to-back': { type: 'boolean', default: false },
    'splitlet-root': { type: 'string' },
    out: { type: 'string' },
  },
});
const PODS = Number(values.pods);
const CONCURRENCY = Number(values.concurrency);
const SETTLE_MS = Number(values['settle-ms']);
const BACK_TO_BACK = values['back-to-back'];
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
/** How long a splitlet pod may take to be reported Running before the benchmark gives up. */
const POD_TIMEOUT_MS = 120_000;

/** Runs `task(i)` for i < n with at most `limit` in flight (the next starts when one ends); returns each one's duration in ms. */
async function timedPool(n: number, limit: number, task: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      const t0 = performance.now();
      await task(i);
      out.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return out;
}

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

/** What main started, stopped in reverse order at the end — or on SIGINT/SIGTERM, so nothing is left behind. */
const closers: Array<() => Promise<void>> = [];
async function closeAll(): Promise<void> {
  for (let c = closers.pop(); c !== undefined; c = closers.pop()) await c().catch((e: unknown) => console.error(e));
}
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping splitlet, nats-server and containerd`);
    void closeAll().then(() => process.exit(code));
  });
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0 || missingPrerequisites().length > 0) {
    console.log(`skipped: needs root and ${missingPrerequisites().join(', ') || 'root'}`);
    return;
  }
  const load0 = loadAverage();
  const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-ctrbench-'));
  closers.push(async () => {
    await stopContainerd(stateDir, { removeState: true });
    rmSync(stateDir, { recursive: true, force: true });
  });
  const rows: string[] = [];
  const { runtime } = await ensureLocalRuntime(stateDir);
  const cri = await GrpcRuntimeService.connect({ endpoint: runtime.socket });
  closers.push(async () => cri.close());
  const nats = await startNatsServer();
  closers.push(() => nats.stop());
  const child = spawn(process.execPath, [join(root, 'services/cli/bin/splitlet.js'), 'up', '--runtime', 'containerd', '--node-name', NODE, '--pod-workers', '2'], {
    env: { ...process.env, NATS_URL: nats.url, SPLITLET_STATE_DIR: stateDir, LOG_LEVEL: 'warn', PUBLISH_SPANS: 'false' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited: string | undefined;
  const gone = new Promise<void>((r) =>
    child.once('exit', (code, sig) => {
      exited = `splitlet up exited (${code ?? sig})`;
      r();
    }),
  );
  closers.push(async () => {
    if (exited === undefined) child.kill('SIGTERM');
    await gone;
  });
  await waitReady(stateDir, 120_000, () => exited);
  const nc = await connect({ servers: nats.url });
  closers.push(() => nc.close());
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
  const directSandboxes: string[] = [];
  const direct = async (name: string): Promise<void> => {
    directSandboxes.push((await runDirectPod(cri, dirs, name, { hidden: true })).podSandboxId);
  };
  const manifests: string[] = [];
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
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`pod ${name} not Running after ${POD_TIMEOUT_MS} ms${exited !== undefined ? `: ${exited}` : ''}`)), POD_TIMEOUT_MS);
    });
    try {
      await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
  };
  try {
    // Warm-up: the first pod of each side pays one-time costs (connections, lazy code generation).
    await direct('dwarm');
    await sleep(SETTLE_MS);
    await viaSplitlet('swarm');
    await sleep(SETTLE_MS);
    const row = (label: string, d: number[], s: number[]): string =>
      `${label.padEnd(16)} direct CRI p50 ${pct(d, 50).toFixed(0).padStart(5)} ms p90 ${pct(d, 90).toFixed(0).padStart(5)} ms | splitlet p50 ${pct(s, 50).toFixed(0).padStart(5)} ms p90 ${pct(s, 90).toFixed(0).padStart(5)} ms | ratio p50 ${(pct(s, 50) / pct(d, 50)).toFixed(2)}× p90 ${(pct(s, 90) / pct(d, 90)).toFixed(2)}×`;
    const measured: string[] = [];
    const rowsOf = [
      ['sequential', 's', 1],
      [`concurrency ${CONCURRENCY}`, 'c', CONCURRENCY],
    ] as const;
    if (BACK_TO_BACK) {
      // Each side's rows in turn, every pod started as soon as one of its row finished.
      const d: number[][] = [];
      for (const [, tag, limit] of rowsOf) d.push(await timedPool(PODS, limit, (i) => direct(`d${tag}${i}`)));
      await sleep(SETTLE_MS);
      for (const [k, [label, tag, limit]] of rowsOf.entries()) measured.push(row(label, d[k] ?? [], await timedPool(PODS, limit, (i) => viaSplitlet(`s${tag}${i}`))));
    } else {
      for (const [label, tag, limit] of rowsOf) {
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
    }
    rows.push(
      `containerd ${runtime.version.runtimeVersion}, busybox pods, ${PODS} per row, ${BACK_TO_BACK ? 'back to back (direct rows, then splitlet rows)' : `interleaved batches, ${SETTLE_MS} ms apart`} (target ratio ≤ 1.15× p50, ≤ 1.25× p90)`,
    );
    rows.push(...measured);
    rows.push(`splitlet ${gitCommit(root)} (${root}), load average ${load0.join(' ')} → ${loadAverage().join(' ')}`);
  } finally {
    watch.stop();
    // Clean up before containerd stops (a drain of many pods at once times out on a loaded
    // machine): splitlet deletes its pods once their manifests are gone; the direct ones go here.
    for (const f of manifests) rmSync(f, { force: true });
    for (let i = 0; i < directSandboxes.length; i += 4) {
      await Promise.all(
        directSandboxes.slice(i, i + 4).map(async (id) => {
          await cri.StopPodSandbox({ podSandboxId: id });
          await cri.RemovePodSandbox({ podSandboxId: id });
        }),
      );
    }
    const deadline = Date.now() + 120_000;
    while (exited === undefined && Date.now() < deadline && (await cri.ListPodSandbox({})).items.some((sb) => sb.state === 'SANDBOX_READY')) await sleep(500);
  }
  for (const r of rows) console.log(r);
  // The file holds this run's rows only (the report shows one run, not a history).
  if (values.out !== undefined) writeFileSync(values.out, `${rows.join('\n')}\n`);
}

main()
  .then(closeAll)
  .catch(async (e: unknown) => {
    console.error(e);
    await closeAll();
    process.exit(1);
  });
