/**
 * Control-plane benchmark on the simulated runtime at zero latency (DESIGN.md §7), in one run:
 *
 * 1. the JetStream write rate of the very nats-server splitlet uses (the bound),
 * 2. created → Running-reported latency p50/p99 at a steady arrival rate,
 * 3. sustained pods/s to Running for a burst,
 * 4. the messages and KV writes one pod costs (create → Running → delete → gone),
 * 5. the ratio of the achieved rate to the bound (JetStream writes/s ÷ writes per pod).
 *
 * Usage: npm run bench [-- --rate 5 --seconds 20 --burst 200 --pod-workers 2]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { startNatsServer } from '@splitlet/testkit';
import { waitReady } from '../integration/harness.ts';
import { Buckets, Keys, PodStatusRecord, Streams } from '@splitlet/api';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '20' },
    burst: { type: 'string', default: '200' },
    'pod-workers': { type: 'string', default: '2' },
    spans: { type: 'boolean', default: false },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const BURST = Number(values.burst);
const WORKERS = Number(values['pod-workers']);
const SPANS = values.spans === true;
const NODE = 'bench-node';
const root = resolve(import.meta.dirname, '..', '..');

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

const fmt = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

async function jetstreamWriteRate(url: string): Promise<{ jsPerSec: number; kvPerSec: number }> {
  const nc = await connect({ servers: url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'] });
  const js = jetstream(nc);
  const payload = new Uint8Array(1024);
  const window = 256;
  const run = async (op: (i: number) => Promise<unknown>): Promise<number> => {
    const end = Date.now() + 3000;
    let n = 0;
    const inflight = new Set<Promise<unknown>>();
    while (Date.now() < end) {
      const p = op(n++).finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= window) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    return n / 3;
  };
  const jsPerSec = await run((i) => js.publish(`bench.${i % 64}`, payload));
  const kv = await new Kvm(nc).create('bench_kv');
  const kvPerSec = await run((i) => kv.put(`k.${i % 1024}`, payload));
  await jsm.streams.delete('BENCH');
  await kv.destroy();
  await nc.close();
  return { jsPerSec, kvPerSec };
}

/** Total stored-message sequence across splitlet's streams and buckets: every write bumps one. */
async function writeCounters(url: string): Promise<{ messages: number; kvWrites: number }> {
  const nc = await connect({ servers: url });
  const jsm = await jetstreamManager(nc);
  let messages = 0;
  let kvWrites = 0;
  for await (const s of jsm.streams.list()) {
    if (s.config.name.startsWith('KV_sl_')) kvWrites += s.state.last_seq;
    else if (Object.values(Streams).includes(s.config.name as never)) messages += s.state.last_seq;
  }
  await nc.close();
  return { messages, kvWrites };
}

function manifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }] },
  });
}

