/**
 * splitlet's benchmark on the simulated runtime (issue 13's table), in one run, each row beside
 * the reference measured in the same run:
 *
 *   bound      JetStream persisted publishes/s of the very nats-server the node uses
 *   steady     created → Running reported p50/p99 at a steady arrival rate (and the curve over --sweep's lower rates)
 *   burst      N pods to Running, pods/s and % of the bus bound (writes/s ÷ writes per pod)
 *   memory     RSS per process, idle and holding the burst's N pods
 *   cpu        CPU of the whole node holding N Running pods, no churn, their periodic syncs included (share of one core)
 *   delete     N pods deleted → gone, pods/s
 *   scale-out  simulator with 50 ms per CRI call, pod-workers 1 → 2 → 4 (pods/s, ratio to 1)
 *
 * The containerd row (vs direct CRI calls) is `npm run bench:containerd`.
 * Exits non-zero only on errors (a missed target is printed, not failed). The JSON goes to --out;
 * `npm run bench:report` turns it into docs/benchmarks.md.
 *
 * Usage: npm run bench [-- --quick] [--row burst,delete] [--out file.json] [--pods 1000] [--rate 50] [--sweep 10,20,35] [--splitlet-root DIR] [--up-arg=--no-apiserver …]
 *        [--seconds 20] [--scale-pods 200] [--scale-latency 50] [--scale-syncs 8] [--cpu-seconds 30] [--spans]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { COMMON_LIBRARIES, GRPC_LIBRARIES, GRPC_PROCESSES, memoryFloor } from './lib/memory-floor.ts';
import { NodeUnderTest } from './lib/node-under-test.ts';
import { loopbackRoundTrip } from './lib/round-trip.ts';
import { cpuMeter, fmt, gitCommit, loadAverage, machine, pct, rssSplit, type CpuReading, type RssSplit } from './lib/stats.ts';
import type { BenchResult, BenchRow } from './lib/result.ts';

const ROWS = ['bound', 'steady', 'burst', 'memory', 'cpu', 'delete', 'scale-out'] as const;
type RowId = (typeof ROWS)[number];
const root = resolve(import.meta.dirname, '..', '..');

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    row: { type: 'string' },
    out: { type: 'string' },
    pods: { type: 'string' },
    rate: { type: 'string' },
    sweep: { type: 'string' },
    seconds: { type: 'string' },
    'scale-pods': { type: 'string' },
    'scale-latency': { type: 'string', default: '50' },
    'scale-syncs': { type: 'string', default: '8' },
    'cpu-seconds': { type: 'string' },
    'pod-workers': { type: 'string', default: '2' },
    spans: { type: 'boolean', default: false },
    'splitlet-root': { type: 'string' },
    'up-arg': { type: 'string', multiple: true, default: [] },
  },
});
const quick = values.quick === true;
const num = (v: string | undefined, full: number, small: number, what: string): number => {
  const n = v === undefined ? (quick ? small : full) : Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${what} must be a positive number, got ${v}`);
  return n;
};
const PODS = num(values.pods, 1000, 100, 'pods');
const RATE = num(values.rate, 50, 20, 'rate');
const SECONDS = num(values.seconds, 20, 5, 'seconds');
/** The arrival rates of the steady row's latency curve below --rate (which is measured last, for the target). */
const SWEEP = (values.sweep ?? (quick ? '10' : '10,20,35')).split(',').map((x) => num(x.trim(), 0, 0, 'sweep'));
const SCALE_PODS = num(values['scale-pods'], 200, 40, 'scale-pods');
const SCALE_LATENCY = num(values['scale-latency'], 50, 50, 'scale-latency');
/**
 * The scale-out row's MAX_CONCURRENT_SYNCS per pod-worker: a replica's capacity. Every process of
 * the node shares this machine's 2 cores, so without a cap one pod-worker already runs the whole
 * burst at once and the cores, not the pod-workers, bound it; capped, one replica is the bottleneck
 * and the row shows whether what is behind the pod-workers lets their capacity add up.
 */
