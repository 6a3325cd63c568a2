/**
 * Container garbage collection against the in-process CRI simulator: the case tables of the
 * kubelet's kuberuntime_gc_test.go (TestContainerGC, TestSandboxGC, TestPodLogDirectoryGC), plus
 * container log removal, UNKNOWN containers, the per-pod lock and the pure helpers.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { trace } from '@opentelemetry/api';
import type { ContainerGCPolicy } from '@splitlet/api';
import type { Container as CriContainer, CriInput, PodSandbox, PodSandboxConfig } from '@splitlet/cri';
import { createFakeRuntime, type FakeRuntimeService } from '@splitlet/cri/testing';
import { Backoff, KubeletPeriods } from '@splitlet/kube';
import { KeyedMutex } from '@splitlet/service';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, makeTempDir, type TempDir } from '@splitlet/testkit';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { ImageManager } from '../src/images/image-manager.js';
import { aggregateErrors } from '../src/kuberuntime/aggregate-errors.js';
import {
  ContainerGC,
  parsePodUIDFromLogsDirectory,
  referencedSandboxes,
  sandboxesToRemove,
  type GarbageCollectInput,
  type GarbageCollectResult,
} from '../src/kuberuntime/container-gc.js';
import { createLifecycleHandlerRunner } from '../src/kuberuntime/lifecycle-handlers.js';
import { noopKubeRuntimeMetrics } from '../src/kuberuntime/metrics.js';
import { KubeGenericRuntimeManager } from '../src/kuberuntime/runtime-manager.js';
import { RuntimeStatusReader } from '../src/kuberuntime/runtime-status-reader.js';
import type { PodEvent } from '../src/ports.js';
import { testPrograms } from './programs.js';

/** Error logs of the GC, for the kubelet's texts. */
const logLines: string[] = [];
const logger = createLogger({ service: 'test', level: 'error', stream: { write: (l: string) => void logLines.push(l) } });
const tracer = trace.getTracer('test');
const KUBELET_POLICY: ContainerGCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };
const POD_UID = 'io.kubernetes.pod.uid';

type SimState = 'exited' | 'running' | 'created';

/** A CRI simulator with pods laid out as the kubelet would, and a ContainerGC over it. */
class World {
  readonly sim: FakeRuntimeService;
  readonly logs: TempDir;
  readonly clock: FakeClock;
  readonly events: PodEvent[] = [];
  readonly locks = new KeyedMutex();
  readonly gc: ContainerGC;
  /** Container ids reported in state UNKNOWN (the simulator never produces it on its own). */
  readonly unknown = new Set<string>();
  readonly #pods = new Map<string, CriInput<PodSandboxConfig>>();
  #seq = 0;

