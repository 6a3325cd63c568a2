/**
 * Where the deletion of a burst's pods spends its time and work, in counts that do not depend on
 * the machine's load: starts a fresh node, brings N static pods to Running, lets the node drain,
 * then deletes every manifest at once and waits until every pod's status is gone from `sl_status`
 * (the benchmark's `delete` row). Prints, per deleted pod, the bus messages by subject, the CRI
 * calls, the RPCs with their median and p90 latency, the CPU milliseconds of each process (counted
 * until the node drained again), and for each stage (the first message of a subject for a pod) the
 * times after the deletion at which the first, median and last pod reached it — the stage where the
 * spread opens is where the deletion is serialized — and the median time after the pod's REMOVE.
 *
 * With `--cpu-prof DIR`, every process profiles itself and the profiles are summarized over the
 * deletion: each process's busiest functions, in CPU ms per pod.
 *
 * Usage: node --import tsx test/bench/delete-probe.ts [--pods 200] [--pod-workers 2] [--splitlet-root DIR] [--json out.json]
 *        [--cpu-prof DIR] [--top 12] [--up-arg=--no-apiserver …] [--spans] [--trace I …] (print the deletion trace of pod probe-I; implies --spans)
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kvm } from '@nats-io/kv';
import { BusSpy } from './lib/bus-spy.ts';
import { monotonicMicros } from './lib/cpu-profiles.ts';
import { NodeUnderTest } from './lib/node-under-test.ts';
import {
  cpuProfileEnv,
  criCallsPerPod,
  printCpuMs,
  printCriCalls,
  printMessages,
  printProfiles,
  printRpcs,
  rpcSummary,
  windowProfiles,
  writeProbeJson,
} from './lib/probe-report.ts';
import { cpuSeconds, fmt, loadAverage, pct } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '200' },
    'pod-workers': { type: 'string', default: '2' },
    'splitlet-root': { type: 'string' },
    json: { type: 'string' },
    'cpu-prof': { type: 'string' },
    top: { type: 'string', default: '12' },
    'up-arg': { type: 'string', multiple: true, default: [] },
    spans: { type: 'boolean', default: false },
    trace: { type: 'string', multiple: true, default: [] },
  },
});
const PODS = Number(values.pods);
const WORKERS = Number(values['pod-workers']);
for (const [k, v] of [
  ['pods', PODS],
  ['pod-workers', WORKERS],
] as const) {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${k} must be a positive integer, got ${v}`);
}

/** The subject template of the REMOVE that starts a pod's deletion, and of its status key. */
const CONFIG_STAGE = 'sl.bench-node.config.file';
const STATUS_KEY_STAGE = '$KV.sl_status.bench-node.{uid}';

