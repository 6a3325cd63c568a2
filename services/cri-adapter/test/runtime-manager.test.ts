/**
 * The runtime manager against the in-process CRI simulator (no gRPC, no NATS): init containers,
 * sidecars, config errors, postStart hooks, orphan kills from labels, sandbox replacement, spans.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile as writeFileText } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { context, trace } from '@opentelemetry/api';
import type { BoundPod, RuntimePodStatus } from '@splitlet/api';
import { instrument } from '@splitlet/cri';
import { createFakeRuntime, readCriLog, type FakeRuntimeService } from '@splitlet/cri/testing';
import { Backoff, KubeletPeriods } from '@splitlet/kube';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { eventually, makeTempDir, type TempDir } from '@splitlet/testkit';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { ImageManager } from '../src/images/image-manager.js';
import { createLifecycleHandlerRunner } from '../src/kuberuntime/lifecycle-handlers.js';
import { noopKubeRuntimeMetrics } from '../src/kuberuntime/metrics.js';
import { KubeGenericRuntimeManager } from '../src/kuberuntime/runtime-manager.js';
import { RuntimeStatusReader } from '../src/kuberuntime/runtime-status-reader.js';
import type { PodEvent } from '../src/ports.js';
import { aPod } from './fixtures.js';
import { testPrograms } from './programs.js';

const logger = createLogger({ service: 'test', level: 'error' });
/** A PID 1 shell that exits 0 promptly on SIGTERM. */
const TRAPPED = ['sh', '-c', "trap 'exit 0' TERM; sleep 1000 & wait"];

