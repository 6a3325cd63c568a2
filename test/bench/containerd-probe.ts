/**
 * Where a containerd pod's time goes in splitlet: starts the project's own containerd and
 * `splitlet up --runtime containerd` with spans on the bus, then in rounds of `--concurrency` pods
 * makes the same busybox pods directly (lib/direct-cri.ts, each step timed, then removed) and through
 * splitlet (manifest written → Running in `sl_status`). It reads every process's spans (SL_SPANS)
 * and prints the direct steps' medians; per span of the pods' creation traces (service, name,
 * occurrence) its median start after the manifest write and its median duration; the CRI calls and
 * each process's CPU per pod (less the idle node's rate, measured for 5 s first); one pod's whole
 * waterfall; with `--cpu-prof DIR` where each process's CPU went; with `--json` every span for
 * offline analysis.
 *
 * Usage: node --import tsx test/bench/containerd-probe.ts [--pods 8] [--concurrency 1] [--splitlet-root DIR]
 *        [--gap-ms 1500] [--waterfall 3] [--json out.json] [--cpu-prof DIR] [--no-spans] [--no-direct] [--dump-config]
 *        [--up-arg=--no-apiserver …] (extra arguments of `splitlet up`)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { Buckets, Keys, PodStatusRecord, Subjects, type SpanRecord } from '@splitlet/api';
import { connectBus } from '@splitlet/bus';
import { GrpcRuntimeService } from '@splitlet/cri';
import { createLogger } from '@splitlet/telemetry';
import { startNatsServer } from '@splitlet/testkit';
import { waitReady } from '../integration/harness.ts';
import { ensureLocalRuntime, missingPrerequisites, stopContainerd } from '../../libs/node-setup/src/index.ts';
import { BENCH_COMMAND, runDirectPod, type DirectPodTimes } from './lib/direct-cri.ts';
import { monotonicMicros, readProfiles, summarizeProfile } from './lib/cpu-profiles.ts';
import { cpuSeconds, loadAverage, pct } from './lib/stats.ts';

const { values } = parseArgs({
  allowNegative: true,
  options: {
    pods: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '1' },
    'gap-ms': { type: 'string', default: '1500' },
    'splitlet-root': { type: 'string' },
    'dump-config': { type: 'boolean', default: false },
    waterfall: { type: 'string', default: '3' },
    json: { type: 'string' },
    'cpu-prof': { type: 'string' },
    spans: { type: 'boolean', default: true },
    direct: { type: 'boolean', default: true },
    'up-arg': { type: 'string', multiple: true, default: [] },
  },
});
const PODS = Number(values.pods);
const CONCURRENCY = Number(values.concurrency);
/** The pause after a round's splitlet pods are Running (0: the next round starts at once, over their follow-up work). */
const GAP_MS = Number(values['gap-ms']);
const NODE = 'probe-ctr';
const root = values['splitlet-root'] ?? resolve(import.meta.dirname, '..', '..');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const ms = (ns: string): number => Number(BigInt(ns) / 1000n) / 1000;

