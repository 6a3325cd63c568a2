/**
 * Where a burst's time and work go, measured independently of the machine's load: runs one burst
 * on a fresh node and prints, per pod, the bus messages by subject (every core message, JetStream
 * publish, KV write, ack and request/reply the nats-server carried), the RPCs with their median and
 * p90 latency, the CPU milliseconds of each process, and the median time from the pod's creation
 * to the first occurrence of each subject (the pipeline's stages in order). Then, the node stopped,
 * the bus floor: what one stream hop costs when nothing else runs (lib/bus-hop-cost.ts), times the
 * pod's messages.
 *
 * With `--cpu-prof DIR`, every process profiles itself (lib/cpu-prof-preload.cjs) and the profiles are summarized over
 * the burst: each process's busiest functions and files, in CPU ms per pod.
 *
 * Usage: node --import tsx test/bench/burst-probe.ts [--pods 200] [--pod-workers 2] [--latency 0] [--splitlet-root DIR] [--json out.json]
 *        [--cpu-prof DIR] [--top 12] [--settle 3] [--up-arg=--no-apiserver …] (seconds counted after the last Running, and then until the node drained: the tail of the work)
 *        [--env NAME=VALUE …] (of every process, e.g. MAX_CONCURRENT_SYNCS=8 as in the bench's scale-out row)
 *        [--rate 10] (the pods arrive at that steady rate, as in the bench's steady row, instead of all at once)
 *        [--hold 20] (then, once the node's consumers have drained, seconds of holding the pods with no churn: CPU, messages, CRI calls and profile per second)
 *        [--spans] (every process publishes its spans; after the burst, each span's count per pod and median / p90 duration, and for
 *        each server span how long its request waited between the caller's span and the server's — where a pod's time goes when
 *        the CPU is not the limit, e.g. with --latency), and the median pod's creation trace, span by span
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { busHopCost, type HopPrice } from './lib/bus-hop-cost.ts';
import { BusSpy } from './lib/bus-spy.ts';
import { monotonicMicros } from './lib/cpu-profiles.ts';
import {
  cpuProfileEnv,
  envArgs,
  criCallsPerPod,
  printCpuMs,
  printKernelCounts,
  printCriCalls,
  printMessages,
  printProfiles,
  printRpcs,
  rpcSummary,
  windowProfiles,
  writeProbeJson,
} from './lib/probe-report.ts';
import { NodeUnderTest } from './lib/node-under-test.ts';
import type { BurstProbeResult } from './lib/result.ts';
import type { KernelCounts } from './lib/stats.ts';
import { printSpanSummary } from './lib/span-summary.ts';
import { cpuMeter, fmt, loadAverage, machine, pct, rssMiB, kernelCountsMeter } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '200' },
    'pod-workers': { type: 'string', default: '2' },
    latency: { type: 'string', default: '0' },
    'splitlet-root': { type: 'string' },
    json: { type: 'string' },
    'cpu-prof': { type: 'string' },
    top: { type: 'string', default: '12' },
    settle: { type: 'string', default: '3' },
    hold: { type: 'string', default: '0' },
    rate: { type: 'string', default: '0' },
    spans: { type: 'boolean', default: false },
    'up-arg': { type: 'string', multiple: true, default: [] },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const PODS = Number(values.pods);
const WORKERS = Number(values['pod-workers']);
const LATENCY = Number(values.latency);
const HOLD = Number(values.hold);
const RATE = Number(values.rate);
for (const [k, v] of [
  ['hold', HOLD],
  ['rate', RATE],
  ['pods', PODS],
  ['pod-workers', WORKERS],
  ['latency', LATENCY],
] as const) {
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k} must be a number ≥ 0`);
}

/** Seconds the idle node's CPU rate is measured before the burst. */
const IDLE_SECONDS = 5;

