/**
 * One splitlet node for a benchmark: its own nats-server and state dir, `splitlet up --runtime sim`,
 * a watch of `sl_status` (when each pod was first reported Running, which pods are present), and
 * the pids of every process (instance.json + the nats-server) for RSS and CPU.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Buckets, DEFAULT_PARTITIONS, Keys, partitionOf, PodStatusRecord, Streams } from '@splitlet/api';
import { startNatsServer, type NatsServer } from '@splitlet/testkit';
import { waitReady } from '../../integration/harness.ts';

const ownRoot = resolve(import.meta.dirname, '..', '..', '..');

/** How to start the node. */
export interface NodeOptions {
  readonly podWorkers: number;
  /** SIM_LATENCY_MS of the simulator (every CRI call). @default 0 */
  readonly simLatencyMs?: number;
  readonly maxPods: number;
  readonly spans: boolean;
  /** The checkout whose build runs (its services/cli/bin/splitlet.js), to compare two builds. @default this one */
  readonly splitletRoot?: string;
  /** Extra environment of `splitlet up` and so of every process (e.g. NODE_OPTIONS=--cpu-prof). */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra arguments of `splitlet up` (e.g. `--no-apiserver`, to compare with a build that had none). */
  readonly upArgs?: readonly string[];
}

/** A pod manifest the benchmark applies: one busybox container that exits at once on TERM. */
function manifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }] },
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The nodes started (or starting) and not yet stopped: an interrupted benchmark stops them before it exits. */
const live = new Set<{ stop(): Promise<void> }>();
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping ${live.size} node(s) under test`);
    void Promise.allSettled([...live].map((n) => n.stop())).then(() => process.exit(code));
  });
}

/** A running node under test. Call {@link NodeUnderTest.stop} in a finally. */
export class NodeUnderTest {
  readonly name = 'bench-node';
  /** First time each pod (by manifest name) was reported Running. */
  readonly runningAt = new Map<string, number>();
  /** When each pod's manifest was written. */
  readonly createdAt = new Map<string, number>();
  /** Each pod's UID (by manifest name), from its status records. */
  readonly uidOf = new Map<string, string>();
  /** Status keys present in sl_status. */
  readonly present = new Set<string>();
  #stopped = false;

  private constructor(
    readonly nats: NatsServer,
    readonly stateDir: string,
    readonly child: ChildProcess,
    readonly nc: NatsConnection,
  ) {}

  static async start(o: NodeOptions): Promise<NodeUnderTest> {
    const nats = await startNatsServer();
    const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-bench-'));
    const child = spawn(
      process.execPath,
      [
        join(o.splitletRoot ?? ownRoot, 'services/cli/bin/splitlet.js'),
        'up',
        '--runtime',
        'sim',
        '--node-name',
        'bench-node',
        '--pod-workers',
        String(o.podWorkers),
        ...(o.upArgs ?? []),
      ],
      {
        env: {
          ...process.env,
          NATS_URL: nats.url,
          SPLITLET_STATE_DIR: stateDir,
          LOG_LEVEL: 'warn',
          NODE_MAX_PODS: String(o.maxPods),
          PUBLISH_SPANS: String(o.spans),
          SIM_LATENCY_MS: String(o.simLatencyMs ?? 0),
          ...o.env,
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    let exited: string | undefined;
    child.once('exit', (code, sig) => (exited = `splitlet up exited (${code ?? sig})`));
    const starting = {
      async stop(): Promise<void> {
        live.delete(starting);
        if (exited === undefined) {
          const gone = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await gone;
        }
        await nats.stop();
        rmSync(stateDir, { recursive: true, force: true });
      },
    };
    live.add(starting);
    try {
      await waitReady(stateDir, 120_000, () => exited);
    } catch (e) {
      await starting.stop();
      throw e;
    }
    live.delete(starting);
    const nc = await connect({ servers: nats.url });
    const n = new NodeUnderTest(nats, stateDir, child, nc);
    live.add(n);
    try {
      await n.#waitBalanced(o.podWorkers);
      await n.#watch();
    } catch (e) {
      await n.stop();
      throw e;
    }
    return n;
  }

  /**
   * Waits until the pod-workers share the partitions (each holds at most ⌈P / N⌉, all P held): the
   * first replica up takes every partition and hands the others theirs over the next balance
   * rounds, and a burst started meanwhile would measure the handover, not the replicas.
   */
  async #waitBalanced(podWorkers: number): Promise<void> {
    const kv = await new Kvm(this.nc).open(Buckets.leases);
    const share = Math.ceil(DEFAULT_PARTITIONS / podWorkers);
    const deadline = Date.now() + 60_000;
    let held = new Map<string, number>();
    while (Date.now() < deadline) {
      held = new Map();
      for (const holder of await this.#leaseHolders(kv)) {
        if (holder !== undefined) held.set(holder, (held.get(holder) ?? 0) + 1);
      }
      const total = [...held.values()].reduce((a, b) => a + b, 0);
      if (held.size === podWorkers && total === DEFAULT_PARTITIONS && [...held.values()].every((c) => c <= share)) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the ${podWorkers} pod-workers did not share the ${DEFAULT_PARTITIONS} partitions within 60 s: ${JSON.stringify(Object.fromEntries(held))}`);
  }

  /** The holder of each partition's lease (index: partition), undefined when none holds it. */
  async #leaseHolders(leases: KV): Promise<Array<string | undefined>> {
    const holders: Array<string | undefined> = [];
    for (let pp = 0; pp < DEFAULT_PARTITIONS; pp++) {
      const e = await leases.get(Keys.lease(this.name, pp));
      holders.push(e !== null && e.operation === 'PUT' ? e.json<{ holder: string }>().holder : undefined);
    }
    return holders;
  }

  async #watch(): Promise<void> {
    const kv = await new Kvm(this.nc).open(Buckets.status);
    const watch = await kv.watch({ key: Keys.nodePrefix(this.name), include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const e of watch) {
        if (e.operation !== 'PUT') {
          this.present.delete(e.key);
          continue;
        }
        const r = PodStatusRecord.safeParse(e.json());
        if (!r.success) continue;
        this.present.add(e.key);
        const name = r.data.name.replace(`-${this.name}`, '');
        this.uidOf.set(name, r.data.uid);
        if (r.data.status.phase === 'Running' && !this.runningAt.has(name)) this.runningAt.set(name, Date.now());
      }
    })();
  }

  /**
   * How the pods named `names` split between the pod-workers: per lease holder, the pods of the
   * partitions it holds now and when the last of them was Running (ms after `t0`).
   */
  async podsByWorker(names: readonly string[], t0: number): Promise<Map<string, { pods: number; lastRunningMs: number }>> {
    const holders = await this.#leaseHolders(await new Kvm(this.nc).open(Buckets.leases));
    const out = new Map<string, { pods: number; lastRunningMs: number }>();
    for (const n of names) {
      const uid = this.uidOf.get(n);
      const holder = uid === undefined ? '?' : (holders[partitionOf(uid, DEFAULT_PARTITIONS)] ?? '-');
      const w = out.get(holder) ?? { pods: 0, lastRunningMs: 0 };
      w.pods++;
      w.lastRunningMs = Math.max(w.lastRunningMs, (this.runningAt.get(n) ?? t0) - t0);
      out.set(holder, w);
    }
    return out;
  }

  /** Writes the pod's manifest (the file source picks it up). */
  create(name: string): void {
    this.createdAt.set(name, Date.now());
    writeFileSync(join(this.stateDir, 'manifests', `${name}.json`), manifest(name));
  }

  /** Removes the pod's manifest. */
  delete(name: string): void {
    rmSync(join(this.stateDir, 'manifests', `${name}.json`));
  }

  /** Waits until every pod is reported Running; throws after `timeoutMs`. */
  async waitRunning(names: readonly string[], timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (names.some((n) => !this.runningAt.has(n))) {
      if (Date.now() > end) throw new Error(`${names.filter((n) => !this.runningAt.has(n)).length} of ${names.length} pods not Running after ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  /** Waits until no pod status is left; throws after `timeoutMs`. */
  async waitGone(timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (this.present.size > 0) {
      if (Date.now() > end) throw new Error(`${this.present.size} pod statuses still present after ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  /**
   * Waits until the node has worked off what it was given: every consumer of splitlet's streams has
   * nothing pending and nothing unacknowledged, and status-manager has no pod status sync to the API
   * server running or waiting for its kubeAPIQPS token, twice in a row half a second apart (the events
   * and statuses of a burst are reported at the kubelet's eventRecordQPS and kubeAPIQPS, well after
   * its last pod is Running). Returns the milliseconds waited; throws after `timeoutMs`.
   */
  async waitDrained(timeoutMs: number): Promise<number> {
    const jsm = await jetstreamManager(this.nc);
    const t0 = Date.now();
    let quietSamples = 0;
    while (quietSamples < 2) {
      if (Date.now() - t0 > timeoutMs) throw new Error(`the node's consumers still had work after ${timeoutMs} ms`);
      // The metric first: while status-manager reports (most of the wait), the consumers are not
      // listed — each listing is one JetStream API request per stream, counted in the node's
      // nats-server CPU and in the burst probe's messages.
      let busy = (await this.metric('status-manager', 'splitlet_status_api_syncs_pending')) > 0;
      for (const stream of busy ? [] : Object.values(Streams)) {
        for await (const c of jsm.consumers.list(stream)) {
          if (c.num_pending + c.num_ack_pending > 0) busy = true;
        }
      }
      quietSamples = busy ? 0 : quietSamples + 1;
      await sleep(500);
    }
    return Date.now() - t0;
  }

  /** Every process of the node: splitlet's (from instance.json) and the nats-server. */
  processes(): Array<{ name: string; pid: number }> {
    return [...this.#splitletProcesses().map((p) => ({ name: p.name, pid: p.pid })), { name: 'nats-server', pid: this.nats.pid }];
  }

  /** splitlet's processes as instance.json lists them now (a restarted process has a new pid and port). */
  #splitletProcesses(): Array<{ name: string; pid: number; healthPort?: number }> {
    return (JSON.parse(readFileSync(join(this.stateDir, 'instance.json'), 'utf8')) as { processes: Array<{ name: string; pid: number; healthPort?: number }> }).processes;
  }

  /** The text of process `name`'s /metrics. */
  async #metricsText(name: string): Promise<string> {
    const port = this.#splitletProcesses().find((p) => p.name === name)?.healthPort;
    if (port === undefined) throw new Error(`${name} has no health port in instance.json`);
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`${name} /metrics: HTTP ${res.status}`);
    return res.text();
  }

  /** The sum of every series of `metric` (a counter, or a histogram's `_count`) over the processes whose name starts with `prefix`. */
  async metricSum(prefix: string, metric: string): Promise<number> {
    let sum = 0;
    for (const p of this.#splitletProcesses().filter((x) => x.name.startsWith(prefix))) {
      for (const line of (await this.#metricsText(p.name)).split('\n')) {
        if (line.startsWith(`${metric} `) || line.startsWith(`${metric}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  /** The value of process `name`'s unlabelled metric `metric`; 0 when it has none (e.g. status-manager without an API server). */
  async metric(name: string, metric: string): Promise<number> {
    const line = (await this.#metricsText(name)).split('\n').find((l) => l.startsWith(`${metric} `));
    return line === undefined ? 0 : Number(line.slice(metric.length + 1));
  }

  /** Each process's heap trims so far (libs/service heap-trimmer: `splitlet_heap_trim_duration_seconds` of its /metrics): how many, and the ms they blocked it; NaN for a process without a trimmer. */
  async heapTrims(): Promise<Map<string, { count: number; ms: number }>> {
    const out = new Map<string, { count: number; ms: number }>();
    for (const p of this.#splitletProcesses()) {
      if (p.healthPort === undefined) continue;
      try {
        const text = await this.#metricsText(p.name);
        const count = Number(/^splitlet_heap_trim_duration_seconds_count(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
        const sum = Number(/^splitlet_heap_trim_duration_seconds_sum(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
        out.set(p.name, { count, ms: sum * 1000 });
      } catch (e) {
        console.error(`${p.name}: /metrics: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    return out;
  }

  /** The CRI calls cri-adapter made so far, by method (`kubelet_runtime_operations_total{operation_type}` from its /metrics). */
  async criCalls(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const m of (await this.#metricsText('cri-adapter')).matchAll(/^kubelet_runtime_operations_total\{[^}]*\boperation_type="([^"]+)"[^}]*\} (\S+)$/gm))
      out.set(m[1]!, Number(m[2]));
    return out;
  }

  /** Total stored-message sequence across splitlet's streams and buckets: every write bumps one. */
  async writeCounters(): Promise<{ messages: number; kvWrites: number }> {
    const jsm = await jetstreamManager(this.nc);
    let messages = 0;
    let kvWrites = 0;
    for await (const s of jsm.streams.list()) {
      if (s.config.name.startsWith('KV_sl_')) kvWrites += s.state.last_seq;
      else if (Object.values(Streams).includes(s.config.name as never)) messages += s.state.last_seq;
    }
    return { messages, kvWrites };
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    live.delete(this);
    await this.nc.close().catch(() => undefined);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      await exited;
    }
    await this.nats.stop();
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}