async function main(): Promise<void> {
  const nats = await startNatsServer();
  const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-bench-'));
  const manifests = join(stateDir, 'manifests');
  console.log(`splitlet benchmark — sim-runtime, zero latency, ${WORKERS} pod-worker(s), span copies on the bus ${SPANS ? 'on' : 'off (--spans to include them)'}, nats-server at ${nats.url}`);
  const bound = await jetstreamWriteRate(nats.url);
  console.log(`JetStream on this server: ${fmt(bound.jsPerSec, 0)} persisted publishes/s, ${fmt(bound.kvPerSec, 0)} KV puts/s (1 KiB, 256 in flight)`);

  const child = spawn(process.execPath, [join(root, 'services/cli/bin/splitlet.js'), 'up', '--runtime', 'sim', '--node-name', NODE, '--pod-workers', String(WORKERS)], {
    env: { ...process.env, NATS_URL: nats.url, SPLITLET_STATE_DIR: stateDir, LOG_LEVEL: 'warn', NODE_MAX_PODS: String(BURST + 1000), PUBLISH_SPANS: String(SPANS) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await nats.stop();
    rmSync(stateDir, { recursive: true, force: true });
  };
  try {
    // Wait for readiness.
    await waitReady(stateDir, 60_000);

    // Watch statuses: first time each pod is reported Running, and when it is gone.
    const nc = await connect({ servers: nats.url });
    const kv = await new Kvm(nc).open(Buckets.status);
    const runningAt = new Map<string, number>();
    const present = new Set<string>();
    const watch = await kv.watch({ key: Keys.nodePrefix(NODE), include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const e of watch) {
        if (e.operation !== 'PUT') {
          present.delete(e.key);
          continue;
        }
        const r = PodStatusRecord.safeParse(e.json());
        if (!r.success) continue;
        present.add(e.key);
        const name = r.data.pod.metadata.annotations?.['splitlet.bench/name'] ?? r.data.name.replace(`-${NODE}`, '');
        if (r.data.status.phase === 'Running' && !runningAt.has(name)) runningAt.set(name, Date.now());
      }
    })();

    const waitAll = async (names: string[], timeoutMs: number): Promise<void> => {
      const end = Date.now() + timeoutMs;
      while (names.some((n) => !runningAt.has(n))) {
        if (Date.now() > end) throw new Error(`${names.filter((n) => !runningAt.has(n)).length} pods not Running after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    // 1) steady arrival rate
    const before = await writeCounters(nats.url);
    const created = new Map<string, number>();
    const steady: string[] = [];
    const total = Math.round(RATE * SECONDS);
    const t0 = Date.now();
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const name = `steady-${i}`;
      created.set(name, Date.now());
      writeFileSync(join(manifests, `${name}.json`), manifest(name));
      steady.push(name);
    }
    await waitAll(steady, 60_000);
    const lat = steady.map((n) => runningAt.get(n)! - created.get(n)!);
    console.log(`steady ${RATE} pods/s for ${SECONDS} s (${total} pods): created → Running reported p50 ${fmt(pct(lat, 50), 0)} ms, p99 ${fmt(pct(lat, 99), 0)} ms, max ${fmt(Math.max(...lat), 0)} ms`);
    const afterSteady = await writeCounters(nats.url);

    // 2) cost per pod of the delete path: remove the steady pods and wait until they are gone.
    for (const n of steady) rmSync(join(manifests, `${n}.json`));
    const goneDeadline = Date.now() + 120_000;
    while (present.size > 0 && Date.now() < goneDeadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 3000));
    const afterDelete = await writeCounters(nats.url);
    const perPodMsgsUp = (afterSteady.messages - before.messages) / total;
    const perPodKvUp = (afterSteady.kvWrites - before.kvWrites) / total;
    const perPodMsgs = (afterDelete.messages - before.messages) / total;
    const perPodKv = (afterDelete.kvWrites - before.kvWrites) / total;
    console.log(`per pod, create → Running: ${fmt(perPodMsgsUp)} stream messages + ${fmt(perPodKvUp)} KV writes`);
    console.log(`per pod, create → Running → deleted (incl. housekeeping and relist marks in that window): ${fmt(perPodMsgs)} stream messages + ${fmt(perPodKv)} KV writes`);

    // 3) burst
    const burst: string[] = [];
    const tb = Date.now();
    for (let i = 0; i < BURST; i++) {
      const name = `burst-${i}`;
      created.set(name, Date.now());
      writeFileSync(join(manifests, `${name}.json`), manifest(name));
      burst.push(name);
    }
    await waitAll(burst, 300_000);
    const burstMs = Math.max(...burst.map((n) => runningAt.get(n)!)) - tb;
    const burstRate = (BURST * 1000) / burstMs;
    const burstLat = burst.map((n) => runningAt.get(n)! - created.get(n)!);
    console.log(`burst of ${BURST}: all Running in ${fmt(burstMs / 1000, 2)} s = ${fmt(burstRate)} pods/s (latency p50 ${fmt(pct(burstLat, 50), 0)} ms, p99 ${fmt(pct(burstLat, 99), 0)} ms)`);
    const writesPerPod = perPodMsgsUp + perPodKvUp;
    const boundRate = bound.jsPerSec / writesPerPod;
    console.log(`bound: ${fmt(bound.jsPerSec, 0)} writes/s ÷ ${fmt(writesPerPod)} writes per pod = ${fmt(boundRate)} pods/s; achieved ${fmt(burstRate)} pods/s = ${fmt((100 * burstRate) / boundRate)}% of the bound`);
    for (const n of burst) rmSync(join(manifests, `${n}.json`));
    const end = Date.now() + 120_000;
    while (present.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    watch.stop();
    await nc.close();
  } finally {
    await stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