async function main(): Promise<void> {
  const load0 = loadAverage();
  const profDir = values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']);
  const extraEnv = envArgs(values.env);
  const profEnv = cpuProfileEnv(profDir).env ?? {};
  const env = { ...extraEnv, ...profEnv };
  // Both set NODE_OPTIONS: the profiler's preload and the caller's flags.
  if (extraEnv['NODE_OPTIONS'] !== undefined && profEnv['NODE_OPTIONS'] !== undefined) env['NODE_OPTIONS'] = `${profEnv['NODE_OPTIONS']} ${extraEnv['NODE_OPTIONS']}`;
  const node = await NodeUnderTest.start({
    env,
    podWorkers: WORKERS,
    simLatencyMs: LATENCY,
    maxPods: PODS + 100,
    spans: values.spans,
    upArgs: values['up-arg'],
    ...(values['splitlet-root'] !== undefined ? { splitletRoot: resolve(values['splitlet-root']) } : {}),
  });
  const spy = await BusSpy.start(node.nats.url, 'burst-probe');
  let window: { from: number; to: number; names: Map<number, string> } | undefined;
  let holdWindow: { from: number; to: number } | undefined;
  let summary: BurstProbeResult | undefined;
  try {
    await new Promise((r) => setTimeout(r, 3000));
    const { counts, firstSeen } = spy;
    const procs = node.processes();
    // The idle node's CPU rate (its periodic work: leases, relists, resyncs, heartbeats), so that the
    // burst's CPU can be told apart from what the node spends anyway over a longer or shorter tail.
    const idleMeter = cpuMeter(procs);
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const idle = idleMeter();
    const idleCpuMsPerS = (1000 * idle.totalS) / idle.wallS;
    const rssIdle = procs.map((p) => rssMiB(p.pid));
    const burstCpu = cpuMeter(procs);
    const burstKernel = kernelCountsMeter(procs);
    const cri0 = await node.criCalls();
    spy.recording = true;
    const mono0 = monotonicMicros();
    const t0 = Date.now();
    const names: string[] = [];
    for (let i = 0; i < PODS; i++) {
      // --rate: the pods arrive at that steady rate (the steady row's arrival) instead of all at once.
      const wait = RATE > 0 ? t0 + (i * 1000) / RATE - Date.now() : 0;
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      node.create(`probe-${i}`);
      names.push(`probe-${i}`);
    }
    await node.waitRunning(names, 120_000 + PODS * 500);
    const tRunning = Date.now();
    const toRunningMs: Record<string, number> = {};
    for (const [name, s] of Object.entries(burstCpu().byProcess)) toRunningMs[name] = (1000 * s) / PODS;
    // Let the follow-up work of the last pods (pleg events, their syncs, status reports) finish before
    // counting: the settle time, then until the node has drained (its events and API statuses go out
    // at the kubelet's eventRecordQPS and kubeAPIQPS, long after the last Running).
    await new Promise((r) => setTimeout(r, Number(values.settle) * 1000));
    const drainedMs = (await node.waitDrained(120_000 + PODS * 200)) + Number(values.settle) * 1000;
    spy.recording = false;
    const rssAfter = procs.map((p) => rssMiB(p.pid));
    const mono1 = monotonicMicros();
    const cri1 = await node.criCalls();
    window = { from: mono0, to: mono1, names: new Map(procs.map((p) => [p.pid, p.name])) };
    const cpuMs: Record<string, number> = {};
    for (const [name, s] of Object.entries(burstCpu().byProcess)) cpuMs[name] = (1000 * s) / PODS;
    const kernelPerPod: Record<string, KernelCounts> = {};
    for (const [name, n] of Object.entries(burstKernel())) kernelPerPod[name] = { reads: n.reads / PODS, writes: n.writes / PODS, majorFaults: n.majorFaults / PODS };
    const podsPerSec = (PODS * 1000) / (tRunning - t0);
    const lat = names.map((n) => node.runningAt.get(n)! - node.createdAt.get(n)!);

    console.log(
      `\n${RATE > 0 ? `${PODS} pods arriving at ${RATE}/s` : `burst of ${PODS} pods`}, ${WORKERS} pod-workers, simulator ${LATENCY} ms per CRI call: ${fmt(podsPerSec)} pods/s, p50 ${pct(lat, 50)} ms, p99 ${pct(lat, 99)} ms`,
    );
    console.log(`load average before ${load0.join(' ')}, after ${loadAverage().join(' ')}`);
    if (WORKERS > 1) {
      const split = [...(await node.podsByWorker(names, t0))].sort((a, b) => (a[0] < b[0] ? -1 : 1));
      console.log(
        `pods by pod-worker (the partitions each holds), and its last pod Running: ${split.map(([w, x]) => `${w} ${x.pods} pods, ${fmt(x.lastRunningMs / 1000, 2)} s`).join('; ')}`,
      );
    }
    printCpuMs('CPU ms per pod by process until the last pod was Running:', toRunningMs);
    printCpuMs(`CPU ms per pod by process in all, counted until the node drained ${fmt(drainedMs / 1000)} s after the last Running:`, cpuMs);
    const windowS = (Date.now() - t0) / 1000;
    const idleShare = (idleCpuMsPerS * windowS) / PODS;
    console.log(
      `  the idle node spends ${fmt(idleCpuMsPerS)} CPU ms/s (measured over ${IDLE_SECONDS} s before the burst): ${fmt(idleShare)} of them per pod over the ${fmt(windowS)} s counted`,
    );

    printKernelCounts(`read and write system calls (sockets, pipes and files) and major page faults per pod by process, counted as the CPU in all:`, kernelPerPod);

    console.log(`\nRSS by process (MiB): idle before the burst, once the node drained after it:`);
    procs.forEach((p, i) => console.log(`  ${p.name.padEnd(18)} ${fmt(rssIdle[i]!, 1).padStart(7)} ${fmt(rssAfter[i]!, 1).padStart(7)}`));

    printMessages('bus messages per pod by subject', spy, PODS);
    const criPerPod = criCallsPerPod(cri0, cri1, PODS);
    const criTotal = [...criPerPod.values()].reduce((a, b) => a + b, 0);
    printCriCalls(`CRI calls per pod by operation (cri-adapter's kubelet_runtime_operations_total, ${fmt(criTotal, 2)} in all):`, criPerPod);
    printRpcs('RPCs: count per pod, median / p90 latency (ms):', spy, PODS);
    // Stage timeline: median (over pods) of the first time each subject was seen for the pod, from its creation.
    const created = new Map<string, number>();
    for (const [uid, f] of firstSeen) {
      const c = f.get('sl.bench-node.config.file');
      if (c !== undefined) created.set(uid, c);
    }
    const stageTimes = new Map<string, number[]>();
    for (const [uid, f] of firstSeen) {
      const c = created.get(uid);
      if (c === undefined) continue;
      for (const [tpl, t] of f) {
        let xs = stageTimes.get(tpl);
        if (xs === undefined) stageTimes.set(tpl, (xs = []));
        xs.push(t - c);
      }
    }
    console.log(`\nstages: first message of each subject per pod, ms after the pod's PodUpdate (median / p90 over ${created.size} pods):`);
    for (const [k, xs] of [...stageTimes].sort((a, b) => pct(a[1], 50) - pct(b[1], 50))) {
      if (xs.length < created.size / 2) continue;
      console.log(`  ${String(pct(xs, 50)).padStart(7)} / ${String(pct(xs, 90)).padStart(7)}  ${k}`);
    }
    // When a pod's events reach the bus, against when it was Running: whether the recorders keep up
    // (chaining each publish on the previous ack, a 1,000-pod burst's events trailed by up to 1.7 s).
    const eventLag: number[] = [];
    for (const [name, running] of node.runningAt) {
      const last = spy.lastSeen.get(node.uidOf.get(name) ?? '')?.get(`sl.${node.name}.events.{uid}`);
      if (last !== undefined) eventLag.push(last - running);
    }
    if (eventLag.length > 0) {
      console.log(
        `\neach pod's last event on the bus, ms after the pod was Running (median / p90 / max over ${eventLag.length} pods): ${fmt(pct(eventLag, 50), 0)} / ${fmt(pct(eventLag, 90), 0)} / ${fmt(Math.max(...eventLag), 0)}`,
      );
    }
    if (values.spans) await printSpanSummary(node.nats.url, node.name, PODS, 40, true);
    if (HOLD > 0) {
      // The steady state: the same pods held, nothing created or deleted; what the node spends per second.
      const held = new Map(counts);
      counts.clear();
      const holdCpu = cpuMeter(procs);
      const criH0 = await node.criCalls();
      const monoH0 = monotonicMicros();
      spy.recording = true;
      await new Promise((r) => setTimeout(r, HOLD * 1000));
      spy.recording = false;
      holdWindow = { from: monoH0, to: monotonicMicros() };
      const criH1 = await node.criCalls();
      console.log(`\nholding ${PODS} Running pods for ${HOLD} s, no churn: CPU % of one core by process`);
      const perProc = Object.entries(holdCpu().byProcess)
        .map(([name, s]) => [name, (100 * s) / HOLD] as const)
        .sort((a, b) => b[1] - a[1]);
      for (const [k, v] of perProc) console.log(`  ${k.padEnd(18)} ${fmt(v, 1).padStart(6)} %`);
      console.log(
        `  ${'total'.padEnd(18)} ${fmt(
          perProc.reduce((a, [, v]) => a + v, 0),
          1,
        ).padStart(6)} %`,
      );
      console.log('  bus messages per second by subject:');
      for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) if (v / HOLD >= 0.5) console.log(`  ${fmt(v / HOLD, 1).padStart(8)}  ${k}`);
      console.log('  CRI calls per second:');
      for (const [k, v] of criH1) {
        const d = (v - (criH0.get(k) ?? 0)) / HOLD;
        if (d > 0) console.log(`  ${fmt(d, 1).padStart(8)}  ${k}`);
      }
      counts.clear();
      for (const [k, v] of held) counts.set(k, v);
    }
    summary = {
      pods: PODS,
      workers: WORKERS,
      latencyMs: LATENCY,
      podsPerSec,
      load: [load0, loadAverage()],
      cpuMsPerPod: cpuMs,
      cpuMsPerPodToRunning: toRunningMs,
      kernelPerPod,
      idleCpuMsPerS,
      countedSeconds: windowS,
      rssMiB: Object.fromEntries(procs.map((p, i) => [p.name, { idle: rssIdle[i]!, afterBurst: rssAfter[i]! }])),
      messagesPerPod: Object.fromEntries([...counts].map(([k, v]) => [k, v / PODS])),
      criCallsPerPod: Object.fromEntries(criPerPod),
      rpc: rpcSummary(spy, PODS),
    };
  } finally {
    await spy.close();
    await node.stop();
  }
  if (summary !== undefined) {
    // With the node stopped, so that neither slows the other.
    const hop = await busHopCost();
    const messages = Object.values(summary.messagesPerPod).reduce((a, x) => a + x, 0);
    const floorMs = (messages * hop.pipelined.microsPerMessage) / 1000;
    const nats = summary.cpuMsPerPod['nats-server'];
    const price = (p: HopPrice): string =>
      `${fmt(p.microsPerHop.total)} µs of CPU (publisher ${fmt(p.microsPerHop.publisher)}, consumer ${fmt(p.microsPerHop.consumer)}, nats-server ${fmt(p.microsPerHop.natsServer)}), ${fmt(p.microsPerMessage)} µs per message`;
    console.log(
      `\nthe bus floor: a stream hop (a JetStream publish, its ack, the delivery, its ack: ${hop.messagesPerHop} messages of ${hop.payloadBytes} bytes) on a nats-server of its own costs, ` +
        `pipelined ${price(hop.pipelined)}; one at a time ${price(hop.sequential)}. ` +
        `At the pipelined price the burst's ${fmt(messages)} messages per pod cost ${fmt(floorMs, 2)} CPU ms per pod, which bounds ${machine().cpus} cores to ${fmt((machine().cpus * 1000) / floorMs, 0)} pods/s` +
        (nats === undefined ? '' : `; nats-server used ${fmt(nats)} ms per pod in the burst, ${fmt((1000 * nats) / messages)} µs per message`),
    );
    summary = { ...summary, busHop: hop };
  }
  if (profDir !== undefined && window !== undefined) {
    const top = Number(values.top);
    console.log(`\nCPU profiles over the burst (+3 s), CPU ms per pod (the main thread's samples; ${profDir}):`);
    const summaries = windowProfiles(profDir, window);
    printProfiles(summaries, PODS, 'pod', top, { files: true });
    if (holdWindow !== undefined) {
      const hw = holdWindow;
      console.log(`\nCPU profiles while holding the pods, CPU ms per second:`);
      printProfiles(windowProfiles(profDir, { ...window, from: hw.from, to: hw.to }), HOLD, 'second', top, { inclusive: true });
    }
    if (summary !== undefined) {
      const msPerPod = (ms: number): number => Math.round((1000 * ms) / PODS) / 1000;
      const perPod = (xs: ReadonlyArray<{ name: string; ms: number }>, n: number): Array<{ name: string; msPerPod: number }> =>
        xs.slice(0, n).map((x) => ({ name: x.name, msPerPod: msPerPod(x.ms) }));
      summary = {
        ...summary,
        profile: summaries.map(({ name, s }) => ({ process: name, msPerPod: msPerPod(s.busyMs), files: perPod(s.files, 8), functions: perPod(s.functions, top) })),
      };
    }
  }
  if (values.json !== undefined && summary !== undefined) writeProbeJson(values.json, values['splitlet-root'], summary);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