  constructor(logs: TempDir) {
    this.logs = logs;
    this.sim = createFakeRuntime({ programs: testPrograms });
    // GC runs a minute after everything was created (MinAge cases move the clock themselves).
    this.clock = new FakeClock(Date.now() + 60_000);
    const unknown = this.unknown;
    const sim = this.sim;
    const runtime = new Proxy(sim, {
      get(target, prop, receiver) {
        const v: unknown = Reflect.get(target, prop, receiver);
        if (typeof v !== 'function') return v;
        if (prop === 'ListContainers') {
          return async (req: Parameters<FakeRuntimeService['ListContainers']>[0]) => {
            const r = await target.ListContainers(req);
            return { containers: r.containers.map((c) => (unknown.has(c.id) ? { ...c, state: 'CONTAINER_UNKNOWN' } : c)) };
          };
        }
        return (v as (...a: unknown[]) => unknown).bind(target);
      },
    });
    const recorder = { record: (e: PodEvent) => this.events.push(e) };
    const nodeFiles = createNodeFiles('');
    const manager = new KubeGenericRuntimeManager({
      runtime,
      images: runtime,
      imageManager: new ImageManager({
        images: runtime,
        recorder,
        clock: this.clock,
        backoff: new Backoff({ initialMs: KubeletPeriods.imageBackOffInitialMs, maxMs: KubeletPeriods.imageBackOffMaxMs, clock: this.clock }),
        metrics: noopKubeRuntimeMetrics,
        logger,
        tracer,
      }),
      statusReader: new RuntimeStatusReader(runtime, createNodeFiles('')),
      handlers: createLifecycleHandlerRunner(runtime),
      recorder,
      nodeFiles: createNodeFiles(''),
      logFiles: createNodeFiles(''),
      clock: this.clock,
      crashLoopBackoff: Backoff.crashLoop(this.clock),
      metrics: noopKubeRuntimeMetrics,
      settings: {
        sandbox: { podLogDir: logs.path, dns: { clusterDns: [], clusterDomain: '', hasResolvConf: false } },
        runtimeRequestTimeoutMs: 10_000,
        memoryCapacityBytes: 8 * 1024 ** 3,
        nodeAllocatable: { milliCpu: 2000, memoryBytes: 8 * 1024 ** 3 },
        hostIPs: [],
      },
      logger,
      tracer,
    });
    this.gc = new ContainerGC({ runtime, manager, logFiles: nodeFiles, podLogDir: logs.path, clock: this.clock, logger, tracer });
  }

  uid(pod: string): string {
    return `uid-${pod}`;
  }

  logDir(pod: string): string {
    return join(this.logs.path, `default_${pod}_${this.uid(pod)}`);
  }