async function criCalls(stateDir: string): Promise<Map<string, number>> {
  const info = JSON.parse(readFileSync(join(stateDir, 'instance.json'), 'utf8')) as { processes: Array<{ name: string; healthPort?: number }> };
  const port = info.processes.find((p) => p.name === 'cri-adapter')?.healthPort;
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const out = new Map<string, number>();
  for (const m of (await res.text()).matchAll(/^kubelet_runtime_operations_total\{[^}]*\boperation_type="([^"]+)"[^}]*\} (\S+)$/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** Each splitlet process's name by pid (instance.json). */
function processNames(stateDir: string): Map<number, string> {
  const info = JSON.parse(readFileSync(join(stateDir, 'instance.json'), 'utf8')) as { processes: Array<{ name: string; pid: number }> };
  return new Map(info.processes.map((p) => [p.pid, p.name]));
}

/** CPU seconds so far of each splitlet process (instance.json). */
function processCpu(stateDir: string): Map<string, number> {
  const info = JSON.parse(readFileSync(join(stateDir, 'instance.json'), 'utf8')) as { processes: Array<{ name: string; pid: number }> };
  const out = new Map<string, number>();
  for (const p of info.processes) out.set(p.name, (out.get(p.name) ?? 0) + cpuSeconds(p.pid));
  return out;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0 || missingPrerequisites().length > 0) {
    console.log(`skipped: needs root and ${missingPrerequisites().join(', ') || 'root'}`);
    return;
  }
  const load0 = loadAverage();
  const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-ctrprobe-'));
  const { runtime } = await ensureLocalRuntime(stateDir);
  const profDir = values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']);
  if (profDir !== undefined) mkdirSync(profDir, { recursive: true });
  let window: { from: number; to: number; names: Map<number, string> } | undefined;
  const nats = await startNatsServer();
  const child = spawn(
    process.execPath,
    [join(root, 'services/cli/bin/splitlet.js'), 'up', '--runtime', 'containerd', '--node-name', NODE, '--pod-workers', '2', ...values['up-arg']],
    {
      env: {
        ...process.env,
        NATS_URL: nats.url,
        SPLITLET_STATE_DIR: stateDir,
        LOG_LEVEL: 'warn',
        PUBLISH_SPANS: String(values.spans),
        ...(profDir !== undefined ? { NODE_OPTIONS: `--require ${resolve(import.meta.dirname, 'lib', 'cpu-prof-preload.cjs')}`, SPLITLET_BENCH_CPU_PROF_DIR: profDir } : {}),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const gone = new Promise((r) => child.once('exit', r));
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      child.kill('SIGTERM');
      await gone;
      await nats.stop();
      await stopContainerd(stateDir, { removeState: true });
      rmSync(stateDir, { recursive: true, force: true });
    })());
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => void cleanup().then(() => process.exit(code)));
  }
  try {
    await waitReady(stateDir, 120_000);
    const nc = await connect({ servers: nats.url });
    const kv = await new Kvm(nc).open(Buckets.status);
    const runningAt = new Map<string, number>();
    const watch = await kv.watch({ key: Keys.nodePrefix(NODE), include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const e of watch) {
        if (e.operation !== 'PUT') continue;
        const r = PodStatusRecord.safeParse(e.json());
        if (r.success && r.data.status.phase === 'Running' && !runningAt.has(r.data.name)) runningAt.set(r.data.name, Date.now());
      }
    })();
    const createdAt = new Map<string, number>();
    const totals: number[] = [];
    const calls0 = await criCalls(stateDir);
    // The node's own background work (relists, leases, heartbeats), to tell apart from the pods'.
    // Measured once start-up has settled: the first seconds after ready (JIT, the heap trimmer, the
    // first relists and balance rounds) cost several times the idle rate and made the pods' share negative.
    await sleep(15_000);
    const idle0 = processCpu(stateDir);
    const idleT0 = performance.now();
    await sleep(5000);
    const cpu0 = processCpu(stateDir);
    const idleMs = performance.now() - idleT0;
    const podsT0 = performance.now();
    const profFrom = monotonicMicros();
    const direct: DirectPodTimes[] = [];
    const cri = await GrpcRuntimeService.connect({ endpoint: runtime.socket });
    const dirs = { podRoot: join(stateDir, 'direct-pods'), logRoot: join(stateDir, 'direct-logs') };
    for (let round = 0; round * CONCURRENCY < PODS; round++) {
      const batch = Array.from({ length: Math.min(CONCURRENCY, PODS - round * CONCURRENCY) }, (_, k) => round * CONCURRENCY + k);
      // The same pods made directly, right before, under the same load (splitlet's periodic relist
      // included; hidden from it), then removed so the runtime holds only splitlet's pods meanwhile.
      if (values.direct) {
        const made = await Promise.all(batch.map((i) => runDirectPod(cri, dirs, `d${i}`, { hidden: true })));
        direct.push(...made);
        for (const d of made) {
          await cri.StopPodSandbox({ podSandboxId: d.podSandboxId });
          await cri.RemovePodSandbox({ podSandboxId: d.podSandboxId });
        }
        await sleep(Math.min(500, GAP_MS));
      }
      await Promise.all(
        batch.map(async (i) => {
          const name = `p${i}`;
          const full = `${name}-${NODE}`;
          createdAt.set(name, Date.now());
          writeFileSync(
            join(stateDir, 'manifests', `${name}.json`),
            JSON.stringify({
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name },
              spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: 'busybox:1.36', command: BENCH_COMMAND }] },
            }),
          );
          while (!runningAt.has(full)) await sleep(2);
          totals.push(runningAt.get(full)! - createdAt.get(name)!);
        }),
      );
      // Let the pods' follow-up work (pleg events, the next sync, statuses) finish before the next round.
      await sleep(GAP_MS);
    }
    const cpu1 = processCpu(stateDir);
    const podsMs = performance.now() - podsT0;
    window = { from: profFrom, to: monotonicMicros(), names: processNames(stateDir) };
    const calls1 = await criCalls(stateDir);
    if (values['dump-config']) {
      const sb = (await cri.ListPodSandbox({})).items.find((x) => x.metadata?.name.startsWith('p') === true);
      if (sb !== undefined) {
        console.log('sandbox', JSON.stringify((await cri.PodSandboxStatus({ podSandboxId: sb.id, verbose: true })).info, null, 1));
        const c = (await cri.ListContainers({ filter: { podSandboxId: sb.id } })).containers?.[0];
        if (c !== undefined) console.log('container', JSON.stringify((await cri.ContainerStatus({ containerId: c.id, verbose: true })).info, null, 1));
      }
    }
    cri.close();
    watch.stop();
    await nc.close();
    await sleep(1500);

    const bus = await connectBus({ servers: nats.url, process: 'probe', node: NODE, logger: createLogger({ service: 'probe', level: 'error' }) });
    const spans: SpanRecord[] = [];
    await bus.readSpans(Subjects.spansAll(NODE), (s) => spans.push(s));
    await bus.close();
    const byTrace = new Map<string, SpanRecord[]>();
    for (const s of spans) {
      let xs = byTrace.get(s.traceId);
      if (xs === undefined) byTrace.set(s.traceId, (xs = []));
      xs.push(s);
    }
    // The pod's creation trace: the one whose config.ADD span names it.
    const podTrace = new Map<string, SpanRecord[]>();
    for (const [, xs] of byTrace) {
      const add = xs.find((s) => s.name === 'config.add' && s.attributes['splitlet.config.source'] === 'file');
      const pod = add?.attributes['k8s.pod.name'];
      if (typeof pod === 'string') podTrace.set(pod, xs);
    }
    const shares = splitletShares(PODS, podTrace, createdAt, runningAt);
    const rows = new Map<string, { start: number[]; dur: number[]; order: number }>();
    const perPod: Array<Record<string, number>> = [];
    for (let i = 0; i < PODS; i++) {
      const name = `p${i}`;
      const full = `${name}-${NODE}`;
      const xs = podTrace.get(full);
      if (xs === undefined) continue;
      const t0 = createdAt.get(name)!;
      const seen = new Map<string, number>();
      const rec: Record<string, number> = { total: runningAt.get(full)! - t0 };
      for (const s of [...xs].sort((a, b) => ms(a.startUnixNano) - ms(b.startUnixNano))) {
        const base = `${s.service} ${s.name}`;
        const n = (seen.get(base) ?? 0) + 1;
        seen.set(base, n);
        const key = n === 1 ? base : `${base} #${n}`;
        let r = rows.get(key);
        if (r === undefined) rows.set(key, (r = { start: [], dur: [], order: 0 }));
        r.start.push(ms(s.startUnixNano) - t0);
        r.dur.push(ms(s.endUnixNano) - ms(s.startUnixNano));
        rec[`${key} start`] = ms(s.startUnixNano) - t0;
        rec[`${key} dur`] = ms(s.endUnixNano) - ms(s.startUnixNano);
      }
      perPod.push(rec);
    }
    const load1 = loadAverage();
    console.log(`containerd probe: ${PODS} pods, ${CONCURRENCY} at a time, load ${load0.join(' ')} → ${load1.join(' ')}`);
    const d = direct.map((x) => x.total);
    console.log(`direct CRI calls: p50 ${pct(d, 50).toFixed(0)} ms, p90 ${pct(d, 90).toFixed(0)} ms, each: ${d.map((t) => t.toFixed(0)).join(' ')}`);
    console.log(
      `direct steps (median ms): ${Object.keys(direct[0]?.steps ?? {})
        .map(
          (k) =>
            `${k} ${pct(
              direct.map((x) => x.steps[k] ?? 0),
              50,
            ).toFixed(1)}`,
        )
        .join(', ')}`,
    );
    console.log(
      `manifest written → Running in sl_status: p50 ${pct(totals, 50).toFixed(0)} ms, p90 ${pct(totals, 90).toFixed(0)} ms, each: ${totals.map((t) => t.toFixed(0)).join(' ')}`,
    );
    if (shares.length > 0 && direct.length > 0) console.log(describeShares(shares, direct));
    console.log(
      `CRI calls per pod: ${[...calls1]
        .map(([k, v]) => [k, (v - (calls0.get(k) ?? 0)) / PODS] as const)
        .filter(([, v]) => v > 0)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}`,
    );
    console.log(
      `splitlet idle CPU ms/s: ${[...cpu0]
        .map(([k, v]) => [k, ((v - (idle0.get(k) ?? 0)) * 1e6) / idleMs] as const)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(', ')}`,
    );
    console.log(
      `splitlet CPU ms per pod (less the idle node's rate): ${[...cpu1]
        .map(([k, v]) => {
          const idlePerMs = ((cpu0.get(k) ?? 0) - (idle0.get(k) ?? 0)) / idleMs;
          return [k, ((v - (cpu0.get(k) ?? 0) - idlePerMs * podsMs) * 1000) / PODS] as const;
        })
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(', ')}`,
    );
    console.log(`\nspans of the creation trace, ms after the manifest write (median over ${perPod.length} pods; n = pods with the span):`);
    console.log(`${'start'.padStart(8)} ${'end'.padStart(8)} ${'dur'.padStart(7)}  n  span`);
    for (const [k, r] of [...rows].sort((a, b) => pct(a[1].start, 50) - pct(b[1].start, 50))) {
      const s = pct(r.start, 50);
      const d = pct(r.dur, 50);
      console.log(`${s.toFixed(1).padStart(8)} ${(s + d).toFixed(1).padStart(8)} ${d.toFixed(1).padStart(7)} ${String(r.start.length).padStart(2)}  ${k}`);
    }
    const w = podTrace.get(`p${values.waterfall}-${NODE}`);
    if (w !== undefined) {
      const t0 = createdAt.get(`p${values.waterfall}`)!;
      console.log(`\npod p${values.waterfall}: every span, ms after its manifest write (Running reported at ${(runningAt.get(`p${values.waterfall}-${NODE}`)! - t0).toFixed(0)})`);
      for (const s of [...w].sort((a, b) => ms(a.startUnixNano) - ms(b.startUnixNano))) {
        const st = ms(s.startUnixNano) - t0;
        console.log(
          `${st.toFixed(1).padStart(8)} ${(ms(s.endUnixNano) - t0).toFixed(1).padStart(8)} ${(ms(s.endUnixNano) - ms(s.startUnixNano)).toFixed(1).padStart(7)}  ${s.service.padEnd(15)} ${s.name}`,
        );
      }
    }
    if (values.json !== undefined) writeFileSync(values.json, JSON.stringify({ totals, createdAt: [...createdAt], runningAt: [...runningAt], perPod, spans }, null, 1));
  } finally {
    await cleanup();
  }
  if (profDir !== undefined && window !== undefined) {
    const w = window;
    console.log(`\nCPU profiles over the pods, CPU ms per pod (sampled, idle work included; ${profDir}):`);
    const summaries = [...readProfiles(profDir)]
      .filter(([pid]) => w.names.has(pid))
      .map(([pid, prof]) => ({ name: w.names.get(pid)!, s: summarizeProfile(prof, pid, w.from, w.to) }))
      .sort((a, b) => b.s.busyMs - a.s.busyMs);
    for (const { name, s } of summaries) {
      console.log(`\n  ${name}: ${(s.busyMs / PODS).toFixed(2)} ms per pod`);
      console.log(
        `    files: ${s.files
          .slice(0, 8)
          .map((f) => `${f.name} ${(f.ms / PODS).toFixed(2)}`)
          .join(', ')}`,
      );
      for (const f of s.functions.slice(0, 12)) console.log(`    ${(f.ms / PODS).toFixed(3).padStart(7)}  ${f.name}`);
    }
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

/** Where one pod's time went in splitlet, in ms (see {@link splitletShares}). */
interface PodShares {
  readonly total: number;
  /** Manifest write → cri-adapter's kuberuntime.SyncPod begins. */
  readonly before: number;
  /** Inside SyncPod, waiting on the CRI (the calls' intervals merged: some overlap). */
  readonly cri: number;
  /** Inside SyncPod, cri-adapter's own work between the calls. */
  readonly own: number;
  /** SyncPod's end → Running in sl_status. */
  readonly after: number;
}

/** Each traced pod's time split at cri-adapter's kuberuntime.SyncPod span and the CRI call spans inside it. */
function splitletShares(pods: number, traces: ReadonlyMap<string, SpanRecord[]>, createdAt: ReadonlyMap<string, number>, runningAt: ReadonlyMap<string, number>): PodShares[] {
  const out: PodShares[] = [];
  for (let i = 0; i < pods; i++) {
    const xs = traces.get(`p${i}-${NODE}`);
    const t0 = createdAt.get(`p${i}`);
    const running = runningAt.get(`p${i}-${NODE}`);
    const sync = xs?.find((x) => x.service === 'cri-adapter' && x.name === 'kuberuntime.SyncPod');
    if (xs === undefined || t0 === undefined || running === undefined || sync === undefined) continue;
    const [from, to] = [ms(sync.startUnixNano), ms(sync.endUnixNano)];
    const calls = xs
      .filter((x) => x.service === 'cri-adapter' && x.name.startsWith('runtime.v1.') && ms(x.startUnixNano) >= from && ms(x.endUnixNano) <= to)
      .map((x) => [ms(x.startUnixNano), ms(x.endUnixNano)] as const)
      .sort((a, b) => a[0] - b[0]);
    let cri = 0;
    let end = -Infinity;
    for (const [a, b] of calls) {
      if (b <= end) continue;
      cri += b - Math.max(a, end);
      end = b;
    }
    out.push({ total: running - t0, before: from - t0, cri, own: to - from - cri, after: running - to });
  }
  return out;
}

/** The medians of the shares against the direct calls, and what the 1.15× target leaves splitlet. */
function describeShares(shares: readonly PodShares[], direct: readonly DirectPodTimes[]): string {
  const med = (f: (x: PodShares) => number): number => pct(shares.map(f), 50);
  const directTotal = pct(
    direct.map((x) => x.total),
    50,
  );
  // The direct path's CRI calls alone (its steps less the directories, DNS and files it writes itself).
  const directCri = pct(
    direct.map((x) => Object.entries(x.steps).reduce((a, [k, v]) => (/^[A-Z]/.test(k) ? a + v : a), 0)),
    50,
  );
  const [before, cri, own, after] = [med((x) => x.before), med((x) => x.cri), med((x) => x.own), med((x) => x.after)];
  const allowed = 0.15 * directTotal;
  return [
    `where splitlet's time goes (median per pod): ${before.toFixed(0)} ms before the CRI (manifest → cri-adapter's SyncPod: the file watch, config-source, sync-loop, pod-worker, the volume mount), ` +
      `${cri.toFixed(0)} ms in CRI calls against the direct path's ${directCri.toFixed(0)} ms (${(cri - directCri >= 0 ? '+' : '') + (cri - directCri).toFixed(0)} ms: the same calls beside the node's processes, and the status read after the start), ` +
      `${own.toFixed(0)} ms of cri-adapter's own work between them, ${after.toFixed(0)} ms after (SyncPod's end → Running in sl_status)`,
    `1.15× the direct p50 (${directTotal.toFixed(0)} ms) leaves splitlet ${allowed.toFixed(0)} ms; the hops before and after the CRI take ${(before + after).toFixed(0)} ms, ${((before + after) / allowed).toFixed(2)}× that`,
  ].join('\n');
}
