/**
 * Integration: a real nats-server, the CRI simulator behind a real unix-socket gRPC server, the
 * real CRI client, and the cri-adapter serving its endpoints; requests are sent as a pod-worker would.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import {
  DeadLetter,
  KubeEventMessage,
  type KubeEvent,
  kubeEventsOf,
  RuntimeGetPodStatusReply,
  RuntimeGetPodStatusRequest,
  RuntimeRelistReply,
  RuntimeRelistRequest,
  Subjects,
  type BoundPod,
  type RuntimePodStatus,
} from '@splitlet/api';
import { isBusError } from '@splitlet/bus';
import { eventually } from '@splitlet/testkit';
import { createKvBackoffStore } from '../src/adapters/kv-state-store.js';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { isMutatingCriMethod } from '../src/create-cri-adapter.js';
import { startAdapterOverNats, type AdapterOverNats } from './adapter-over-nats.js';
import { aPod } from './fixtures.js';

const NODE = 'node-a.example';

describe('cri-adapter over NATS and the CRI simulator', () => {
  let h: AdapterOverNats;
  /** The adapter's start on its (fake) clock. */
  let startedAt: number;
  const events: KubeEvent[] = [];
  /** Messages on SL_EVENTS by pod UID (a message holds one pod's events). */
  const eventMessages = new Map<string, number>();
  const deadLetters: DeadLetter[] = [];

  before(async () => {
    h = await startAdapterOverNats({
      node: NODE,
      caller: 'pod-worker',
      logPrefix: 'cri-adapter-logs-',
      settings: { CLUSTER_DNS: ['10.96.0.10'], CLUSTER_DOMAIN: 'cluster.local', RESOLV_CONF: '/test/resolv.conf', CGROUP_PARENT: '/kubepods' },
      deps: async (bus) => ({
        backoffStore: await createKvBackoffStore(bus, NODE),
        nodeFiles: { ...createNodeFiles(''), readResolvConf: async () => 'nameserver 10.0.0.2\nsearch example.com\n' },
      }),
    });
    startedAt = h.clock.now();
    h.caller.subscribeCore(
      Subjects.eventsAll(NODE),
      (d) => {
        const held = kubeEventsOf(KubeEventMessage.parse(d));
        events.push(...held);
        const uid = held[0]?.involvedObject.uid ?? '';
        eventMessages.set(uid, (eventMessages.get(uid) ?? 0) + 1);
      },
      h.signal,
    );
    h.caller.subscribeCore(Subjects.deadLetter(NODE, 'cri-adapter'), (d) => deadLetters.push(DeadLetter.parse(d)), h.signal);
    await h.caller.flush();
  });

  /** `fn`'s result and the CRI calls the simulator received meanwhile, by method (the runtime-up loop's Status calls, on their own timer, left out). */
  const callsDuring = async <T>(fn: () => Promise<T>): Promise<[T, Record<string, number>]> => {
    const from = h.sim.fake.calls().length;
    const r = await fn();
    const counts: Record<string, number> = {};
    for (const c of h.sim.fake.calls().slice(from)) if (c.method !== 'Status') counts[c.method] = (counts[c.method] ?? 0) + 1;
    return [r, counts];
  };

  after(async () => {
    await h?.close();
  });

  const podStatus = async (pod: BoundPod): Promise<RuntimePodStatus> =>
    (
      await h.caller.request(
        RuntimeGetPodStatusRequest,
        RuntimeGetPodStatusReply,
        Subjects.rpc.runtime(NODE, 'getPodStatus'),
        { type: 'kubelet.runtime.GetPodStatusRequest.v1', pod: { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace } },
        { timeoutMs: 10_000 },
      )
    ).podStatus;
  const eventsOf = (pod: BoundPod): Array<[string, string, string | undefined]> =>
    events.filter((e) => e.involvedObject.uid === pod.metadata.uid).map((e) => [e.reason, e.message, e.involvedObject.fieldPath]);

  it('syncPod of a 2-container pod creates one sandbox and two running containers, with events', async () => {
    const pod = aPod({
      name: 'two',
      uid: 'uid-two',
      containers: [
        { name: 'app', image: 'busybox:1.36', command: ['sh', '-c', 'echo started; sleep 3600'] },
        { name: 'side', image: 'busybox:1.36' },
      ],
    });
    const pokesBefore = h.pokes();
    const reply = await h.syncPod(pod);
    assert.deepEqual(
      reply.results.filter((r) => r.error !== undefined),
      [],
    );
    assert.deepEqual(
      reply.results.map((r) => `${r.action}:${r.target}`),
      ['KillPodSandbox:uid-two', 'CreatePodSandbox:uid-two', 'StartContainer:app', 'StartContainer:side'],
    );
    assert.equal(reply.podStatus.sandboxes.length, 1);
    assert.equal(reply.podStatus.sandboxes[0]?.state, 'SANDBOX_READY');
    assert.match(reply.podStatus.ips[0] ?? '', /^10\.88\./);
    assert.deepEqual(reply.podStatus.containers.map((c) => [c.name, c.state, c.restartCount]).sort(), [
      ['app', 'CONTAINER_RUNNING', 0],
      ['side', 'CONTAINER_RUNNING', 0],
    ]);
    await eventually(() => eventsOf(pod).length >= 6, { message: 'six events' });
    assert.deepEqual(eventsOf(pod), [
      ['Pulled', 'Container image "busybox:1.36" already present on machine', 'spec.containers{app}'],
      ['Created', 'Created container: app', 'spec.containers{app}'],
      ['Started', 'Started container app', 'spec.containers{app}'],
      ['Pulled', 'Container image "busybox:1.36" already present on machine', 'spec.containers{side}'],
      ['Created', 'Created container: side', 'spec.containers{side}'],
      ['Started', 'Started container side', 'spec.containers{side}'],
    ]);
    // Held for the operation's end (or 250 ms), they went out together: fewer messages than events.
    assert.ok((eventMessages.get('uid-two') ?? 0) < 6, `${eventMessages.get('uid-two')} messages for 6 events`);
    const ev = events.find((e) => e.involvedObject.uid === 'uid-two');
    assert.deepEqual(ev?.source, { component: 'kubelet', host: NODE });
    assert.equal(ev?.involvedObject.kind, 'Pod');
    await eventually(() => h.pokes() > pokesBefore, { message: 'a pleg relist poke' });

    // The sandbox config the runtime got.
    const sandboxes = await h.client.ListPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.uid': 'uid-two' } } });
    const sb = await h.client.PodSandboxStatus({ podSandboxId: sandboxes.items[0]?.id ?? '' });
    assert.deepEqual(sb.status?.labels['io.kubernetes.pod.name'], 'two');
    assert.deepEqual(sb.status?.metadata, { name: 'two', namespace: 'default', uid: 'uid-two', attempt: 0 });
    const logDirs = await readdir(h.logs.path);
    assert.ok(logDirs.includes('default_two_uid-two'));
  });

  it('a second identical syncPod changes nothing', async () => {
    const pod = aPod({
      name: 'two',
      uid: 'uid-two',
      containers: [
        { name: 'app', image: 'busybox:1.36', command: ['sh', '-c', 'echo started; sleep 3600'] },
        { name: 'side', image: 'busybox:1.36' },
      ],
    });
    const before = h.sim.fake.calls().filter((c) => isMutatingCriMethod(c.method)).length;
    const eventsBefore = eventsOf(pod).length;
    const reply = await h.syncPod(pod);
    assert.deepEqual(reply.results, []);
    assert.equal(h.sim.fake.calls().filter((c) => isMutatingCriMethod(c.method)).length, before);
    assert.equal(reply.podStatus.containers.length, 2);
    assert.equal(reply.podStatus.sandboxes.length, 1);
    assert.equal(eventsOf(pod).length, eventsBefore);
  });

  it('CRI calls, counted at the gRPC simulator: a new pod, a sync on a fresh cache (none), a sync on a stale one, a targeted relist', async () => {
    const pod = aPod({ name: 'counted', uid: 'uid-counted' });
    const [created, creating] = await callsDuring(() => h.syncPod(pod));
    assert.deepEqual(
      created.results.filter((r) => r.error !== undefined),
      [],
    );
    // Before: the pod's objects by label (none); the sandbox and its IPs; the image; the container;
    // after: the objects by label again, the new container's status — the new sandbox's network
    // was read with it, so not again.
    assert.deepEqual(creating, {
      ListPodSandbox: 2,
      ListContainers: 2,
      RunPodSandbox: 1,
      PodSandboxStatus: 1,
      ImageStatus: 1,
      CreateContainer: 1,
      StartContainer: 1,
      ContainerStatus: 1,
    });

    // The pleg cache agrees with the status the sync ended with: nothing read, nothing done — and
    // its timestamp is the pod's last change, so the pod-worker's next sync waits for no relist
    // newer than this one (the one the change started will do).
    h.clock.advance(1000);
    const [same, fresh] = await callsDuring(() => h.syncPod(pod, {}, structuredClone(created.podStatus)));
    assert.deepEqual(same.results, []);
    assert.deepEqual(same.podStatus, created.podStatus);
    assert.deepEqual(fresh, {});
    assert.equal(same.timestamp, created.timestamp);

    // A status that disagrees is read afresh, by label only: a ready sandbox's network and a
    // container whose state did not change are not read again. Its timestamp is when it read.
    const [stale, reading] = await callsDuring(() => h.syncPod(pod));
    assert.deepEqual(stale.results, []);
    assert.deepEqual(stale.podStatus, created.podStatus);
    assert.deepEqual(reading, { ListPodSandbox: 1, ListContainers: 1 });
    assert.equal(stale.timestamp, h.clock.now());

    // pleg's targeted relist lists only this pod's objects.
    const [relisted, listing] = await callsDuring(() =>
      h.caller.request(
        RuntimeRelistRequest,
        RuntimeRelistReply,
        Subjects.rpc.runtime(NODE, 'relist'),
        { type: 'kubelet.runtime.RelistRequest.v1', uids: ['uid-counted'] },
        { timeoutMs: 10_000 },
      ),
    );
    assert.deepEqual(
      relisted.pods.map((p) => p.uid),
      ['uid-counted'],
    );
    assert.deepEqual(listing, { ListPodSandbox: 1, ListContainers: 1 });
    await h.killPod(pod, 0);
  });

  it('a new pod on a pleg cache from after the adapter started and after its last change: the empty status is not read again', async () => {
    const emptyOf = (p: BoundPod): RuntimePodStatus => ({ uid: p.metadata.uid, name: p.metadata.name, namespace: p.metadata.namespace, ips: [], sandboxes: [], containers: [] });
    const pod = aPod({ name: 'fresh-cache', uid: 'uid-fresh-cache' });
    h.clock.advance(1000);
    const [created, creating] = await callsDuring(() => h.syncPod(pod, {}, emptyOf(pod), h.clock.now() - 1));
    assert.deepEqual(
      created.results.filter((r) => r.error !== undefined),
      [],
    );
    // Only the read after the sync lists the pod's objects.
    assert.deepEqual(creating, {
      ListPodSandbox: 1,
      ListContainers: 1,
      RunPodSandbox: 1,
      PodSandboxStatus: 1,
      ImageStatus: 1,
      CreateContainer: 1,
      StartContainer: 1,
      ContainerStatus: 1,
    });

    // The reply was lost (its pod-worker killed); the next owner's cache still says "nothing" but is
    // older than the sandbox: the runtime is read, nothing is created twice.
    const createdAt = created.timestamp;
    assert.ok(createdAt !== undefined, 'the SyncPod reply carries its timestamp');
    const [again, reading] = await callsDuring(() => h.syncPod(pod, {}, emptyOf(pod), createdAt - 1));
    assert.deepEqual(again.results, []);
    assert.equal(reading['ListPodSandbox'], 1);
    assert.equal(reading['RunPodSandbox'], undefined);
    assert.equal(again.podStatus.sandboxes.length, 1, 'read from the runtime: the one sandbox');

    // A cache from before the adapter started (another instance may have been creating the pod): read.
    const other = aPod({ name: 'old-cache', uid: 'uid-old-cache' });
    const [, beforeStart] = await callsDuring(() => h.syncPod(other, {}, emptyOf(other), startedAt - 1));
    assert.equal(beforeStart['ListPodSandbox'], 2);
    await h.killPod(pod, 0);
    await h.killPod(other, 0);
  });

  it('concurrent syncPods of one pod run one at a time: one sandbox, one container', async () => {
    const pod = aPod({ name: 'burst', uid: 'uid-burst' });
    const replies = await Promise.all([h.syncPod(pod), h.syncPod(pod), h.syncPod(pod)]);
    assert.equal(replies.filter((r) => r.results.some((x) => x.action === 'CreatePodSandbox')).length, 1);
    const st = await podStatus(pod);
    assert.equal(st.sandboxes.length, 1);
    assert.equal(st.containers.length, 1);
    await h.killPod(pod, 0);
  });

  it('a crashing container is restarted, then held in CrashLoopBackOff for 10 s, then 20 s', async () => {
    const pod = aPod({ name: 'crash', uid: 'uid-crash', containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', 'exit 1'] }] });
    const exitedWith = (restartCount: number) => async () => {
      const st = await podStatus(pod);
      const c = st.containers.find((x) => x.restartCount === restartCount);
      return c?.state === 'CONTAINER_EXITED' ? c : undefined;
    };
    await h.syncPod(pod);
    const first = await eventually(exitedWith(0), { message: 'first run exited' });
    assert.ok(first);
    assert.equal(first.exitCode, 1);
    assert.equal(first.reason, 'Error');

    // The first restart is not delayed.
    const r2 = await h.syncPod(pod);
    assert.deepEqual(
      r2.results.filter((r) => r.error !== undefined),
      [],
    );
    await eventually(exitedWith(1), { message: 'second run exited' });

    // Now in backoff: 10 s from the last exit.
    const r3 = await h.syncPod(pod);
    const failed = r3.results.find((r) => r.action === 'StartContainer');
    assert.equal(failed?.error, 'CrashLoopBackOff');
    assert.equal(failed?.message, 'back-off 10s restarting failed container=main pod=crash_default(uid-crash)');
    await eventually(() => eventsOf(pod).some(([reason]) => reason === 'BackOff'), { message: 'BackOff event' });
    const backoffEvent = events.find((e) => e.involvedObject.uid === 'uid-crash' && e.reason === 'BackOff');
    assert.equal(backoffEvent?.eventType, 'Warning');
    assert.equal(backoffEvent?.message, 'Back-off restarting failed container main in pod crash_default(uid-crash)');
    assert.equal(backoffEvent?.involvedObject.fieldPath, 'spec.containers{main}');

    // 10 s later (fake clock, measured from the exit) it restarts, and the next backoff is 20 s.
    h.clock.advance(Date.now() - h.clock.now() + 10_001);
    const r4 = await h.syncPod(pod);
    assert.deepEqual(
      r4.results.filter((r) => r.error !== undefined),
      [],
    );
    const third = await eventually(exitedWith(2), { message: 'third run exited' });
    assert.ok(third);
    assert.ok(third.finishedAt !== undefined);
    const r5 = await h.syncPod(pod);
    assert.equal(r5.results.find((r) => r.action === 'StartContainer')?.message, 'back-off 20s restarting failed container=main pod=crash_default(uid-crash)');
    await h.killPod(pod, 0);
  });

  it('persists the crash-loop backoff in its KV bucket', async () => {
    await h.adapter.flush();
    const store = await createKvBackoffStore(h.caller, NODE);
    const tables = await store.load();
    const entry = Object.entries(tables?.crashLoop.entries ?? {}).find(([key]) => key.startsWith('crash_default_uid-crash_main_'));
    assert.equal(entry?.[1].backoffMs, 20_000);
    assert.equal(tables?.crashLoop.maxMs, 300_000);
    assert.ok(Object.keys(tables?.imagePull.entries ?? {}).length === 0 || tables?.imagePull.initialMs === 10_000);
  });

  it('killPod honours the grace period: a trapped TERM stops at once, an ignored one is killed at the deadline', async () => {
    const trapped = aPod({
      name: 'trapped',
      uid: 'uid-trapped',
      containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 1000 & wait"] }],
    });
    const ignoring = aPod({ name: 'ignoring', uid: 'uid-ignoring', containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', "trap '' TERM; sleep 1000"] }] });
    await h.syncPod(trapped);
    await h.syncPod(ignoring);

    let t0 = performance.now();
    const k1 = await h.killPod(trapped, 2);
    const fast = performance.now() - t0;
    assert.deepEqual(
      k1.results.filter((r) => r.error !== undefined),
      [],
    );
    assert.deepEqual(
      k1.results.map((r) => r.action),
      ['KillContainer', 'KillPodSandbox'],
    );
    const c1 = k1.podStatus.containers[0];
    assert.equal(c1?.state, 'CONTAINER_EXITED');
    assert.equal(c1?.exitCode, 0);
    assert.equal(k1.podStatus.sandboxes[0]?.state, 'SANDBOX_NOTREADY');
    assert.ok(fast < 1500, `trapped TERM should stop promptly, took ${fast} ms`);

    t0 = performance.now();
    const k2 = await h.killPod(ignoring, 1);
    const slow = performance.now() - t0;
    const c2 = k2.podStatus.containers[0];
    assert.equal(c2?.state, 'CONTAINER_EXITED');
    assert.equal(c2?.exitCode, 137);
    assert.ok(slow >= 950 && slow < 5000, `ignored TERM should be killed after the 1 s grace, took ${slow} ms`);
    await eventually(() => eventsOf(ignoring).some(([r, m]) => r === 'Killing' && m === 'Stopping container main'), { message: 'Killing event' });
  });

  it('an absent image with pull policy Never fails with ErrImageNeverPull', async () => {
    const pod = aPod({ name: 'never', uid: 'uid-never', containers: [{ name: 'main', image: 'example.com/doesnotexist:1', imagePullPolicy: 'Never' }] });
    const reply = await h.syncPod(pod);
    const r = reply.results.find((x) => x.action === 'StartContainer');
    assert.equal(r?.error, 'ErrImageNeverPull');
    assert.equal(r?.message, 'Container image "example.com/doesnotexist:1" is not present with pull policy of Never');
    await eventually(() => eventsOf(pod).length >= 2, { message: 'events' });
    assert.deepEqual(eventsOf(pod), [
      ['ErrImageNeverPull', 'Container image "example.com/doesnotexist:1" is not present with pull policy of Never', 'spec.containers{main}'],
      ['Failed', 'Error: ErrImageNeverPull', 'spec.containers{main}'],
    ]);
    await h.killPod(pod, 0);
  });

  it('an absent IfNotPresent image fails with ErrImagePull, then ImagePullBackOff', async () => {
    const pod = aPod({ name: 'pull', uid: 'uid-pull', containers: [{ name: 'main', image: 'example.com/missing:1', imagePullPolicy: 'IfNotPresent' }] });
    const first = await h.syncPod(pod);
    assert.equal(first.results.find((x) => x.action === 'StartContainer')?.error, 'ErrImagePull');
    const second = await h.syncPod(pod);
    const r = second.results.find((x) => x.action === 'StartContainer');
    assert.equal(r?.error, 'ImagePullBackOff');
    assert.equal(r?.message, 'Back-off pulling image "example.com/missing:1"');
    await eventually(() => eventsOf(pod).length >= 5, { message: 'events' });
    const seen = eventsOf(pod).map(([reason, message]) => `${reason}: ${message}`);
    assert.equal(seen[0], 'Pulling: Pulling image "example.com/missing:1"');
    assert.match(seen[1] ?? '', /^Failed: Failed to pull image "example\.com\/missing:1": rpc error: code = NotFound desc = /);
    assert.equal(seen[2], 'Failed: Error: ErrImagePull');
    assert.equal(seen[3], 'BackOff: Back-off pulling image "example.com/missing:1"');
    assert.equal(seen[4], 'Failed: Error: ImagePullBackOff');
    assert.equal(events.find((e) => e.involvedObject.uid === 'uid-pull' && e.reason === 'BackOff')?.eventType, 'Normal');
    await h.killPod(pod, 0);
  });

  it('refuses a stale fence epoch with FencedOff', async () => {
    const pod = aPod({ name: 'fenced', uid: 'uid-fenced' });
    h.fence.epoch = 7;
    await h.syncPod(pod);
    h.fence.epoch = 6;
    await assert.rejects(h.syncPod(pod), (e: unknown) => isBusError(e, 'Remote') && e.remoteCode === 'FencedOff' && e.retryable === false);
    h.fence.epoch = 7;
    await h.killPod(pod, 0);
  });

  it('relist returns the pods grouped by uid', async () => {
    const reply = await h.caller.request(
      RuntimeRelistRequest,
      RuntimeRelistReply,
      Subjects.rpc.runtime(NODE, 'relist'),
      { type: 'kubelet.runtime.RelistRequest.v1' },
      { timeoutMs: 10_000 },
    );
    const two = reply.pods.find((p) => p.uid === 'uid-two');
    assert.equal(two?.name, 'two');
    assert.equal(two?.namespace, 'default');
    assert.equal(two?.sandboxes.length, 1);
    assert.deepEqual(
      two?.containers.map((c) => c.state),
      ['CONTAINER_RUNNING', 'CONTAINER_RUNNING'],
    );
    assert.equal(two?.ips.length, 1);
    const crash = reply.pods.find((p) => p.uid === 'uid-crash');
    assert.ok(crash !== undefined && crash.containers.every((c) => c.state === 'CONTAINER_EXITED' && c.exitCode === 1 && c.reason === 'Error' && c.finishedAt !== undefined));
    assert.ok(reply.timestamp <= h.clock.now());
  });

  it('a malformed request gets SchemaInvalid and a dead letter, and the adapter keeps serving', async () => {
    const subject = Subjects.rpc.runtime(NODE, 'syncPod');
    const raw = await h.caller.nc.request(subject, JSON.stringify({ type: 'kubelet.runtime.SyncPodRequest.v1', pod: { nope: true } }), { timeout: 5000 });
    const env = raw.json<{ ok: boolean; error?: { code: string; message: string } }>();
    assert.equal(env.ok, false);
    assert.equal(env.error?.code, 'SchemaInvalid');
    await eventually(() => deadLetters.some((d) => d.subject === subject && d.reason.includes(subject)), { message: 'dead letter naming the subject' });
    assert.equal(deadLetters[0]?.process, 'cri-adapter');
    const ok = await h.syncPod(
      aPod({
        name: 'two',
        uid: 'uid-two',
        containers: [
          { name: 'app', image: 'busybox:1.36', command: ['sh', '-c', 'echo started; sleep 3600'] },
          { name: 'side', image: 'busybox:1.36' },
        ],
      }),
    );
    assert.deepEqual(ok.results, []);
  });

  it('reports the runtime healthy', () => {
    assert.deepEqual(h.adapter.runtimeHealthy(), { ok: true });
  });
});