  /** A sandbox of `pod` (created now, so newer than the pod's earlier sandboxes). */
  async sandbox(pod: string, state: 'ready' | 'notready' = 'ready'): Promise<string> {
    const config: CriInput<PodSandboxConfig> = {
      metadata: { name: pod, namespace: 'default', uid: this.uid(pod), attempt: this.#seq++ },
      hostname: pod,
      logDirectory: this.logDir(pod),
      labels: { [POD_UID]: this.uid(pod), 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': 'default' },
    };
    mkdirSync(this.logDir(pod), { recursive: true });
    const { podSandboxId } = await this.sim.RunPodSandbox({ config });
    this.#pods.set(pod, config);
    if (state === 'notready') await this.sim.StopPodSandbox({ podSandboxId });
    return podSandboxId;
  }

  /** A container of `pod` in its newest sandbox, created now; `exited` ones ran `echo <attempt>; exit 1`. */
  async container(pod: string, name: string, state: SimState, sandboxId?: string): Promise<string> {
    const config = this.#pods.get(pod);
    assert.ok(config !== undefined, `no sandbox for ${pod}`);
    const sb =
      sandboxId ??
      (await this.sim.ListPodSandbox({ filter: { labelSelector: { [POD_UID]: this.uid(pod) } } })).items.sort((a, b) => (BigInt(b.createdAt) > BigInt(a.createdAt) ? 1 : -1))[0]!
        .id;
    const attempt = this.#seq++;
    mkdirSync(join(this.logDir(pod), name), { recursive: true });
    const { containerId } = await this.sim.CreateContainer({
      podSandboxId: sb,
      config: {
        metadata: { name, attempt },
        image: { image: 'busybox:1.36' },
        command: state === 'running' ? ['sleep', '3600'] : ['sh', '-c', `echo ${attempt}; exit 1`],
        logPath: join(name, `${attempt}.log`),
        labels: { [POD_UID]: this.uid(pod), 'io.kubernetes.container.name': name, 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': 'default' },
      },
      sandboxConfig: config,
    });
    if (state === 'created') return containerId;
    await this.sim.StartContainer({ containerId });
    if (state === 'exited') {
      await eventually(async () => (await this.sim.ContainerStatus({ containerId })).status?.state === 'CONTAINER_EXITED', { message: `${containerId} exits` });
    }
    return containerId;
  }

  /** Container ids still in the runtime. */
  async containerIds(): Promise<string[]> {
    return (await this.sim.ListContainers({})).containers.map((c) => c.id).sort();
  }

  async sandboxIds(): Promise<string[]> {
    return (await this.sim.ListPodSandbox({})).items.map((s) => s.id).sort();
  }

  /** One run; `keep` lists the pods whose content must stay (default: every pod). */
  run(opts: { policy?: ContainerGCPolicy; allSourcesReady?: boolean; keep?: readonly string[] } = {}): Promise<GarbageCollectResult> {
    const keep = new Set((opts.keep ?? [...this.#pods.keys()]).map((p) => this.uid(p)));
    const allSourcesReady = opts.allSourcesReady ?? true;
    const input: GarbageCollectInput = {
      policy: opts.policy ?? KUBELET_POLICY,
      allSourcesReady,
      shouldPodContentBeRemoved: (uid) => allSourcesReady && !keep.has(uid),
      withPodLock: (uid, fn) => this.locks.run(uid, fn),
    };
    return this.gc.garbageCollect(input);
  }
}

describe('ContainerGC', () => {
  let logs: TempDir;
  let w: World;
  beforeEach(async () => {
    logs = await makeTempDir('container-gc-');
    w = new World(logs);
  });
  afterEach(async () => {
    await w.sim.close();
    await logs.cleanup();
  });

  describe('containers (TestContainerGC)', () => {
    interface Case {
      name: string;
      /** Containers in creation order (oldest first): pod, container name, state. */
      containers: Array<[pod: string, name: string, state: SimState]>;
      policy?: ContainerGCPolicy;
      allSourcesReady?: boolean;
      /** Pods whose content must stay. @default every pod */
      keep?: string[];
      /** Sandbox state per pod. @default ready */
      notReady?: string[];
      /** Indexes into `containers` that must remain. */
      remain: number[];
      /** Move the GC's clock (ms) relative to the default "a minute later". */
      clockShiftMs?: number;
    }
    const cases: Case[] = [
      {
        name: 'the oldest dead containers are removed when the per-pod-container limit is exceeded',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'exited'],
        ],
        remain: [2],
      },
      {
        name: 'running containers are never removed; the newest dead one per name is kept',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'running'],
        ],
        remain: [1, 2],
      },
      {
        name: 'the limit applies per (pod UID, container name)',
        containers: [
          ['foo', 'a', 'exited'],
          ['foo', 'b', 'exited'],
          ['foo', 'a', 'exited'],
          ['bar', 'a', 'exited'],
          ['foo', 'b', 'exited'],
          ['bar', 'a', 'exited'],
        ],
        remain: [2, 4, 5],
      },
      {
        name: 'a created container that never ran is evictable',
        containers: [
          ['foo', 'main', 'created'],
          ['foo', 'main', 'exited'],
        ],
        remain: [1],
      },
      {
        name: 'no container is removed when neither limit is set',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'exited'],
          ['bar', 'main', 'exited'],
        ],
        policy: { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 },
        remain: [0, 1, 2],
      },
      {
        name: 'recently created containers are not removed (MinAge)',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'exited'],
        ],
        policy: { minAgeMs: 3_600_000, maxPerPodContainer: 1, maxContainers: -1 },
        remain: [0, 1],
      },
      {
        name: 'containers older than MinAge are removed',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo', 'main', 'exited'],
        ],
        policy: { minAgeMs: 3_600_000, maxPerPodContainer: 1, maxContainers: -1 },
        clockShiftMs: 2 * 3_600_000,
        remain: [1],
      },
      {
        name: 'every dead container goes when the max container limit is 0',
        containers: [
          ['foo', 'main', 'exited'],
          ['bar', 'main', 'exited'],
          ['bar', 'side', 'running'],
        ],
        policy: { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 0 },
        remain: [2],
      },
      {
        name: 'max containers is shared evenly per (pod UID, container name)',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo1', 'main', 'exited'],
          ['foo2', 'main', 'exited'],
          ['foo', 'main', 'exited'],
          ['foo1', 'main', 'exited'],
          ['foo2', 'main', 'exited'],
          ['foo', 'main', 'exited'],
          ['foo1', 'main', 'exited'],
          ['foo2', 'main', 'exited'],
        ],
        policy: { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 6 },
        remain: [3, 4, 5, 6, 7, 8],
      },
      {
        name: 'max containers keeps one per unit, then the newest overall',
        containers: [
          ['foo', 'main', 'exited'],
          ['foo1', 'main', 'exited'],
          ['foo2', 'main', 'exited'],
          ['foo', 'main', 'exited'],
          ['foo1', 'main', 'exited'],
          ['foo2', 'main', 'exited'],
        ],
        policy: { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 2 },
        remain: [4, 5],
      },
      {
        name: 'every dead container of a deleted pod is removed once all sources are ready',
        containers: [
          ['gone', 'main', 'exited'],
          ['gone', 'side', 'exited'],
          ['stay', 'main', 'exited'],
          ['stay', 'main', 'exited'],
        ],
        keep: ['stay'],
        notReady: ['gone'],
        remain: [3],
      },
      {
        name: 'a deleted pod keeps its newest dead containers while the sources are not all ready',
        containers: [
          ['gone', 'main', 'exited'],
          ['gone', 'main', 'exited'],
          ['gone', 'side', 'exited'],
        ],
        keep: [],
        notReady: ['gone'],
        allSourcesReady: false,
        remain: [1, 2],
      },
      {
        name: 'splitlet: a pod that looks removable while it still runs keeps its newest dead containers',
        containers: [
          ['fresh', 'init', 'exited'],
          ['fresh', 'init', 'exited'],
          ['fresh', 'main', 'running'],
        ],
        keep: [],
        remain: [1, 2],
      },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const pods = [...new Set(c.containers.map(([pod]) => pod))];
        // A not-ready sandbox is stopped after its containers exited (stopping kills them).
        for (const pod of pods) await w.sandbox(pod);
        const ids: string[] = [];
        for (const [pod, name, state] of c.containers) ids.push(await w.container(pod, name, state));
        for (const pod of c.notReady ?? []) {
          const sb = (await w.sim.ListPodSandbox({ filter: { labelSelector: { [POD_UID]: w.uid(pod) } } })).items;
          for (const s of sb) await w.sim.StopPodSandbox({ podSandboxId: s.id });
        }
        if (c.clockShiftMs !== undefined) w.clock.advance(c.clockShiftMs);
        const r = await w.run({
          ...(c.policy ? { policy: c.policy } : {}),
          ...(c.keep ? { keep: c.keep } : {}),
          ...(c.allSourcesReady === undefined ? {} : { allSourcesReady: c.allSourcesReady }),
        });
        assert.equal(r.error, undefined);
        const want = c.remain.map((i) => ids[i]!).sort();
        assert.deepEqual(await w.containerIds(), want);
        assert.equal(r.removedContainers, ids.length - want.length);
      });
    }
  });

  it("removes a container's log files (rotated ones too) before the container, and keeps the kept one's", async () => {
    await w.sandbox('foo');
    const old = await w.container('foo', 'main', 'exited');
    const kept = await w.container('foo', 'main', 'exited');
    const logOf = async (id: string): Promise<string> => (await w.sim.ContainerStatus({ containerId: id })).status!.logPath;
    const oldLog = await logOf(old);
    const keptLog = await logOf(kept);
    assert.ok(existsSync(oldLog) && existsSync(keptLog));
    writeFileSync(`${oldLog}.20240101-000000`, 'rotated\n');
    await w.run();
    assert.deepEqual(await w.containerIds(), [kept]);
    assert.ok(!existsSync(oldLog), 'the removed container log is gone');
    assert.ok(!existsSync(`${oldLog}.20240101-000000`), 'its rotated log is gone');
    assert.ok(existsSync(keptLog), 'the kept container log stays');
  });

  it('a container whose logs cannot be removed stays, and the error is only logged', async () => {
    await w.sandbox('foo');
    const old = await w.container('foo', 'main', 'exited');
    const kept = await w.container('foo', 'main', 'exited');
    const failing = new ContainerGC({
      runtime: w.sim,
      manager: { killContainer: async () => undefined },
      logFiles: { listDir: (p) => readdir(p), removeFile: async () => Promise.reject(new Error('EBUSY: resource busy')), removeAll: async () => undefined },
      podLogDir: logs.path,
      clock: w.clock,
      logger,
      tracer,
    });
    const r = await failing.garbageCollect({ policy: KUBELET_POLICY, allSourcesReady: true, shouldPodContentBeRemoved: () => false, withPodLock: (_uid, fn) => fn() });
    assert.equal(r.error, undefined, 'a failed removal is not a failed run');
    assert.equal(r.removedContainers, 0);
    const line = JSON.parse(logLines.at(-1) ?? '{}') as { msg?: string; containerID?: string; err?: string };
    assert.equal(line.msg, 'Failed to remove container');
    assert.equal(line.containerID, old);
    assert.match(line.err ?? '', /^failed to remove container ".*" log ".*\/main\/\d+\.log": EBUSY/);
    assert.deepEqual(await w.containerIds(), [old, kept].sort());
  });

  it('stops a container in state UNKNOWN before removing it', async () => {
    await w.sandbox('foo');
    const lost = await w.container('foo', 'main', 'running');
    const kept = await w.container('foo', 'main', 'exited');
    w.unknown.add(lost);
    const r = await w.run();
    assert.equal(r.removedContainers, 1);
    assert.deepEqual(await w.containerIds(), [kept]);
    const killing = w.events.find((e) => e.reason === 'Killing');
    assert.equal(killing?.message, 'Container is in unknown state, try killing it before removal');
    const calls = w.sim.calls().map((c) => c.method);
    assert.ok(calls.lastIndexOf('StopContainer') < calls.lastIndexOf('RemoveContainer'), 'stopped, then removed');
  });

  it("waits for the pod's lock: nothing of the pod is removed while an operation on it runs", async () => {
    await w.sandbox('foo');
    await w.container('foo', 'main', 'exited');
    const kept = await w.container('foo', 'main', 'exited');
    let release!: () => void;
    const held = w.locks.run(w.uid('foo'), () => new Promise<void>((r) => (release = r)));
    const run = w.run();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((await w.containerIds()).length, 2, 'GC waits while the pod is locked');
    // Meanwhile "SyncPod" starts a new container: GC relists under the lock and sees it.
    const started = await w.container('foo', 'main', 'running');
    release();
    await held;
    const r = await run;
    assert.equal(r.removedContainers, 1);
    assert.deepEqual(await w.containerIds(), [kept, started].sort());
  });

  describe('sandboxes (TestSandboxGC)', () => {
    interface SandboxCase {
      name: string;
      /** Sandboxes in creation order: pod, state, and whether a (dead) container still refers to it. */
      sandboxes: Array<[pod: string, state: 'ready' | 'notready', withContainer: boolean]>;
      keep?: string[];
      allSourcesReady?: boolean;
      remain: number[];
    }
    const cases: SandboxCase[] = [
      { name: 'a not-ready sandbox without containers of a deleted pod is removed', sandboxes: [['gone', 'notready', false]], keep: [], remain: [] },
      { name: 'a ready sandbox of a deleted pod is not removed', sandboxes: [['gone', 'ready', false]], keep: [], remain: [0] },
      { name: 'the only sandbox of an existing pod is kept', sandboxes: [['foo', 'notready', false]], remain: [0] },
      {
        name: 'older not-ready sandboxes without containers of an existing pod are removed',
        sandboxes: [
          ['foo', 'notready', false],
          ['foo', 'notready', false],
          ['foo', 'notready', false],
        ],
        remain: [2],
      },
      {
        name: 'an older sandbox that a container still refers to is kept',
        sandboxes: [
          ['foo', 'notready', true],
          ['foo', 'ready', false],
        ],
        remain: [0, 1],
      },
      {
        name: 'a deleted pod loses every not-ready sandbox; its ready one stays',
        sandboxes: [
          ['gone', 'notready', false],
          ['gone', 'ready', false],
          ['gone', 'notready', false],
        ],
        keep: [],
        remain: [1],
      },
      {
        name: 'while the sources are not all ready, a deleted pod keeps its newest sandbox',
        sandboxes: [
          ['gone', 'notready', false],
          ['gone', 'notready', false],
        ],
        keep: [],
        allSourcesReady: false,
        remain: [1],
      },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const ids: string[] = [];
        for (const [pod, state, withContainer] of c.sandboxes) {
          const id = await w.sandbox(pod);
          if (withContainer) await w.container(pod, 'main', 'exited', id);
          if (state === 'notready') await w.sim.StopPodSandbox({ podSandboxId: id });
          ids.push(id);
        }
        // Keep referring containers: no per-container limit.
        const r = await w.run({
          policy: { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 },
          ...(c.keep ? { keep: c.keep } : {}),
          ...(c.allSourcesReady === undefined ? {} : { allSourcesReady: c.allSourcesReady }),
        });
        assert.equal(r.error, undefined);
        assert.deepEqual(await w.sandboxIds(), c.remain.map((i) => ids[i]!).sort());
        assert.equal(r.removedSandboxes, ids.length - c.remain.length);
      });
    }

    it('a deleted pod loses its containers, then its sandbox, in one run', async () => {
      const sb = await w.sandbox('gone');
      await w.container('gone', 'main', 'exited');
      await w.container('gone', 'main', 'exited');
      await w.sim.StopPodSandbox({ podSandboxId: sb });
      const r = await w.run({ keep: [] });
      assert.deepEqual(r, { removedContainers: 2, removedSandboxes: 1, removedLogDirs: 1 });
      assert.deepEqual(await w.containerIds(), []);
      assert.deepEqual(await w.sandboxIds(), []);
      assert.ok(!existsSync(w.logDir('gone')));
    });
    it('a run with nothing to collect lists the containers and the sandboxes once each; one that removed containers lists them again for the sandbox pass', async () => {
      await w.sandbox('kept');
      await w.container('kept', 'main', 'running');
      const lists = (from: number): Record<string, number> => {
        const n: Record<string, number> = {};
        for (const c of w.sim.calls().slice(from)) if (c.method === 'ListContainers' || c.method === 'ListPodSandbox') n[c.method] = (n[c.method] ?? 0) + 1;
        return n;
      };
      let from = w.sim.calls().length;
      assert.deepEqual(await w.run({ keep: ['kept'] }), { removedContainers: 0, removedSandboxes: 0, removedLogDirs: 0 });
      assert.deepEqual(lists(from), { ListContainers: 1, ListPodSandbox: 1 });
      const sb = await w.sandbox('gone');
      await w.container('gone', 'main', 'exited');
      await w.sim.StopPodSandbox({ podSandboxId: sb });
      from = w.sim.calls().length;
      const r = await w.run({ keep: ['kept'] });
      assert.deepEqual([r.removedContainers, r.removedSandboxes], [1, 1]);
      // The node's containers twice (before each pass) and its sandboxes once; the pod's own objects
      // under its lock in each of the three passes (containers, sandboxes, log directories).
      assert.deepEqual(lists(from), { ListContainers: 5, ListPodSandbox: 4 });
    });
  });

  describe('pod log directories (TestPodLogDirectoryGC)', () => {
    it('removes the directories of removable pods once all sources are ready, in both layouts', async () => {
      await w.sandbox('foo');
      for (const d of ['default_gone_uid-gone', 'uid-old-layout', 'kube-system_bar_uid-bar']) mkdirSync(join(logs.path, d, 'main'), { recursive: true });
      const notReady = await w.run({ keep: ['foo', 'bar'], allSourcesReady: false });
      assert.equal(notReady.removedLogDirs, 0);
      assert.equal(readdirSync(logs.path).length, 4);
      const r = await w.run({ keep: ['foo', 'bar'] });
      assert.equal(r.removedLogDirs, 2);
      assert.deepEqual(readdirSync(logs.path).sort(), ['default_foo_uid-foo', 'kube-system_bar_uid-bar']);
    });

    it("splitlet: keeps a removable pod's directory while the pod still runs", async () => {
      await w.sandbox('fresh');
      await w.container('fresh', 'main', 'running');
      const r = await w.run({ keep: [] });
      assert.equal(r.removedLogDirs, 0);
      assert.ok(existsSync(w.logDir('fresh')));
    });

    it('a missing log root is nothing to collect; an unreadable one fails the run with the kubelet text', async () => {
      await logs.cleanup();
      assert.equal((await w.run()).error, undefined);
      writeFileSync(logs.path, 'not a directory');
      const r = await w.run();
      const path = logs.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      assert.match(r.error ?? '', new RegExp(`^failed to read podLogsDirectory "${path}": ENOTDIR`));
    });
  });

  it('aggregates the errors of failed steps as the kubelet prints them', async () => {
    w.sim.injectFailure('ListContainers', { code: 'Unavailable', message: 'runtime down' });
    const r = await w.run();
    assert.match(r.error ?? '', /runtime down/);
    assert.ok(!(r.error ?? '').startsWith('['), 'the same error twice is printed once');
  });
});