async function main(): Promise<void> {
  const load0 = loadAverage();
  const profDir = values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']);
  const node = await NodeUnderTest.start({
    ...cpuProfileEnv(profDir),
    podWorkers: WORKERS,
    maxPods: PODS + 100,
    spans: values.spans === true || values.trace.length > 0,
    upArgs: values['up-arg'],
    ...(values['splitlet-root'] !== undefined ? { splitletRoot: resolve(values['splitlet-root']) } : {}),
  });
  const spy = await BusSpy.start(node.nats.url, 'delete-probe');
  /** Pod name → the trace id of its REMOVE (config-source starts the deletion's trace). */
  const removeTraces = new Map<string, string>();
  const configSub = spy.connection.subscribe(`sl.${node.name}.config.file`, {
    callback: (_err, m) => {
      const u = m.json<{ op?: string; items?: Array<{ pod?: { metadata?: { name?: string } }; trace?: { traceparent?: string } }> }>();
      if (u.op !== 'REMOVE') return;
      for (const it of u.items ?? []) {
        const id = /^00-([0-9a-f]{32})-/.exec(it.trace?.traceparent ?? '')?.[1];
        if (id !== undefined && it.pod?.metadata?.name !== undefined) removeTraces.set(it.pod.metadata.name, id);
      }
    },
  });
  let window: { from: number; to: number; names: Map<number, string> } | undefined;
  let summary: Record<string, unknown> | undefined;
  try {
    const names: string[] = [];
    for (let i = 0; i < PODS; i++) {
      node.create(`probe-${i}`);
      names.push(`probe-${i}`);
    }
    await node.waitRunning(names, 120_000 + PODS * 500);
    const tRunning = Date.now();
    await node.waitDrained(120_000 + PODS * 200);
    console.log(`${PODS} pods Running, the node drained ${fmt((Date.now() - tRunning) / 1000)} s after the last; deleting`);

    const procs = node.processes();
    const cpu0 = procs.map((p) => cpuSeconds(p.pid));
    const cri0 = await node.criCalls();
    const loadDelete = loadAverage();
    spy.recording = true;
    const mono0 = monotonicMicros();
    const t0 = Date.now();
    for (const n of names) node.delete(n);
    await node.waitGone(120_000 + PODS * 500);
    const tGone = Date.now();
    // The rest of the work a deletion causes (mirror pods, events, spans) is counted until the node drained.
    const drainMs = await node.waitDrained(120_000 + PODS * 200);
    spy.recording = false;
    const mono1 = monotonicMicros();
    const cri1 = await node.criCalls();
    window = { from: mono0, to: mono1, names: new Map(procs.map((p) => [p.pid, p.name])) };
    const cpuMs: Record<string, number> = {};
    procs.forEach((p, i) => (cpuMs[p.name] = (1000 * (cpuSeconds(p.pid) - cpu0[i]!)) / PODS));
    const podsPerSec = (PODS * 1000) / (tGone - t0);
    // Mirror pods left in the embedded API server (bucket sl_api, keys pods.<namespace>.<name>; a
    // deleted object stays a while as a tombstone `{"o": …, "d": true}`): none should be once the
    // node drained and the deletions in flight (HTTP, not on the bus) ended — counted until none or 10 s.
    const apiKv = await new Kvm(spy.connection).open('sl_api');
    const countMirrors = async (): Promise<number> => {
      let n = 0;
      for await (const k of await apiKv.keys('pods.>')) {
        if (!k.endsWith(`-${node.name}`)) continue;
        const e = await apiKv.get(k);
        if (e !== null && e.operation === 'PUT' && e.json<{ d?: boolean }>().d !== true) n++;
      }
      return n;
    };
    let mirrorsLeft = await countMirrors();
    for (const until = Date.now() + 10_000; mirrorsLeft > 0 && Date.now() < until; mirrorsLeft = await countMirrors()) await new Promise((r) => setTimeout(r, 1000));

    console.log(`\n${PODS} pods deleted → gone in ${fmt((tGone - t0) / 1000, 2)} s: ${fmt(podsPerSec)} pods/s; the node drained ${fmt(drainMs / 1000)} s later`);
    console.log(`mirror pods left in the API server once drained (+ up to 10 s): ${mirrorsLeft}`);
    console.log(`load average before the node ${load0.join(' ')}, at the deletion ${loadDelete.join(' ')}, after ${loadAverage().join(' ')}`);
    printCpuMs('CPU ms per deleted pod by process (until drained):', cpuMs);
    printMessages('bus messages per deleted pod by subject', spy, PODS);
    const criPerPod = criCallsPerPod(cri0, cri1, PODS);
    printCriCalls('CRI calls per deleted pod by operation:', criPerPod);
    printRpcs('RPCs: count per deleted pod, median / p90 latency (ms):', spy, PODS);

    // Stages: when each pod first reached each subject, after the deletion (all manifests went at t0)
    // and after the pod's own REMOVE; the status key's last write is its deletion.
    const afterDelete = new Map<string, number[]>();
    const afterRemove = new Map<string, number[]>();
    const add = (m: Map<string, number[]>, k: string, x: number): void => {
      let xs = m.get(k);
      if (xs === undefined) m.set(k, (xs = []));
      xs.push(x);
    };
    let pods = 0;
    for (const [uid, f] of spy.firstSeen) {
      const removed = f.get(CONFIG_STAGE);
      if (removed === undefined) continue;
      pods++;
      for (const [stage, t] of f) {
        add(afterDelete, stage, t - t0);
        add(afterRemove, stage, t - removed);
      }
      const gone = spy.lastSeen.get(uid)?.get(STATUS_KEY_STAGE);
      if (gone !== undefined) {
        add(afterDelete, 'status key deleted', gone - t0);
        add(afterRemove, 'status key deleted', gone - removed);
      }
    }
    console.log(`\nstages of ${pods} pods, ms after the deletion: first pod / median / last pod — and median / p90 after the pod's REMOVE:`);
    const stages = [...afterDelete].filter(([, xs]) => xs.length >= pods / 2).sort((a, b) => pct(a[1], 50) - pct(b[1], 50));
    for (const [k, xs] of stages) {
      const r = afterRemove.get(k)!;
      console.log(
        `  ${String(Math.min(...xs)).padStart(6)} / ${String(pct(xs, 50)).padStart(6)} / ${String(Math.max(...xs)).padStart(6)}   ${String(pct(r, 50)).padStart(6)} / ${String(pct(r, 90)).padStart(6)}  ${k}`,
      );
    }
    summary = {
      pods: PODS,
      workers: WORKERS,
      podsPerSec,
      mirrorsLeft,
      load: [load0, loadDelete, loadAverage()],
      cpuMsPerPod: cpuMs,
      messagesPerPod: Object.fromEntries([...spy.counts].map(([k, v]) => [k, v / PODS])),
      criCallsPerPod: Object.fromEntries(criPerPod),
      rpc: rpcSummary(spy, PODS),
      stages: Object.fromEntries(stages.map(([k, xs]) => [k, { first: Math.min(...xs), p50: pct(xs, 50), last: Math.max(...xs), afterRemoveP50: pct(afterRemove.get(k)!, 50) }])),
    };
    // The deletion traces of the pods asked for (`splitlet trace --latest`), while the node still runs.
    const cli = resolve(values['splitlet-root'] ?? resolve(import.meta.dirname, '..', '..'), 'services/cli/bin/splitlet.js');
    for (const i of values.trace) {
      const traceId = removeTraces.get(`probe-${i}-${node.name}`);
      if (traceId === undefined) {
        console.log(`\nno REMOVE seen for probe-${i}`);
        continue;
      }
      const r = spawnSync(process.execPath, [cli, 'trace', '--trace-id', traceId], { env: { ...process.env, SPLITLET_STATE_DIR: node.stateDir }, encoding: 'utf8' });
      console.log(`\ntrace of the deletion of probe-${i}:\n${r.stdout}${r.stderr}`);
    }
  } finally {
    configSub.unsubscribe();
    await spy.close();
    await node.stop();
  }
  if (profDir !== undefined && window !== undefined) {
    console.log(`\nCPU profiles over the deletion (until drained), CPU ms per pod (the main thread's samples; ${profDir}):`);
    printProfiles(windowProfiles(profDir, window), PODS, 'pod', Number(values.top), { inclusive: true });
  }
  if (values.json !== undefined && summary !== undefined) writeProbeJson(values.json, values['splitlet-root'], summary);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