const SCALE_SYNCS = num(values['scale-syncs'], 8, 8, 'scale-syncs');
/** The cpu row's window: by default one longest resync period, so that it holds every pod's resync at least once. */
const CPU_SECONDS = num(values['cpu-seconds'], 90, 4, 'cpu-seconds');
/**
 * How long the cpu row first measures the idle node (no pods: its leases, relists, heartbeats and
 * housekeeping), so that the row can tell what holding the pods adds to what the node spends anyway.
 */
const IDLE_CPU_SECONDS = quick ? 5 : 20;
/** The shortest and the longest a Running pod waits for its periodic sync: syncFrequency (60 s), × 1.5 with the kubelet's jitter. */
const RESYNC_MIN_MS = 60_000;
const RESYNC_MAX_MS = 90_000;
const WORKERS = num(values['pod-workers'], 2, 2, 'pod-workers');
const selected = new Set<RowId>(
  (values.row ?? ROWS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      if (!(ROWS as readonly string[]).includes(s)) throw new Error(`--row: unknown row "${s}" (rows: ${ROWS.join(', ')})`);
      return s as RowId;
    }),
);

/** `--splitlet-root DIR`: run another checkout's build (e.g. main's, for a before/after); `--up-arg`: extra `splitlet up` arguments. */
const underTest = {
  upArgs: values['up-arg'],
  ...(values['splitlet-root'] === undefined ? {} : { splitletRoot: resolve(values['splitlet-root']) }),
};
const rows: BenchRow[] = [];
function report(row: BenchRow): void {
  rows.push(row);
  const ref = row.reference === undefined ? '' : ` | reference: ${row.reference}`;
  const verdict = row.met === undefined ? '' : row.met ? ' ✓' : ' ✗';
  console.log(`  ${row.measure}: ${row.value}${ref} | target: ${row.target}${verdict}`);
}