describe('container GC helpers', () => {
  it('parsePodUIDFromLogsDirectory takes the last field of both layouts', () => {
    for (const [name, uid] of [
      ['default_web_0123-abc', '0123-abc'],
      ['0123-abc', '0123-abc'],
      ['ns_name_with_underscore_uid', 'uid'],
    ] as const) {
      assert.equal(parsePodUIDFromLogsDirectory(name), uid);
    }
  });

  it('sandboxesToRemove keeps the newest sandbox unless the pod is removable, and never an active one (ready, or referenced by a container)', () => {
    const sb = (id: string, createdAt: number, ready: boolean): PodSandbox => ({
      id,
      metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 0 },
      createdAt: String(createdAt),
      state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
      labels: {},
      annotations: {},
      runtimeHandler: '',
    });
    const none = referencedSandboxes([]);
    // One sandbox, the pod kept: nothing, ready or not.
    assert.deepEqual(sandboxesToRemove([sb('a', 1, false)], none, false), []);
    // Removable: every inactive one goes, oldest first; a ready one stays.
    assert.deepEqual(sandboxesToRemove([sb('new', 3, false), sb('old', 1, false), sb('up', 2, true)], none, true), ['old', 'new']);
    // Kept: all but the newest inactive ones.
    assert.deepEqual(sandboxesToRemove([sb('new', 3, false), sb('mid', 2, false), sb('old', 1, false)], none, false), ['old', 'mid']);
    // A sandbox a container still refers to is active; the set is built once for a whole listing.
    const referenced = referencedSandboxes([
      { id: 'c1', podSandboxId: 'old', state: 'CONTAINER_EXITED', createdAt: '1', labels: {}, annotations: {}, imageRef: '' } as CriContainer,
    ]);
    assert.deepEqual([...referenced], ['old']);
    assert.deepEqual(sandboxesToRemove([sb('new', 3, false), sb('mid', 2, false), sb('old', 1, false)], referenced, false), ['mid']);
  });

  it('aggregateErrors prints one error as is, several once each in brackets', () => {
    assert.equal(aggregateErrors([]), undefined);
    assert.equal(aggregateErrors(['a']), 'a');
    assert.equal(aggregateErrors(['a', 'a']), 'a');
    assert.equal(aggregateErrors(['a', 'b', 'a']), '[a, b]');
  });
});