describe('KubeGenericRuntimeManager (in-process simulator)', () => {
  let tracing: TestTracing;
  let sim: FakeRuntimeService;
  let logs: TempDir;
  let events: PodEvent[];
  let manager: KubeGenericRuntimeManager;
  let clock: FakeClock;
  let stops: Array<{ containerId?: string; timeout?: string }>;
  /** How long each PullImage takes on the fake clock. */
  let pullMs: number;

  before(() => {
    tracing = createTestTracing({ register: true });
  });
  after(async () => {
    await tracing.shutdown();
  });

  beforeEach(async () => {
    sim = createFakeRuntime({ programs: testPrograms });
    logs = await makeTempDir('cri-adapter-unit-');
    events = [];
    clock = new FakeClock(Date.now());
    stops = [];
    pullMs = 0;
    const recorded = new Proxy(sim, {
      get(target, prop, receiver) {
        const v: unknown = Reflect.get(target, prop, receiver);
        if (prop === 'PullImage' && typeof v === 'function') {
          return async (req: unknown, opts?: unknown) => {
            const r: unknown = await (v as (r: unknown, o?: unknown) => Promise<unknown>).call(target, req, opts);
            clock.advance(pullMs);
            return r;
          };
        }
        if (prop === 'StopContainer' && typeof v === 'function') {
          return (req: { containerId?: string; timeout?: string }, opts?: unknown) => {
            stops.push({ ...req });
            return (v as (r: unknown, o?: unknown) => unknown).call(target, req, opts);
          };
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const cri = instrument(recorded, { tracer: tracing.tracer });
    const recorder = { record: (e: PodEvent) => events.push(e) };
    manager = new KubeGenericRuntimeManager({
      runtime: cri,
      images: cri,
      imageManager: new ImageManager({
        images: cri,
        recorder,
        clock,
        backoff: new Backoff({ initialMs: KubeletPeriods.imageBackOffInitialMs, maxMs: KubeletPeriods.imageBackOffMaxMs, clock }),
        metrics: noopKubeRuntimeMetrics,
        logger,
        tracer: tracing.tracer,
      }),
      statusReader: new RuntimeStatusReader(cri, createNodeFiles('')),
      handlers: createLifecycleHandlerRunner(cri),
      recorder,
      nodeFiles: {
        ...createNodeFiles(''),
        readResolvConf: async () => 'nameserver 10.0.0.2\n',
        readNodeHostsFile: async () => Buffer.from('127.0.0.1\tlocalhost\n192.168.0.10\ttest-node\n'),
      },
      logFiles: createNodeFiles(''),
      clock,
      crashLoopBackoff: Backoff.crashLoop(clock),
      metrics: noopKubeRuntimeMetrics,
      settings: {
        sandbox: { podLogDir: logs.path, dns: { clusterDns: ['10.96.0.10'], clusterDomain: 'cluster.local', hasResolvConf: true } },
        runtimeRequestTimeoutMs: 10_000,
        memoryCapacityBytes: 8 * 1024 ** 3,
        nodeAllocatable: { milliCpu: 2000, memoryBytes: 8 * 1024 ** 3 },
        hostIPs: ['192.168.0.10'],
      },
      logger,
      tracer: tracing.tracer,
    });
  });
  afterEach(async () => {
    await sim.close();
    await logs.cleanup();
    tracing.reset();
  });

  const sync = (pod: BoundPod, volumes: Record<string, { hostPath: string }> = {}, podDir?: string) => manager.syncPod({ pod, volumes, pullSecrets: [], podDir });
  const status = (pod: BoundPod): Promise<RuntimePodStatus> => manager.getPodStatus({ uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace });
  const reasons = (uid: string): string[] => events.filter((e) => e.pod.uid === uid).map((e) => `${e.reason}: ${e.message}`);

  it('a sync whose cached status agrees with the last one read makes no CRI call; a disagreeing one reads the runtime', async () => {
    const pod = aPod({ uid: 'u-reuse', spec: { containers: [{ name: 'main', image: 'busybox:1.36', command: TRAPPED }] } });
    const first = await manager.syncPod({
      pod,
      volumes: {},
      pullSecrets: [],
      cachedStatus: { uid: 'u-reuse', name: pod.metadata.name, namespace: pod.metadata.namespace, ips: [], sandboxes: [], containers: [] },
    });
    assert.deepEqual(
      first.results.map((r) => r.action).filter((a) => a !== 'KillPodSandbox'),
      ['CreatePodSandbox', 'StartContainer'],
    );
    const criCalls = (): number => tracing.spans().filter((x) => x.name.startsWith('runtime.v1.')).length;
    tracing.reset();
    // The pleg cache agrees with what the sync ended with: nothing to read, nothing to do.
    const again = await manager.syncPod({ pod, volumes: {}, pullSecrets: [], cachedStatus: structuredClone(first.podStatus) });
    assert.deepEqual(again.results, []);
    assert.deepEqual(again.podStatus, first.podStatus);
    assert.equal(criCalls(), 0);
    assert.equal(tracing.spansNamed('kuberuntime.SyncPod')[0]?.attributes['splitlet.runtime.status_reused'], true);
    // The container died: the cache says so, the manager's last status does not — the runtime is read.
    const id = first.podStatus.containers[0]!.id;
    await sim.StopContainer({ containerId: id, timeout: '0' });
    const dead = await status(pod);
    tracing.reset();
    const restarted = await manager.syncPod({ pod, volumes: {}, pullSecrets: [], cachedStatus: dead });
    assert.ok(criCalls() > 0);
    assert.deepEqual(
      restarted.results.map((r) => r.action),
      ['StartContainer'],
      'restarted from what the runtime said',
    );
    // No cached status at all (an older pod-worker): the runtime is read.
    tracing.reset();
    await manager.syncPod({ pod, volumes: {}, pullSecrets: [] });
    assert.ok(criCalls() > 0);
  });

  it('an empty cached status newer than the pod`s last change is taken without a read; an older one, or one disagreeing with a known status, is read', async () => {
    const pod = aPod({ uid: 'u-fresh', spec: { containers: [{ name: 'main', image: 'busybox:1.36', command: TRAPPED }] } });
    const empty: RuntimePodStatus = { uid: 'u-fresh', name: pod.metadata.name, namespace: pod.metadata.namespace, ips: [], sandboxes: [], containers: [] };
    const listsBefore = (): string[] =>
      tracing
        .spans()
        .filter((x) => x.name.startsWith('runtime.v1.'))
        .map((x) => x.name.replace('runtime.v1.RuntimeService/', ''))
        .slice(0, 2);
    const before = (): unknown => tracing.spansNamed('kuberuntime.SyncPod')[0]?.attributes['splitlet.runtime.status_before'];
    // Not newer than the last change: read (it may predate objects made since).
    tracing.reset();
    await manager.syncPod({
      pod: aPod({ uid: 'u-stale-cache' }),
      volumes: {},
      pullSecrets: [],
      cachedStatus: { ...empty, uid: 'u-stale-cache' },
      cachedAt: 1000,
      lastChangeAt: 1000,
    });
    assert.deepEqual(listsBefore().sort(), ['ListContainers', 'ListPodSandbox']);
    assert.equal(before(), 'read');
    // Newer: the sync starts from it.
    tracing.reset();
    const first = await manager.syncPod({ pod, volumes: {}, pullSecrets: [], cachedStatus: empty, cachedAt: 2000, lastChangeAt: 1000 });
    assert.deepEqual(listsBefore(), ['RunPodSandbox', 'PodSandboxStatus']);
    assert.equal(before(), 'pleg-cache');
    assert.equal(first.podStatus.containers[0]?.state, 'CONTAINER_RUNNING');
    // This manager knows the pod's objects: an empty cache, however new, is read against.
    tracing.reset();
    const again = await manager.syncPod({ pod, volumes: {}, pullSecrets: [], cachedStatus: empty, cachedAt: 9000, lastChangeAt: 1000 });
    assert.deepEqual(again.results, []);
    assert.equal(before(), 'read');
    // Without a cache time (a status handed over from a reply, or an older pod-worker): read.
    manager.forgetKnownStatus('u-fresh');
    tracing.reset();
    await manager.syncPod({ pod, volumes: {}, pullSecrets: [], cachedStatus: empty });
    assert.equal(before(), 'read');
  });

  it('a kill whose cached status agrees with the last one read stops at once; a disagreeing one lists the pod first', async () => {
    const pod = aPod({ uid: 'u-kill-reuse', spec: { containers: [{ name: 'main', image: 'busybox:1.36', command: TRAPPED }] } });
    const ref = { uid: 'u-kill-reuse', name: pod.metadata.name, namespace: pod.metadata.namespace };
    const criCalls = (): string[] =>
      tracing
        .spans()
        .filter((x) => x.name.startsWith('runtime.v1.'))
        .map((x) => x.name.replace('runtime.v1.RuntimeService/', ''));
    const started = await sync(pod);
    tracing.reset();
    const killed = await manager.killPod({ pod, runningPod: ref, cachedStatus: structuredClone(started.podStatus) });
    assert.deepEqual(criCalls().slice(0, 2), ['StopContainer', 'StopPodSandbox'], 'the running container came from the cached status');
    assert.equal(tracing.spansNamed('kuberuntime.KillPod')[0]?.attributes['splitlet.runtime.status_reused'], true);
    assert.equal(killed.podStatus.containers[0]?.state, 'CONTAINER_EXITED');
    // A status the manager never read (the container was started again meanwhile): the runtime is read first.
    const restarted = await sync(pod);
    const id = restarted.podStatus.containers.find((c) => c.state === 'CONTAINER_RUNNING')?.id;
    assert.ok(id !== undefined);
    tracing.reset();
    await manager.killPod({ pod, runningPod: ref, cachedStatus: started.podStatus });
    assert.deepEqual(criCalls().slice(0, 2).sort(), ['ListContainers', 'ListPodSandbox']);
    assert.equal(tracing.spansNamed('kuberuntime.KillPod')[0]?.attributes['splitlet.runtime.status_reused'], false);
    assert.equal((await status(pod)).containers.find((c) => c.id === id)?.state, 'CONTAINER_EXITED', 'the container the cache did not know was stopped too');
  });

  it('reads the status after a sync with the statuses of the containers it created alongside the lists', async () => {
    const pod = aPod({
      uid: 'u-after',
      spec: {
        containers: [
          { name: 'a', image: 'busybox:1.36', command: TRAPPED },
          { name: 'b', image: 'busybox:1.36', command: TRAPPED },
        ],
      },
    });
    const r = await sync(pod);
    assert.deepEqual(r.podStatus.containers.map((c) => `${c.name}:${c.state}`).sort(), ['a:CONTAINER_RUNNING', 'b:CONTAINER_RUNNING']);
    const calls = sim.calls().map((c) => c.method);
    assert.deepEqual(r.podStatus, await status(pod), 'what a fresh read says');
    const after = calls.slice(calls.lastIndexOf('StartContainer') + 1).filter((m) => m !== 'PodSandboxStatus');
    assert.deepEqual(after, ['ContainerStatus', 'ContainerStatus', 'ListPodSandbox', 'ListContainers'], 'one round trip, each status read once');
  });

  it('runs init containers one at a time, in order, before the regular containers', async () => {
    const pod = aPod({
      uid: 'u-init',
      spec: {
        initContainers: [
          { name: 'init-1', image: 'busybox:1.36', command: ['sh', '-c', 'exit 0'] },
          { name: 'init-2', image: 'busybox:1.36', command: ['sh', '-c', 'exit 0'] },
        ],
      },
    });
    const r1 = await sync(pod);
    assert.deepEqual(
      r1.results.filter((r) => r.action === 'StartContainer').map((r) => r.target),
      ['init-1'],
    );
    await eventually(async () => (await status(pod)).containers.find((c) => c.name === 'init-1')?.state === 'CONTAINER_EXITED');
    const r2 = await sync(pod);
    assert.deepEqual(
      r2.results.filter((r) => r.action === 'StartContainer').map((r) => r.target),
      ['init-2'],
    );
    await eventually(async () => (await status(pod)).containers.find((c) => c.name === 'init-2')?.state === 'CONTAINER_EXITED');
    const r3 = await sync(pod);
    assert.deepEqual(
      r3.results.map((r) => `${r.action}:${r.target}`),
      ['StartContainer:main'],
    );
    const st = await status(pod);
    assert.equal(st.containers.find((c) => c.name === 'init-1')?.init, true);
    assert.equal(st.containers.find((c) => c.name === 'main')?.init, undefined);
    assert.ok(events.some((e) => e.fieldPath === 'spec.initContainers{init-1}' && e.reason === 'Started'));
  });

  it("pruning a failed init container's older instances removes their log files too, keeping the newest", async () => {
    const pod = aPod({ uid: 'u-prune', spec: { initContainers: [{ name: 'init-1', image: 'busybox:1.36', command: ['sh', '-c', 'echo try; exit 1'] }] } });
    const logDir = join(logs.path, `default_${pod.metadata.name}_u-prune`, 'init-1');
    const exited = async (attempt: number): Promise<boolean> =>
      (await status(pod)).containers.some((c) => c.name === 'init-1' && c.restartCount === attempt && c.state === 'CONTAINER_EXITED');
    for (let attempt = 0; attempt < 3; attempt++) {
      await sync(pod);
      await eventually(() => exited(attempt), { message: `init-1 attempt ${attempt} exits` });
      clock.advance(600_000); // past the crash-loop back-off
    }
    // Before attempt 2 started, attempt 0 was pruned (attempt 1 kept as the newest exited instance).
    assert.deepEqual(
      (await status(pod)).containers
        .filter((c) => c.name === 'init-1')
        .map((c) => c.restartCount)
        .sort(),
      [1, 2],
    );
    assert.deepEqual((await readdir(logDir)).sort(), ['1.log', '2.log']);
  });

  it('starts a sidecar and moves on to the next init container once it runs', async () => {
    const pod = aPod({
      uid: 'u-sidecar',
      spec: {
        initContainers: [
          { name: 'proxy', image: 'busybox:1.36', restartPolicy: 'Always' },
          { name: 'setup', image: 'busybox:1.36', command: ['sh', '-c', 'exit 0'] },
        ],
      },
      containers: [{ name: 'main', image: 'busybox:1.36', command: TRAPPED }],
    });
    await sync(pod);
    const r2 = await sync(pod);
    assert.deepEqual(
      r2.results.filter((r) => r.action === 'StartContainer').map((r) => r.target),
      ['setup'],
    );
    await eventually(async () => (await status(pod)).containers.find((c) => c.name === 'setup')?.state === 'CONTAINER_EXITED');
    const r3 = await sync(pod);
    assert.deepEqual(
      r3.results.map((r) => r.target),
      ['main'],
    );

    // KillPod stops the regular container before the sidecar.
    const k = await manager.killPod({ pod, runningPod: { uid: 'u-sidecar', name: pod.metadata.name, namespace: 'default' }, gracePeriodOverride: 1 });
    assert.deepEqual(
      k.results.map((r) => `${r.action}:${r.target}`),
      ['KillContainer:main', 'KillContainer:proxy', 'KillPodSandbox:u-sidecar'],
    );
  });

  it("kills and restarts a container whose liveness result is Failure, with the probe's grace and the kubelet's Killing text", async () => {
    const pod = aPod({
      uid: 'u-live',
      spec: { terminationGracePeriodSeconds: 30 },
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          command: ['sh', '-c', "trap '' TERM; sleep 3600"],
          livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 2 },
        },
      ],
    });
    await sync(pod);
    const first = await eventually(async () => (await status(pod)).containers.find((c) => c.name === 'main' && c.state === 'CONTAINER_RUNNING'));
    const passing = await manager.syncPod({ pod, volumes: {}, pullSecrets: [], probes: { liveness: { [first.id]: 'Success' } } });
    assert.deepEqual(passing.results, [], 'a passing liveness result changes nothing');
    const failing = await manager.syncPod({ pod, volumes: {}, pullSecrets: [], probes: { liveness: { [first.id]: 'Failure' } } });
    assert.deepEqual(
      failing.results.map((r) => `${r.action}:${r.target}`),
      ['KillContainer:main', 'StartContainer:main'],
    );
    assert.ok(reasons('u-live').includes('Killing: Container main failed liveness probe, will be restarted'));
    const after = await status(pod);
    const killed = after.containers.find((c) => c.id === first.id);
    assert.equal(killed?.state, 'CONTAINER_EXITED');
    assert.equal(killed?.exitCode, 137, "SIGKILLed at the probe's 2 s grace, not the pod's 30 s");
    assert.ok(after.containers.some((c) => c.name === 'main' && c.id !== first.id && c.restartCount === 1));
  });

  it('a mount of an undefined volume is a CreateContainerConfigError with a Failed event', async () => {
    const pod = aPod({ uid: 'u-vol', containers: [{ name: 'main', image: 'busybox:1.36', volumeMounts: [{ name: 'data', mountPath: '/data' }] }] });
    const r = await sync(pod);
    const start = r.results.find((x) => x.action === 'StartContainer');
    assert.equal(start?.error, 'CreateContainerConfigError');
    assert.equal(start?.message, 'cannot find volume "data" to mount into container "main"');
    assert.ok(reasons('u-vol').includes('Failed: Error: cannot find volume "data" to mount into container "main"'));

    const ok = await sync(pod, { data: { hostPath: logs.path } });
    assert.deepEqual(
      ok.results.filter((x) => x.error !== undefined),
      [],
    );
  });

  it('a configMap env reference is a CreateContainerConfigError in standalone mode', async () => {
    const pod = aPod({ uid: 'u-cm', containers: [{ name: 'main', image: 'busybox:1.36', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'x' } } }] }] });
    const r = await sync(pod);
    const start = r.results.find((x) => x.action === 'StartContainer');
    assert.equal(start?.error, 'CreateContainerConfigError');
    assert.equal(start?.message, `couldn't get configMap ${pod.metadata.namespace}/cfg, no kubeClient defined`);
  });

  it('a failing postStart hook records FailedPostStartHook, kills the container, and fails with PostStartHookError', async () => {
    const pod = aPod({
      uid: 'u-hook',
      containers: [{ name: 'main', image: 'busybox:1.36', command: TRAPPED, lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 3'] } } } }],
      spec: { terminationGracePeriodSeconds: 1 },
    });
    const r = await sync(pod);
    const start = r.results.find((x) => x.action === 'StartContainer');
    assert.equal(start?.error, 'PostStartHookError');
    assert.match(
      start?.message ?? '',
      /^Exec lifecycle hook \(\[sh -c exit 3\]\) for Container "main" in Pod "web_default\(u-hook\)" failed - error: command 'sh -c exit 3' exited with 3/,
    );
    assert.deepEqual(
      reasons('u-hook').filter((x) => !x.startsWith('Pulled')),
      ['Created: Created container: main', 'Started: Started container main', 'FailedPostStartHook: PostStartHook failed', 'Killing: FailedPostStartHook'],
    );
    assert.equal((await status(pod)).containers[0]?.state, 'CONTAINER_EXITED');
    // spec grace 1 s, raised to the 2 s minimum.
    assert.deepEqual(
      stops.map((x) => x.timeout),
      ['2'],
    );
  });

  it('kills an orphan (no pod spec) using the grace period stored in its annotations', async () => {
    const pod = aPod({ uid: 'u-orphan', containers: [{ name: 'main', image: 'busybox:1.36', command: TRAPPED }], spec: { terminationGracePeriodSeconds: 7 } });
    await sync(pod);
    const k = await manager.killPod({ runningPod: { uid: 'u-orphan', name: 'web', namespace: 'default' } });
    assert.deepEqual(
      k.results.map((r) => `${r.action}:${r.target}:${r.error ?? 'ok'}`),
      ['KillContainer:main:ok', 'KillPodSandbox:u-orphan:ok'],
    );
    assert.equal(k.podStatus.containers[0]?.exitCode, 0);
    assert.equal(k.podStatus.sandboxes[0]?.state, 'SANDBOX_NOTREADY');
    // The grace period comes from the io.kubernetes.pod.terminationGracePeriod annotation.
    assert.deepEqual(
      stops.map((x) => x.timeout),
      ['7'],
    );
    const killing = events.find((e) => e.pod.uid === 'u-orphan' && e.reason === 'Killing');
    assert.deepEqual(killing, {
      pod: { name: 'web', namespace: 'default', uid: 'u-orphan' },
      fieldPath: 'spec.containers{main}',
      eventType: 'Normal',
      reason: 'Killing',
      message: 'Stopping container main',
    });
  });

  it('replaces a sandbox that is no longer ready, with a SandboxChanged event and a new attempt', async () => {
    const pod = aPod({ uid: 'u-sb' });
    const first = await sync(pod);
    const sandboxId = first.podStatus.sandboxes[0]?.id ?? '';
    await sim.StopPodSandbox({ podSandboxId: sandboxId });
    const r = await sync(pod);
    assert.ok(reasons('u-sb').includes('SandboxChanged: Pod sandbox changed, it will be killed and re-created.'));
    assert.deepEqual(
      r.results.map((x) => `${x.action}:${x.error ?? 'ok'}`),
      ['KillPodSandbox:ok', 'CreatePodSandbox:ok', 'StartContainer:ok'],
    );
    const ready = r.podStatus.sandboxes.filter((s) => s.state === 'SANDBOX_READY');
    assert.equal(ready.length, 1);
    assert.equal(ready[0]?.attempt, 1);
    assert.equal(r.podStatus.containers.find((c) => c.state === 'CONTAINER_RUNNING')?.restartCount, 1);
  });

  it('a failing RunPodSandbox records FailedCreatePodSandBox', async () => {
    sim.injectFailure('RunPodSandbox', { code: 'Unknown', message: 'failed to setup network for sandbox: cni plugin not initialized', times: 1 });
    const pod = aPod({ uid: 'u-fail' });
    const r = await sync(pod);
    const c = r.results.find((x) => x.action === 'CreatePodSandbox');
    assert.equal(c?.error, 'CreatePodSandboxError');
    assert.match(c?.message ?? '', /^Failed to create sandbox for pod "web_default\(u-fail\)": rpc error: code = Unknown desc = failed to setup network/);
    assert.deepEqual(reasons('u-fail'), [
      'FailedCreatePodSandBox: Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox: cni plugin not initialized',
    ]);
  });

  it('an image that does not parse is InvalidImageName', async () => {
    const pod = aPod({ uid: 'u-bad-image', containers: [{ name: 'main', image: 'Not/Valid' }] });
    const r = await sync(pod);
    const start = r.results.find((x) => x.action === 'StartContainer');
    assert.equal(start?.error, 'InvalidImageName');
    assert.match(start?.message ?? '', /^Failed to apply default image tag "Not\/Valid": couldn't parse image name "Not\/Valid": /);
    assert.ok(reasons('u-bad-image').some((x) => x.startsWith('InspectFailed: Failed to apply default image tag')));
  });

  it('pulls an image with pull policy Always and reports the Pulled message', async () => {
    const pod = aPod({ uid: 'u-always', containers: [{ name: 'main', image: 'busybox' }] });
    await sync(pod);
    const msgs = reasons('u-always');
    assert.equal(msgs[0], 'Pulling: Pulling image "busybox"');
    assert.match(msgs[1] ?? '', /^Pulled: Successfully pulled image "busybox" in \d+(\.\d+)?m?s \(\d+(\.\d+)?m?s including waiting\)\. Image size: \d+ bytes\.$/);
  });

  describe('kubelet-managed files', () => {
    /** Syncs a restartPolicy Never pod with a pod directory until its `main` container exited. */
    async function runToExit(pod: BoundPod, volumes: Record<string, { hostPath: string }> = {}) {
      const podDir = join(logs.path, 'pods', pod.metadata.uid);
      await mkdir(join(podDir, 'containers'), { recursive: true });
      const r = await sync(pod, volumes, podDir);
      assert.deepEqual(
        r.results.filter((x) => x.error !== undefined),
        [],
      );
      const c = await eventually(async () => (await status(pod)).containers.find((x) => x.name === 'main' && x.state === 'CONTAINER_EXITED'));
      assert.ok(c);
      const cri = (await sim.ContainerStatus({ containerId: c.id })).status!;
      return { podDir, c, cri, output: readCriLog(cri.logPath).map((l) => l.text), ip: (await status(pod)).ips[0] ?? '' };
    }
    const never = (uid: string, container: Record<string, unknown>, spec: Partial<BoundPod['spec']> = {}): BoundPod =>
      aPod({ uid, containers: [{ name: 'main', image: 'busybox:1.36', ...container }], spec: { restartPolicy: 'Never', ...spec } });

    it('mounts the managed /etc/hosts (pod IP, hostname.subdomain, host aliases) and a termination-message file', async () => {
      const pod = never(
        'u-managed',
        { command: ['sh', '-c', 'cat /etc/hosts; echo "bye from c" > /dev/termination-log; exit 3'] },
        {
          hostname: 'hn',
          subdomain: 'sub',
          hostAliases: [
            { ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] },
            { ip: '10.1.2.4', hostnames: ['baz'] },
          ],
        },
      );
      const { podDir, c, cri, output, ip } = await runToExit(pod);
      assert.match(ip, /^10\.88\./);
      assert.deepEqual(output, [
        '# Kubernetes-managed hosts file.',
        '127.0.0.1\tlocalhost',
        '::1\tlocalhost ip6-localhost ip6-loopback',
        'fe00::0\tip6-localnet',
        'fe00::0\tip6-mcastprefix',
        'fe00::1\tip6-allnodes',
        'fe00::2\tip6-allrouters',
        `${ip}\thn.sub.default.svc.cluster.local\thn`,
        '',
        '# Entries added by HostAliases.',
        '10.1.2.3\tfoo.local\tbar.local',
        '10.1.2.4\tbaz',
      ]);
      const [termFile] = await readdir(join(podDir, 'containers', 'main'));
      assert.match(termFile ?? '', /^[0-9a-f]{8}$/);
      assert.deepEqual(
        cri.mounts.map((m) => [m.containerPath, m.hostPath, m.readonly]),
        [
          ['/etc/hosts', join(podDir, 'etc-hosts'), false],
          ['/dev/termination-log', join(podDir, 'containers', 'main', termFile!), false],
        ],
      );
      assert.equal(c.exitCode, 3);
      assert.equal(c.reason, 'Error');
      assert.equal(c.message, 'bye from c\n', 'the termination message is the status message');
      assert.equal(await readFile(join(podDir, 'containers', 'main', termFile!), 'utf8'), 'bye from c\n');
    });

    it('falls back to the log tail with FallbackToLogsOnError and a failure, not with File', async () => {
      const script = ['sh', '-c', 'echo line one; echo line two >&2; exit 1'];
      const fallback = await runToExit(never('u-fallback', { command: script, terminationMessagePolicy: 'FallbackToLogsOnError' }));
      assert.equal(fallback.c.message, 'line one\nline two\n');
      const file = await runToExit(never('u-file', { command: script, terminationMessagePolicy: 'File' }));
      assert.equal(file.c.message, undefined);
    });

    it('leaves /etc/hosts to a container that mounts its own there', async () => {
      const own = join(logs.path, 'own-hosts');
      await mkdir(own, { recursive: true });
      await writeFileText(join(own, 'hosts'), '10.9.9.9\tmine\n');
      const pod = never('u-own', { command: ['cat', '/etc/hosts'], volumeMounts: [{ name: 'h', mountPath: '/etc/hosts', subPath: 'hosts' }] });
      const { cri, output } = await runToExit(pod, { h: { hostPath: own } });
      assert.deepEqual(output, ['10.9.9.9\tmine']);
      assert.deepEqual(
        cri.mounts.map((m) => m.containerPath),
        ['/etc/hosts', '/dev/termination-log'],
      );
    });

    it('gives a hostNetwork pod the node hosts file and the node IP', async () => {
      const pod = never(
        'u-hostnet',
        { command: ['sh', '-c', 'cat /etc/hosts; echo "ip=$POD_IP"'], env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] },
        { hostNetwork: true, hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo'] }] },
      );
      const { output } = await runToExit(pod);
      assert.deepEqual(output, [
        '# Kubernetes-managed hosts file (host network).',
        '127.0.0.1\tlocalhost',
        '192.168.0.10\ttest-node',
        '',
        '# Entries added by HostAliases.',
        '10.1.2.3\tfoo',
        'ip=192.168.0.10',
      ]);
    });

    it('makes neither file without a pod directory (an older pod-worker)', async () => {
      const pod = never('u-nodir', { command: ['sh', '-c', 'echo x > /dev/termination-log; exit 1'], terminationMessagePolicy: 'FallbackToLogsOnError' });
      const r = await sync(pod);
      assert.deepEqual(
        r.results.filter((x) => x.error !== undefined),
        [],
      );
      const c = await eventually(async () => (await status(pod)).containers.find((x) => x.state === 'CONTAINER_EXITED'));
      assert.ok(c);
      const cri = (await sim.ContainerStatus({ containerId: c.id })).status!;
      assert.deepEqual(cri.mounts, []);
      assert.equal(c.message, undefined, 'no termination file mounted, an empty log: no message');
    });

    it('fails the container config when the hosts file cannot be written', async () => {
      const pod = never('u-nohosts', { command: ['true'] });
      const r = await sync(pod, {}, join(logs.path, 'no', 'such', 'pod-dir'));
      const start = r.results.find((x) => x.action === 'StartContainer');
      assert.equal(start?.error, 'CreateContainerConfigError');
      assert.equal(start?.message, `open ${join(logs.path, 'no', 'such', 'pod-dir', 'etc-hosts')}: no such file or directory`);
    });
  });

  it("reports the sync's image-pull window: the first pull's start to the last successful pull's end", async () => {
    pullMs = 1500;
    const t0 = clock.now();
    const pulled = await sync(
      aPod({
        uid: 'u-pulls',
        containers: [
          { name: 'a', image: 'busybox' },
          { name: 'b', image: 'busybox:latest' },
        ],
      }),
    );
    assert.ok(pulled.results.every((r) => r.error === undefined));
    assert.equal(pulled.imagePullStartedAt, t0);
    assert.equal(pulled.imagePullFinishedAt, t0 + 3000, 'two pulls of 1.5 s, one after the other');
    const present = await sync(aPod({ uid: 'u-present', containers: [{ name: 'a', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }] }));
    assert.equal(present.imagePullStartedAt, undefined, 'no pull, no window');
    assert.equal(present.imagePullFinishedAt, undefined);
    sim.injectFailure('PullImage', { code: 'Unknown', message: 'pull access denied', times: 1 });
    const failed = await sync(aPod({ uid: 'u-pull-fails', containers: [{ name: 'a', image: 'busybox' }] }));
    assert.equal(failed.results.find((r) => r.action === 'StartContainer')?.error, 'ErrImagePull');
    assert.equal(typeof failed.imagePullStartedAt, 'number', 'a failed pull started the clock');
    assert.equal(failed.imagePullFinishedAt, undefined, 'and did not stop it');
  });

  it('traces SyncPod, EnsureImageExists and the CRI calls under the caller span', async () => {
    const parent = tracing.tracer.startSpan('process sl.{node}.rpc.runtime.syncPod');
    await context.with(trace.setSpan(context.active(), parent), () => sync(aPod({ uid: 'u-trace' })));
    parent.end();
    const [syncSpan] = tracing.spansNamed('kuberuntime.SyncPod');
    assert.equal(syncSpan?.parentSpanContext?.spanId, parent.spanContext().spanId);
    assert.equal(syncSpan?.attributes['k8s.pod.uid'], 'u-trace');
    const run = tracing.spansNamed('runtime.v1.RuntimeService/RunPodSandbox')[0];
    assert.equal(run?.parentSpanContext?.spanId, syncSpan?.spanContext().spanId);
    const ensure = tracing.spansNamed('EnsureImageExists')[0];
    assert.equal(ensure?.parentSpanContext?.spanId, syncSpan?.spanContext().spanId);
    assert.equal(tracing.spansNamed('runtime.v1.ImageService/ImageStatus')[0]?.parentSpanContext?.spanId, ensure?.spanContext().spanId);
  });
});