async function jetstreamWriteRate(url: string, seconds: number): Promise<number> {
  const nc = await connect({ servers: url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'] });
  const js = jetstream(nc);
  const payload = new Uint8Array(1024);
  const end = Date.now() + seconds * 1000;
  let n = 0;
  const inflight = new Set<Promise<unknown>>();
  while (Date.now() < end) {
    const p: Promise<unknown> = js.publish(`bench.${n++ % 64}`, payload).finally(() => inflight.delete(p));
    inflight.add(p);
    if (inflight.size >= 256) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  await jsm.streams.delete('BENCH');
  await nc.close();
  return n / seconds;
}

function memory(node: NodeUnderTest): Record<string, number> {
  return memorySample(node).rss;
}

/** Each process's RSS (MiB, to 0.1), and the same reading split into anonymous and file-backed memory. */
function memorySample(node: NodeUnderTest): { rss: Record<string, number>; split: Record<string, RssSplit> } {
  const r = (x: number): number => Math.round(x * 10) / 10;
  const rss: Record<string, number> = {};
  const split: Record<string, RssSplit> = {};
  for (const p of node.processes()) {
    const s = rssSplit(p.pid);
    rss[p.name] = r(s?.rss ?? NaN);
    if (s !== undefined) split[p.name] = { rss: r(s.rss), anon: r(s.anon), file: r(s.file) };
  }
  return { rss, split };
}

/** Creates `n` pods at once, waits for Running; pods/s from the first create to the last Running. */
async function burst(node: NodeUnderTest, prefix: string, n: number): Promise<{ names: string[]; podsPerSec: number; p50: number; p99: number }> {
  const names: string[] = [];
  const t0 = Date.now();
  for (let i = 0; i < n; i++) {
    const name = `${prefix}-${i}`;
    node.create(name);
    names.push(name);
  }
  await node.waitRunning(names, 120_000 + n * 500);
  const ms = Math.max(...names.map((x) => node.runningAt.get(x)!)) - t0;
  const lat = names.map((x) => node.runningAt.get(x)! - node.createdAt.get(x)!);
  return { names, podsPerSec: (n * 1000) / ms, p50: pct(lat, 50), p99: pct(lat, 99) };
}

/** One rate of the steady row: created → Running latencies (ms), and the node's CPU while the pods arrived. */
interface Arrivals {
  readonly lat: number[];
  /** Cores the node kept busy from the first pod's creation to the last one Running. */
  readonly coresBusy: number;
  /** The node's CPU over that window per pod (ms), by process. */
  readonly cpuMsPerPod: Record<string, number>;
}

/** Creates `rate × seconds` pods at a steady rate, waits for them Running, then deletes them and waits for the node to drain. */
async function steadyArrivals(node: NodeUnderTest, prefix: string, rate: number, seconds: number): Promise<Arrivals> {
  const names: string[] = [];
  const t0 = Date.now();
  const arrivalCpu = cpuMeter(node.processes());
  const total = Math.round(rate * seconds);
  for (let i = 0; i < total; i++) {
    const wait = t0 + (i * 1000) / rate - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    node.create(`${prefix}-${i}`);
    names.push(`${prefix}-${i}`);
  }
  await node.waitRunning(names, 120_000 + total * 200);
  const used = arrivalCpu();
  const lat = names.map((n) => node.runningAt.get(n)! - node.createdAt.get(n)!);
  for (const n of names) node.delete(n);
  await node.waitGone(120_000 + total * 200);
  await node.waitDrained(120_000 + total * 200);
  return { lat, coresBusy: used.totalS / used.wallS, cpuMsPerPod: msPerPod(used.byProcess, total) };
}

/** CPU seconds by process as ms per pod, to 0.1 ms. */
function msPerPod(byProcess: Record<string, number>, pods: number): Record<string, number> {
  return Object.fromEntries(Object.entries(byProcess).map(([k, v]) => [k, Math.round((10000 * v) / pods) / 10]));
}

/**
 * Waits (at most 60 s) until every process has run its heap trimmer's memory-reducing GC after
 * start-up (libs/service heap-trimmer.ts; ~100 ms of CPU each), so the idle window does not count
 * start-up work: that GC once made "what the pods add" negative with `--quick`.
 */
async function startUpTrimmed(node: NodeUnderTest): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const waiting = [...(await node.heapTrims())].filter(([, t]) => !(t.count >= 1) && !Number.isNaN(t.count)).map(([name]) => name);
    if (waiting.length === 0) return;
    if (Date.now() >= deadline) {
      console.log(`    (idle CPU: ${waiting.join(', ')} made no heap trim within 60 s of start; measuring anyway)`);
      return;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** A CPU reading as % of one core: by process, and the node's total. */
function percentOfOneCore(used: CpuReading): { total: number; perProcess: Record<string, number> } {
  const perProcess = Object.fromEntries(Object.entries(used.byProcess).map(([k, v]) => [k, (100 * v) / used.wallS]));
  return { total: Object.values(perProcess).reduce((a, x) => a + x, 0), perProcess };
}

async function mainNodeRows(): Promise<void> {
  console.log(`\n— node with ${WORKERS} pod-workers, simulator at zero latency —`);
  const start = async (): Promise<NodeUnderTest> => {
    const n = await NodeUnderTest.start({ podWorkers: WORKERS, maxPods: PODS + 1000, spans: values.spans === true, ...underTest });
    await new Promise((r) => setTimeout(r, 3000)); // let start-up settle before the idle sample
    return n;
  };
  let node = await start();
  try {
    let { rss: idle, split: idleSplit } = memorySample(node);
    let bound: number | undefined;
    if (selected.has('bound') || selected.has('burst')) {
      bound = await jetstreamWriteRate(node.nats.url, quick ? 2 : 3);
      report({
        id: 'bound',
        measure: 'JetStream persisted publishes/s (1 KiB, 256 in flight)',
        value: `${fmt(bound, 0)} writes/s`,
        target: '— (the reference of the burst row)',
        data: { writesPerSec: bound },
      });
    }
    if (selected.has('steady')) {
      // What a hop costs this machine below splitlet: a loopback round trip, busy and idle between.
      const rtt = await loopbackRoundTrip(quick ? 1000 : 5000, quick ? 100 : 300);
      console.log(
        `    a loopback round trip between two processes: ${fmt(rtt.busyMicros, 0)} µs of CPU back to back, ${fmt(rtt.idleMicros, 0)} µs ${rtt.gapMs} ms apart (${fmt(rtt.idleMicros / rtt.busyMicros, 1)}×)`,
      );
      // The latency curve: the same steady arrival at each rate of the sweep (the target's rate last).
      const curve: Array<{ rate: number; p50: number; p90: number; p99: number; max: number; coresBusy: number; cpuMsPerPod: Record<string, number>; cpuMsPerPodTotal: number }> =
        [];
      for (const rate of [...new Set([...SWEEP.filter((x) => x < RATE), RATE])]) {
        const { lat, coresBusy, cpuMsPerPod } = await steadyArrivals(node, `steady-${rate}`, rate, SECONDS);
        const cpuMsPerPodTotal = Math.round(10 * Object.values(cpuMsPerPod).reduce((a, x) => a + x, 0)) / 10;
        curve.push({ rate, p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: Math.max(...lat), coresBusy, cpuMsPerPod, cpuMsPerPodTotal });
        console.log(
          `    ${String(rate).padStart(4)} pods/s: p50 ${fmt(pct(lat, 50), 0)} ms, p90 ${fmt(pct(lat, 90), 0)} ms, p99 ${fmt(pct(lat, 99), 0)} ms; ` +
            `the node's CPU ${fmt(coresBusy, 2)} of ${machine().cpus} cores, ${fmt(cpuMsPerPodTotal)} CPU ms per pod`,
        );
      }
      const at = curve[curve.length - 1]!;
      report({
        id: 'steady',
        measure: `created → Running reported at a steady ${RATE} pods/s for ${SECONDS} s`,
        value: `p50 ${fmt(at.p50, 0)} ms, p99 ${fmt(at.p99, 0)} ms (the node's CPU ${fmt(at.coresBusy, 2)} of ${machine().cpus} cores, ${fmt(at.cpuMsPerPodTotal)} CPU ms per pod)`,
        reference:
          (curve.length > 1 ? `the curve: ${curve.map((c) => `${c.rate}/s p50 ${fmt(c.p50, 0)} p99 ${fmt(c.p99, 0)} ms`).join('; ')}. ` : '') +
          `A loopback round trip between two processes: ${fmt(rtt.busyMicros, 0)} µs of CPU back to back, ${fmt(rtt.idleMicros, 0)} µs ${rtt.gapMs} ms apart`,
        target: 'p50 ≤ 25 ms, p99 ≤ 100 ms',
        met: at.p50 <= 25 && at.p99 <= 100,
        data: { rate: RATE, seconds: SECONDS, p50: at.p50, p90: at.p90, p99: at.p99, max: at.max, curve, roundTrip: rtt },
      });
    }
    const needBurst = ['burst', 'memory', 'cpu', 'delete'].some((r) => selected.has(r as RowId));
    if (!needBurst) return;
    if (selected.has('steady')) {
      // The sweep's thousands of deleted pods leave the runtime their dead sandboxes and containers,
      // which container GC removes over the next minutes: the burst and the rows after it (the CPU
      // of holding pods with no churn above all) start on a fresh node.
      await node.stop();
      node = await start();
      ({ rss: idle, split: idleSplit } = memorySample(node));
    }
    // The idle node's CPU (the cpu row's baseline), on the fresh node the burst then runs on.
    let idleCpu: ReturnType<typeof percentOfOneCore> | undefined;
    if (selected.has('cpu')) {
      await startUpTrimmed(node);
      const meter = cpuMeter(node.processes());
      await new Promise((r) => setTimeout(r, IDLE_CPU_SECONDS * 1000));
      idleCpu = percentOfOneCore(meter());
    }
    const before = await node.writeCounters();
    const burstCpu = cpuMeter(node.processes());
    const b = await burst(node, 'burst', PODS);
    // What the node spent until the last pod was Running is what bounds the burst's rate; the rest
    // (events and API statuses at the kubelet's eventRecordQPS and kubeAPIQPS) comes after it.
    const toRunningMsPerPod = msPerPod(burstCpu().byProcess, PODS);
    const cpuMsPerPodToRunning = Math.round(10 * Object.values(toRunningMsPerPod).reduce((a, x) => a + x, 0)) / 10;
    // The burst's events and statuses are reported after its last pod is Running: its work (CPU,
    // writes) is counted until the node has drained them, and the rows after it start then.
    await node.waitDrained(120_000 + PODS * 200);
    const lastRunningAt = Math.max(...b.names.map((x) => node.runningAt.get(x)!));
    const drainedMs = Date.now() - lastRunningAt;
    // CPU per pod by process: less sensitive to the machine's load than the wall-clock rate.
    const cpuMsPerPod = msPerPod(burstCpu().byProcess, PODS);
    const cpuMsPerPodTotal = Math.round(10 * Object.values(cpuMsPerPod).reduce((a, x) => a + x, 0)) / 10;
    const after = await node.writeCounters();
    const writesPerPod = (after.messages - before.messages + after.kvWrites - before.kvWrites) / PODS;
    if (selected.has('burst') && bound !== undefined) {
      const boundRate = bound / writesPerPod;
      const share = b.podsPerSec / boundRate;
      // The machine's other bound: its cores divided by the CPU a pod costs the whole node.
      const cores = machine().cpus;
      const cpuBoundPodsPerSec = (cores * 1000) / cpuMsPerPodToRunning;
      report({
        id: 'burst',
        measure: `burst of ${PODS} pods to Running, ${WORKERS} pod-workers`,
        value: `${fmt(b.podsPerSec)} pods/s (latency p50 ${fmt(b.p50, 0)} ms, p99 ${fmt(b.p99, 0)} ms; ${fmt(cpuMsPerPodToRunning)} CPU ms per pod until the last Running, ${fmt(cpuMsPerPodTotal)} with the events and statuses reported ${fmt(drainedMs / 1000)} s after it)`,
        reference:
          `bus bound ${fmt(bound, 0)} writes/s ÷ ${fmt(writesPerPod)} writes per pod = ${fmt(boundRate)} pods/s; ratio ${fmt(100 * share)} %. ` +
          `CPU bound ${cores} cores ÷ ${fmt(cpuMsPerPodToRunning)} CPU ms per pod until the last Running = ${fmt(cpuBoundPodsPerSec)} pods/s; ratio ${fmt((100 * b.podsPerSec) / cpuBoundPodsPerSec)} %`,
        target: '≥ 300 pods/s and ≥ 25 % of the bound',
        met: b.podsPerSec >= 300 && share >= 0.25,
        data: {
          pods: PODS,
          podsPerSec: b.podsPerSec,
          p50: b.p50,
          p99: b.p99,
          writesPerPod,
          boundPodsPerSec: boundRate,
          shareOfBound: share,
          cpuMsPerPodTotal,
          cpuMsPerPod,
          cpuMsPerPodToRunning,
          toRunningMsPerPod,
          cpuBoundPodsPerSec,
          drainedMs,
        },
      });
      for (const [k, v] of Object.entries(cpuMsPerPod).sort((x, y) => y[1] - x[1])) console.log(`    ${k.padEnd(18)} ${fmt(v).padStart(6)} CPU ms per pod`);
    }
    await new Promise((r) => setTimeout(r, 2000));
    const loaded = memory(node);
    if (selected.has('memory')) {
      const splitlet = Object.entries(loaded).filter(([k]) => k !== 'nats-server');
      const maxIdle = Math.max(
        ...Object.entries(idle)
          .filter(([k]) => k !== 'nats-server')
          .map(([, v]) => v),
      );
      const maxLoaded = Math.max(...splitlet.map(([, v]) => v));
      // The floor of each kind of process: the same Node and flags loading only the libraries.
      const libsRoot = underTest.splitletRoot ?? root;
      const floors = {
        node: memoryFloor(libsRoot, []),
        common: memoryFloor(libsRoot, COMMON_LIBRARIES),
        grpc: memoryFloor(libsRoot, [...COMMON_LIBRARIES, ...GRPC_LIBRARIES]),
      };
      const floorOf = (name: string): RssSplit => (GRPC_PROCESSES.has(name) ? floors.grpc : floors.common);
      const MB = 1e6 / 2 ** 20; // the targets are in MB, the measures in MiB
      report({
        id: 'memory',
        measure: `RSS per splitlet process, idle and with ${PODS} pods`,
        value: `max idle ${fmt(maxIdle, 0)} MiB, max loaded ${fmt(maxLoaded, 0)} MiB`,
        reference:
          `the floor, Node ${process.version} with the same flags loading only the libraries (full GC): ` +
          `${fmt(floors.common.rss)} MiB (bus, tracing, metrics, zod), ${fmt(floors.grpc.rss)} MiB with gRPC (the CRI processes), ` +
          `Node alone ${fmt(floors.node.rss)} MiB; the most any process was above its floor idle: ` +
          `${fmt(
            Math.max(
              ...Object.entries(idle)
                .filter(([k]) => k !== 'nats-server')
                .map(([k, v]) => v - floorOf(k).rss),
            ),
          )} MiB`,
        target: '≤ 80 MB idle, ≤ 200 MB loaded',
        met: maxIdle <= 80 * MB && maxLoaded <= 200 * MB,
        data: { idle, loaded, idleSplit, floors, grpcProcesses: [...GRPC_PROCESSES] },
      });
      for (const k of Object.keys(loaded))
        console.log(
          `    ${k.padEnd(18)} idle ${fmt(idle[k] ?? NaN, 0).padStart(5)} MiB (floor ${k === 'nats-server' ? '  —' : fmt(floorOf(k).rss, 0).padStart(3)})   loaded ${fmt(loaded[k]!, 0).padStart(5)} MiB`,
        );
    }
    if (selected.has('cpu')) {
      // A Running pod is synced again every syncFrequency (1 min) jittered up to 1.5×: the window
      // starts when the burst's pods start to be (not in the lull right after the burst) and by
      // default lasts one longest period, so it holds the steady resyncs — 1,000 pods ÷ 75 s on
      // average, ~13 a second. It starting at the longest period instead held the lull between the
      // burst's first and second resyncs: a few a second. The pod workers' syncs
      // (kubelet_pod_worker_duration_seconds) count them: a settled pod's resync writes nothing.
      const steadyFrom = lastRunningAt + RESYNC_MIN_MS;
      await new Promise((r) => setTimeout(r, Math.max(0, steadyFrom - Date.now())));
      const syncsBefore = await node.metricSum('pod-worker', 'kubelet_pod_worker_duration_seconds_count');
      const holdCpu = cpuMeter(node.processes());
      await new Promise((r) => setTimeout(r, CPU_SECONDS * 1000));
      const held = holdCpu();
      const syncs = (await node.metricSum('pod-worker', 'kubelet_pod_worker_duration_seconds_count')) - syncsBefore;
      const syncsPerSecond = syncs / held.wallS;
      const expectedSyncs = (PODS * 1000) / ((RESYNC_MIN_MS + RESYNC_MAX_MS) / 2);
      const { perProcess: per, total } = percentOfOneCore(held);
      const idle = idleCpu!;
      // What holding the pods adds to the idle node, per periodic sync (% of one core = 10 CPU ms/s).
      const cpuMsPerSync = syncsPerSecond > 0 ? (10 * (total - idle.total)) / syncsPerSecond : NaN;
      report({
        id: 'cpu',
        measure: `steady CPU of the node holding ${PODS} Running pods, no churn, with their periodic syncs (${CPU_SECONDS} s from ${RESYNC_MIN_MS / 1000} s after the last Running)`,
        value:
          `${fmt(total)} % of one core (splitlet + nats-server), ${fmt(syncsPerSecond)} periodic syncs/s (${fmt(expectedSyncs)}/s on average: ${PODS} pods ÷ ${(RESYNC_MIN_MS + RESYNC_MAX_MS) / 2000} s); ` +
          `the pods add ${fmt(total - idle.total)} % to the idle node's ${fmt(idle.total)} %, ${fmt(cpuMsPerSync)} CPU ms per periodic sync`,
        reference: `one core; the same node idle, no pods (${IDLE_CPU_SECONDS} s before the burst): ${fmt(idle.total)} %`,
        target: '≤ 10 %',
        met: total <= 10,
        data: {
          percentOfOneCore: total,
          perProcess: per,
          syncsPerSecond,
          expectedSyncsPerSecond: expectedSyncs,
          idlePercentOfOneCore: idle.total,
          idlePerProcess: idle.perProcess,
          idleSeconds: IDLE_CPU_SECONDS,
          cpuMsPerSync,
        },
      });
      for (const [k, v] of Object.entries(per).sort((x, y) => y[1] - x[1]))
        console.log(`    ${k.padEnd(18)} ${fmt(v).padStart(6)} %   (idle ${fmt(idle.perProcess[k] ?? NaN).padStart(5)} %)`);
    }
    if (selected.has('delete')) {
      const t0 = Date.now();
      const deleteCpu = cpuMeter(node.processes());
      for (const n of b.names) node.delete(n);
      await node.waitGone(120_000 + PODS * 500);
      const rate = (PODS * 1000) / (Date.now() - t0);
      const used = deleteCpu();
      const byProcess = msPerPod(used.byProcess, PODS);
      const total = (1000 * used.totalS) / PODS;
      // The deletions' events and API writes go out at the kubelet's rates after the pods are gone.
      const drainedMs = await node.waitDrained(120_000 + PODS * 200);
      const withReports = (1000 * deleteCpu().totalS) / PODS;
      const cores = machine().cpus;
      const cpuBound = (cores * 1000) / total;
      report({
        id: 'delete',
        measure: `${PODS} pods deleted → gone`,
        value: `${fmt(rate)} pods/s (${fmt(total)} CPU ms per pod, ${fmt(withReports)} with the events and API writes reported ${fmt(drainedMs / 1000)} s after the last was gone; the node's CPU ${fmt(used.totalS / used.wallS, 2)} of ${cores} cores)`,
        reference: `CPU bound ${cores} cores ÷ ${fmt(total)} CPU ms per pod = ${fmt(cpuBound)} pods/s; ratio ${fmt((100 * rate) / cpuBound)} %`,
        target: '≥ 200 pods/s',
        met: rate >= 200,
        data: {
          pods: PODS,
          podsPerSec: rate,
          cpuMsPerPod: byProcess,
          cpuMsPerPodTotal: total,
          cpuMsPerPodWithReports: withReports,
          drainedMs,
          cpuBoundPodsPerSec: cpuBound,
          coresBusy: used.totalS / used.wallS,
        },
      });
    }
  } finally {
    await node.stop();
  }
}

async function scaleOutRow(): Promise<void> {
  const perWorkers: Record<string, number> = {};
  // The whole node's CPU during each burst: the pod-workers add capacity only while the cores have
  // some to spare, so each step says how many of them were busy and what a pod cost.
  const cpuCores: Record<string, number> = {};
  const cpuMsPerPod: Record<string, number> = {};
  const cores = machine().cpus;
  for (const w of [1, 2, 4]) {
    console.log(`\n— scale-out: ${w} pod-worker(s) of ${SCALE_SYNCS} syncs each, simulator at ${SCALE_LATENCY} ms per CRI call, burst of ${SCALE_PODS} —`);
    const node = await NodeUnderTest.start({
      podWorkers: w,
      simLatencyMs: SCALE_LATENCY,
      maxPods: SCALE_PODS + 100,
      spans: false,
      ...underTest,
      env: { MAX_CONCURRENT_SYNCS: String(SCALE_SYNCS) },
    });
    try {
      const t0 = Date.now();
      const scaleCpu = cpuMeter(node.processes());
      const b = await burst(node, 'scale', SCALE_PODS);
      const wallS = (Math.max(...b.names.map((x) => node.runningAt.get(x)!)) - t0) / 1000;
      const cpuS = scaleCpu().totalS;
      perWorkers[String(w)] = b.podsPerSec;
      cpuCores[String(w)] = Math.round((100 * cpuS) / wallS) / 100;
      cpuMsPerPod[String(w)] = Math.round((10000 * cpuS) / SCALE_PODS) / 10;
      console.log(`    ${fmt(b.podsPerSec)} pods/s; the node's CPU ${fmt(cpuCores[String(w)]!, 2)} of ${cores} cores, ${fmt(cpuMsPerPod[String(w)]!)} CPU ms per pod`);
    } finally {
      await node.stop();
    }
  }
  const r2 = perWorkers['2']! / perWorkers['1']!;
  const r4 = perWorkers['4']! / perWorkers['1']!;
  // What the cores allow at the lowest cost per pod measured (a pod costs less CPU the faster pods
  // come: fewer idle wake-ups), as a multiple of the one-pod-worker rate.
  const cheapest = Math.min(...Object.values(cpuMsPerPod));
  const cpuCeiling = (cores * 1000) / cheapest;
  report({
    id: 'scale-out',
    measure: `scale-out, burst of ${SCALE_PODS} pods, simulator ${SCALE_LATENCY} ms per CRI call, each pod-worker ${SCALE_SYNCS} syncs at once`,
    value: `1 → 2 → 4 pod-workers: ${fmt(perWorkers['1']!)} → ${fmt(perWorkers['2']!)} → ${fmt(perWorkers['4']!)} pods/s (the node's CPU ${fmt(cpuCores['1']!, 2)} → ${fmt(cpuCores['2']!, 2)} → ${fmt(cpuCores['4']!, 2)} of ${cores} cores)`,
    reference:
      `1 pod-worker; ratios ${fmt(r2, 2)}× and ${fmt(r4, 2)}×. ` +
      `CPU bound ${cores} cores ÷ ${fmt(cheapest)} CPU ms per pod (the lowest of the three) = ${fmt(cpuCeiling)} pods/s, ${fmt(cpuCeiling / perWorkers['1']!, 2)}× the 1-pod-worker rate`,
    target: '≥ 1.9× and ≥ 3.5×',
    met: r2 >= 1.9 && r4 >= 3.5,
    data: {
      pods: SCALE_PODS,
      latencyMs: SCALE_LATENCY,
      syncsPerWorker: SCALE_SYNCS,
      podsPerSec: perWorkers,
      ratio2: r2,
      ratio4: r4,
      cpuCores,
      cpuMsPerPod,
      cpuBoundPodsPerSec: cpuCeiling,
    },
  });
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const started = new Date();
  console.log(`splitlet benchmark${quick ? ' (--quick)' : ''} — rows: ${[...selected].join(', ')}; load average before ${loadBefore.join(' ')}`);
  if (['bound', 'steady', 'burst', 'memory', 'cpu', 'delete'].some((r) => selected.has(r as RowId))) await mainNodeRows();
  if (selected.has('scale-out')) await scaleOutRow();
  const loadAfter = loadAverage();
  const result: BenchResult = {
    date: started.toISOString(),
    durationSeconds: Math.round((Date.now() - started.getTime()) / 1000),
    commit: gitCommit(values['splitlet-root'] === undefined ? root : resolve(values['splitlet-root'])),
    machine: machine(),
    quick,
    loadBefore,
    loadAfter,
    settings: {
      pods: PODS,
      rate: RATE,
      seconds: SECONDS,
      scalePods: SCALE_PODS,
      scaleLatencyMs: SCALE_LATENCY,
      scaleSyncs: SCALE_SYNCS,
      cpuSeconds: CPU_SECONDS,
      podWorkers: WORKERS,
    },
    rows,
  };
  console.log(`\nload average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')} (${result.machine.cpus} cores)`);
  console.log('containerd vs the direct CRI floor: npm run bench:containerd');
  // By default only a full run replaces the report's data (docs/benchmarks.json): a run of some rows,
  // or a --quick one, writes only where --out says.
  const out = values.out ?? (selected.size === ROWS.length && !quick ? resolve(root, 'docs', 'benchmarks.json') : undefined);
  if (out === undefined) console.log('results not written: a run of some rows or a --quick run writes only with --out FILE');
  else if (out !== '') {
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`results written to ${out}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
