/**
 * status-manager in cluster mode against the real embedded API server on a real nats-server: the real
 * status-manager process (src/main.ts through tsx) with `KUBECONFIG`, status updates published on
 * `SL_STATUS`, everything asserted through the API: pod status patches (exact fields, unchanged not
 * re-patched, a terminal phase not regressed), deletion of a terminated pod with a deletionTimestamp,
 * mirror pods of static pods, events posted as core/v1 Events, the Node (Ready, capacity) and its
 * renewed Lease, its pressure conditions and Ready following the node's record (with the
 * KubeletConfiguration's nodeStatusUpdateFrequency and nodeLeaseDurationSeconds as the supervisor passes them).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import {
  Buckets,
  KubeEvent,
  KubeEventList,
  Keys,
  NodeCapacity,
  NodeRuntimeStatus,
  PodStatusRecord,
  PodStatusUpdate,
  Subjects,
  type BoundPod,
  type PodCondition,
  type PodStatus,
} from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aRunningStatus, aTerminatedStatus } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, type SpawnedProcess } from '@splitlet/testkit';
import { startApiServer, startStatusManager, statusManagerPortFile, type ApiServerUnderTest } from './apiserver/harness.js';

const NODE = 'node-a';
const SLOW = { timeoutMs: 60_000 };

describe('status-manager → API server (integration)', () => {
  let api: ApiServerUnderTest;
  let bus: NatsBus;
  let proc: SpawnedProcess;
  let capacityKv: Awaited<ReturnType<NatsBus['kv']>>;
  let heartbeat: NodeJS.Timeout | undefined;
  /** The node's record as volume-manager would keep writing it (every 3 s here). */
  let record: NodeCapacity;
  const writeRecord = async (observedAt = new Date().toISOString()): Promise<void> => {
    record = { ...record, observedAt };
    await capacityKv.put(Keys.node(NODE), record);
  };

  before(async () => {
    api = await startApiServer();
    bus = await connectBus({ servers: api.nats.url, process: 'test', node: NODE, logger: createLogger({ service: 'test', stream: { write: () => true } }) });
    capacityKv = await bus.kv(Buckets.nodeCapacity, NodeCapacity);
    const res = { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' };
    record = {
      type: 'kubelet.node.NodeCapacity.v1',
      node: NODE,
      capacity: res,
      allocatable: { ...res, memory: '7Gi' },
      observedAt: new Date().toISOString(),
      pressure: { memory: false, disk: false, pid: false },
    };
    await writeRecord();
    heartbeat = setInterval(() => void writeRecord().catch(() => undefined), 3000);
    proc = await startStatusManager(api, NODE, {
      CONTAINER_RUNTIME_VERSION: 'containerd://2.0.0',
      NODE_STATUS_UPDATE_FREQUENCY_MS: '1000',
      NODE_STATUS_REPORT_FREQUENCY_MS: '3000',
      NODE_LEASE_DURATION_SECONDS: '8',
    });
  });

  after(async () => {
    clearInterval(heartbeat);
    const code = await proc?.stop();
    await bus?.close();
    await api?.stop();
    assert.equal(code, 0, `status-manager exited with ${code}:\n${proc?.tail(30)}`);
  });

  /** Creates a pod bound to the node through the API; returns it as config-source would hand it on. */
  async function createPod(name: string): Promise<BoundPod> {
    const res = await api.request('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { nodeName: NODE, containers: [{ name: 'foo1', image: 'busybox' }], restartPolicy: 'Never' },
    });
    assert.equal(res.status, 201, res.text);
    const pod = res.body as BoundPod;
    pod.metadata.annotations = { ...pod.metadata.annotations, 'kubernetes.io/config.source': 'api' };
    return pod;
  }

  async function publish(pod: BoundPod, status: PodStatus | undefined, couldHaveRunningContainers: boolean, kind: PodStatusUpdate['kind'] = 'set'): Promise<void> {
    const u: PodStatusUpdate = {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind,
      uid: pod.metadata.uid,
      name: pod.metadata.name,
      namespace: 'default',
      pod,
      couldHaveRunningContainers,
      at: new Date().toISOString(),
    };
    if (status !== undefined) u.status = status;
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, pod.metadata.uid), u);
  }

  async function getPod(name: string): Promise<{ status: number; body: any }> {
    return api.request('GET', `/api/v1/namespaces/default/pods/${name}`);
  }

  /** Reports static `pod` Running; resolves to its mirror pod once the API server has it Running. */
  async function runningStaticPod(pod: BoundPod): Promise<any> {
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [aRunningStatus('foo1')] }, true);
    return eventually(
      async () => {
        const r = await getPod(pod.metadata.name);
        return r.body?.status?.phase === 'Running' ? r.body : undefined;
      },
      { ...SLOW, message: 'mirror pod Running' },
    );
  }

  const conditions: PodCondition[] = [
    { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
    { type: 'Initialized', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
    { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' },
    { type: 'ContainersReady', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' },
    { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
  ];

  it('patches pods/status with the written status, and does not re-patch an unchanged one', async () => {
    const pod = await createPod('web-1');
    const running = aRunningStatus('foo1');
    await publish(
      pod,
      { phase: 'Running', conditions, podIP: '127.77.0.5', podIPs: [{ ip: '127.77.0.5' }], hostIP: '127.0.0.1', containerStatuses: [running], qosClass: 'BestEffort' },
      true,
    );
    const got = await eventually(
      async () => {
        const r = await getPod('web-1');
        return r.body?.status?.phase === 'Running' ? r.body : undefined;
      },
      { ...SLOW, message: 'API pod web-1 Running' },
    );
    assert.equal(got.metadata.uid, pod.metadata.uid);
    // Exactly the status status-manager recorded (its merge stamps lastTransitionTime and startTime).
    const record = (await (await bus.kv(Buckets.status, PodStatusRecord)).get(Keys.pod(NODE, pod.metadata.uid)))?.value;
    assert.ok(record);
    for (const [k, v] of Object.entries(record.status)) assert.deepEqual(got.status[k], v, `status.${k}`);
    assert.deepEqual(
      got.status.conditions.map((c: any) => [c.type, c.status]),
      conditions.map((c) => [c.type, c.status]),
    );
    assert.deepEqual(got.status.containerStatuses, [running]);
    assert.equal(got.status.podIP, '127.77.0.5');
    assert.deepEqual(got.status.podIPs, [{ ip: '127.77.0.5' }]);
    assert.equal(got.status.qosClass, 'BestEffort');
    assert.ok(typeof got.status.startTime === 'string');

    // Two full resyncs later (10 s each), nothing was patched again.
    const rv = got.metadata.resourceVersion;
    const from = proc.lines.length;
    await proc.waitForLine('pod status resync done', 60_000, from);
    const second = proc.lines.findIndex((l, i) => i > from && l.includes('pod status resync done'));
    await proc.waitForLine('pod status resync done', 60_000, second + 1);
    assert.equal((await getPod('web-1')).body.metadata.resourceVersion, rv);
    const patches = proc.lines.filter((l) => l.includes('Patch status for pod') && l.includes(pod.metadata.uid));
    assert.equal(patches.length, 1, patches.join('\n'));
  });

  it('patches a later status against the pod its last patch wrote, on condition of its resourceVersion; a pod changed since is read first', async () => {
    const pod = await createPod('web-assumed');
    const uid = pod.metadata.uid;
    const patchLine = (message: string): string | undefined => proc.lines.find((l) => l.includes('Patch status for pod') && l.includes(uid) && l.includes(message));
    const status = (message: string): PodStatus => ({ phase: 'Running', message, conditions, containerStatuses: [aRunningStatus('foo1')] });
    const reported = async (message: string): Promise<void> => {
      await publish(pod, status(message), true);
      await eventually(async () => ((await getPod('web-assumed')).body?.status?.message === message ? true : undefined), { ...SLOW, message: `${message} patched` });
      // The patch is logged once its response is in: the line can reach us after the API server shows the status.
      await eventually(async () => patchLine(message), { ...SLOW, message: `${message} patch logged` });
    };
    await reported('first-status');
    await reported('second-status');
    assert.match(patchLine('second-status') ?? '', /"base":"assumed"/, 'patched against what the first patch wrote, without a GET');
    // Another client writes the pod's status: the next conditional patch is refused, the pod read and patched.
    const theirs = await api.request(
      'PATCH',
      '/api/v1/namespaces/default/pods/web-assumed/status',
      { status: { message: 'another-writer' } },
      { 'content-type': 'application/merge-patch+json' },
    );
    assert.equal(theirs.status, 200, theirs.text);
    await reported('third-status');
    assert.match(patchLine('third-status') ?? '', /"base":"read"/, 'read after the refused patch');
    const got = (await getPod('web-assumed')).body;
    assert.deepEqual([got.status.phase, got.status.message], ['Running', 'third-status']);
  });

  it('never regresses a terminal phase the API server has', async () => {
    const pod = await createPod('web-2');
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [aRunningStatus('foo1')] }, true);
    await eventually(async () => (await getPod('web-2')).body?.status?.phase === 'Running', { ...SLOW, message: 'API pod web-2 Running' });
    // Another writer (e.g. an eviction) made the pod Failed.
    const p = await api.request(
      'PATCH',
      '/api/v1/namespaces/default/pods/web-2/status',
      { status: { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' } },
      { 'content-type': 'application/merge-patch+json' },
    );
    assert.equal(p.status, 200, p.text);
    const restarted = { ...aRunningStatus('foo1'), restartCount: 1 };
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [restarted] }, true);
    const got = await eventually(
      async () => {
        const r = await getPod('web-2');
        return r.body?.status?.containerStatuses?.[0]?.restartCount === 1 ? r.body : undefined;
      },
      { ...SLOW, message: 'API pod web-2 container status updated' },
    );
    assert.equal(got.status.phase, 'Failed');
    assert.equal(got.status.reason, 'Evicted');
  });

  it('deletes a pod with a deletionTimestamp once it is terminal and its worker finished (grace 0)', async () => {
    const pod = await createPod('web-3');
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [aRunningStatus('foo1')] }, true);
    await eventually(async () => (await getPod('web-3')).body?.status?.phase === 'Running', { ...SLOW, message: 'API pod web-3 Running' });
    const del = await api.request('DELETE', '/api/v1/namespaces/default/pods/web-3');
    assert.ok(del.status === 200 || del.status === 202, del.text);
    const marked = await getPod('web-3');
    assert.equal(marked.status, 200, 'a running pod is deleted gracefully, not at once');
    assert.ok(marked.body.metadata.deletionTimestamp);
    await publish(pod, { phase: 'Succeeded', conditions, containerStatuses: [aTerminatedStatus('foo1', 0)] }, false);
    await publish(pod, undefined, false, 'terminated');
    await eventually(async () => (await getPod('web-3')).status === 404, { ...SLOW, message: 'API pod web-3 deleted' });
    assert.ok(proc.lines.some((l) => l.includes('Pod fully terminated and removed from etcd') && l.includes(pod.metadata.uid)));
  });

  it('reports a static pod through a mirror pod: created, recreated when deleted, deleted with the static pod', async () => {
    const uid = 'static-uid-1';
    const name = `static-web-${NODE}`;
    const pod: BoundPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', uid, labels: { app: 'static' }, annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': uid } },
      spec: { containers: [{ name: 'foo1', image: 'busybox' }], restartPolicy: 'Always' },
    };
    const mirror = await runningStaticPod(pod);
    assert.equal(mirror.metadata.annotations['kubernetes.io/config.mirror'], uid);
    assert.equal(mirror.metadata.labels.app, 'static');
    assert.equal(mirror.spec.nodeName, NODE);
    assert.deepEqual(
      mirror.metadata.ownerReferences.map((o: any) => [o.kind, o.name, o.controller]),
      [['Node', NODE, true]],
    );
    assert.notEqual(mirror.metadata.uid, uid);

    // Deleted by a user: the next resync replaces it.
    await api.request('DELETE', `/api/v1/namespaces/default/pods/${name}`);
    const again = await eventually(
      async () => {
        const r = await getPod(name);
        return r.status === 200 && r.body.metadata.uid !== mirror.metadata.uid && r.body.metadata.deletionTimestamp === undefined && r.body.status?.phase === 'Running'
          ? r.body
          : undefined;
      },
      { ...SLOW, message: 'mirror pod recreated' },
    );
    assert.equal(again.metadata.annotations['kubernetes.io/config.mirror'], uid);

    // The static pod is gone: so is its mirror pod.
    await publish(pod, undefined, false, 'removed');
    await eventually(async () => (await getPod(name)).status === 404, { ...SLOW, message: 'mirror pod deleted' });
  });

  it('a static pod removed from its source: its terminating statuses are not reported to the mirror pod, which goes with the status', async () => {
    const uid = 'static-uid-2';
    const name = `static-gone-${NODE}`;
    const pod: BoundPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', uid, annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': uid } },
      spec: { containers: [{ name: 'foo1', image: 'busybox' }], restartPolicy: 'Always' },
    };
    const mirror = await runningStaticPod(pod);
    // The worker terminates the removed pod (podRemoved): the kubelet's status manager, no longer
    // finding the static pod in its pod manager, reports none of these statuses.
    const removed = async (status: PodStatus | undefined, kind: PodStatusUpdate['kind']): Promise<void> => {
      const u: PodStatusUpdate = {
        type: 'kubelet.status.PodStatusUpdate.v1',
        kind,
        uid,
        name,
        namespace: 'default',
        pod,
        couldHaveRunningContainers: kind === 'set',
        podRemoved: true,
        at: new Date().toISOString(),
      };
      if (status !== undefined) u.status = status;
      await bus.publish(PodStatusUpdate, Subjects.status(NODE, uid), u);
    };
    await removed({ phase: 'Running', conditions, containerStatuses: [aTerminatedStatus('foo1', 0)] }, 'set');
    await removed(undefined, 'terminated');
    const statusKv = await bus.kv(Buckets.status, PodStatusRecord);
    await eventually(async () => (await statusKv.get(Keys.pod(NODE, uid)))?.value?.finished === true, { ...SLOW, message: 'status of the removed pod finished' });
    const still = await getPod(name);
    assert.equal(still.body.metadata.resourceVersion, mirror.metadata.resourceVersion, 'the mirror pod was not patched');
    assert.equal(still.body.status.containerStatuses[0].state.running !== undefined, true);
    // The worker forgets the pod: the mirror pod is deleted, and stays deleted.
    await removed(undefined, 'removed');
    await eventually(async () => (await getPod(name)).status === 404, { ...SLOW, message: 'mirror pod deleted' });
    await eventually(() => proc.lines.some((l) => l.includes('Deleting mirror pod') && l.includes(name)), { ...SLOW, message: 'mirror pod deletion logged' });
    assert.equal((await getPod(name)).status, 404);
  });

  it('posts the node events (SL_EVENTS) as core/v1 Events', async () => {
    const timestamp = new Date().toISOString();
    await bus.publish(KubeEvent, Subjects.events(NODE, 'uid-ev'), {
      type: 'kubelet.events.Event.v1',
      eventType: 'Warning',
      reason: 'BackOff',
      message: 'Back-off restarting failed container foo1 in pod web-ev_default(uid-ev)',
      involvedObject: { kind: 'Pod', name: 'web-ev', namespace: 'default', uid: 'uid-ev', fieldPath: 'spec.containers{foo1}' },
      source: { component: 'kubelet', host: NODE },
      timestamp,
    });
    const ev = await eventually(
      async () => {
        const r = await api.request('GET', '/api/v1/namespaces/default/events');
        return (r.body?.items as any[] | undefined)?.find((e) => e.involvedObject?.uid === 'uid-ev');
      },
      { ...SLOW, message: 'Event posted' },
    );
    assert.match(ev.metadata.name, /^web-ev\.[0-9a-f]+$/);
    assert.deepEqual([ev.type, ev.reason, ev.message, ev.count], ['Warning', 'BackOff', 'Back-off restarting failed container foo1 in pod web-ev_default(uid-ev)', 1]);
    assert.deepEqual(ev.involvedObject, { apiVersion: 'v1', kind: 'Pod', name: 'web-ev', namespace: 'default', uid: 'uid-ev', fieldPath: 'spec.containers{foo1}' });
    assert.deepEqual(ev.source, { component: 'kubelet', host: NODE });
    assert.equal(Date.parse(ev.lastTimestamp), Math.floor(Date.parse(timestamp) / 1000) * 1000);
  });

  it("posts a list of a pod's events (one message of SL_EVENTS) as one Event each, in order", async () => {
    const at = Date.now();
    const event = (reason: string, i: number): KubeEvent => ({
      type: 'kubelet.events.Event.v1',
      eventType: 'Normal',
      reason,
      message: `${reason} container app`,
      involvedObject: { kind: 'Pod', name: 'web-list', namespace: 'default', uid: 'uid-list', fieldPath: 'spec.containers{app}' },
      source: { component: 'kubelet', host: NODE },
      timestamp: new Date(at + i).toISOString(),
    });
    await bus.publish(KubeEventList, Subjects.events(NODE, 'uid-list'), { type: 'kubelet.events.EventList.v1', items: ['Pulled', 'Created', 'Started'].map(event) });
    const posted = await eventually(
      async () => {
        const r = await api.request('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.uid%3Duid-list');
        const items = (r.body?.items as any[] | undefined) ?? [];
        return items.length === 3 ? items : undefined;
      },
      { ...SLOW, message: 'three Events posted' },
    );
    // Posted in order: the names carry the time, so they sort as the events were recorded.
    assert.deepEqual(
      posted.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)).map((e) => [e.reason, e.message, e.count]),
      [
        ['Pulled', 'Pulled container app', 1],
        ['Created', 'Created container app', 1],
        ['Started', 'Started container app', 1],
      ],
    );
    assert.equal(new Set(posted.map((e) => e.metadata.name)).size, 3);
  });

  it('correlates events as client-go does: a repeat counts the same Event up, the 10th similar message is aggregated, a deleted Event comes back', async () => {
    const publishEvent = (uid: string, message: string, timestamp = new Date().toISOString()): Promise<unknown> =>
      bus.publish(KubeEvent, Subjects.events(NODE, uid), {
        type: 'kubelet.events.Event.v1',
        eventType: 'Warning',
        reason: 'Unhealthy',
        message,
        involvedObject: { kind: 'Pod', name: `pod-${uid}`, namespace: 'default', uid, fieldPath: 'spec.containers{app}' },
        source: { component: 'kubelet', host: NODE },
        timestamp,
      });
    const eventsOf = async (uid: string): Promise<any[]> => {
      const r = await api.request('GET', `/api/v1/namespaces/default/events?fieldSelector=involvedObject.uid%3D${uid}`);
      return (r.body?.items as any[] | undefined) ?? [];
    };
    const first = new Date(Date.now() - 5000).toISOString();
    await publishEvent('uid-rep', 'Liveness probe failed: boom', first);
    await publishEvent('uid-rep', 'Liveness probe failed: boom');
    await publishEvent('uid-rep', 'Liveness probe failed: boom');
    const counted = await eventually(
      async () => {
        const ev = await eventsOf('uid-rep');
        return ev.length === 1 && ev[0].count === 3 ? ev[0] : undefined;
      },
      { ...SLOW, message: 'one Event with count 3' },
    );
    assert.equal(Date.parse(counted.firstTimestamp), Math.floor(Date.parse(first) / 1000) * 1000);
    assert.ok(Date.parse(counted.lastTimestamp) > Date.parse(counted.firstTimestamp));

    // Deleted on the server: the next repeat's patch gets 404, and the Event is created again.
    assert.equal((await api.request('DELETE', `/api/v1/namespaces/default/events/${counted.metadata.name}`)).status, 200);
    await publishEvent('uid-rep', 'Liveness probe failed: boom');
    await eventually(async () => (await eventsOf('uid-rep')).some((e) => e.metadata.name === counted.metadata.name && e.count === 4), {
      ...SLOW,
      message: 'the Event recreated with count 4',
    });

    for (let i = 1; i <= 11; i++) await publishEvent('uid-agg', `Readiness probe failed: attempt ${i}`);
    const aggregated = await eventually(
      async () => {
        const ev = await eventsOf('uid-agg');
        const agg = ev.filter((e) => String(e.message).startsWith('(combined from similar events): '));
        return ev.length === 10 && agg.length === 1 && agg[0].count === 2 ? { ev, agg: agg[0] } : undefined;
      },
      { ...SLOW, message: '9 Events and one aggregate counted twice' },
    );
    assert.equal(aggregated.agg.message, '(combined from similar events): Readiness probe failed: attempt 11');
    assert.deepEqual(
      aggregated.ev
        .filter((e) => e !== aggregated.agg)
        .map((e) => e.message)
        .sort(),
      Array.from({ length: 9 }, (_, i) => `Readiness probe failed: attempt ${i + 1}`).sort(),
    );
  });

  it('registers the Node, Ready with the capacity the node published', async () => {
    const node = await eventually(
      async () => {
        const r = await api.request('GET', `/api/v1/nodes/${NODE}`);
        return r.status === 200 && Array.isArray(r.body?.status?.conditions) ? r.body : undefined;
      },
      { ...SLOW, message: 'Node with status' },
    );
    assert.deepEqual(node.status.capacity, { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' });
    assert.equal(node.status.allocatable.memory, '7Gi');
    const ready = node.status.conditions.find((c: any) => c.type === 'Ready');
    assert.equal(ready.status, 'True');
    assert.equal(ready.reason, 'KubeletReady');
    assert.equal(ready.message, 'kubelet is posting ready status');
    const mem = node.status.conditions.find((c: any) => c.type === 'MemoryPressure');
    assert.deepEqual([mem.status, mem.reason], ['False', 'KubeletHasSufficientMemory']);
    assert.equal(node.status.nodeInfo.containerRuntimeVersion, 'containerd://2.0.0');
    assert.match(node.status.nodeInfo.kubeletVersion, /^v1\./);
    assert.ok(node.status.addresses.some((a: any) => a.type === 'InternalIP'));
    assert.equal(node.metadata.labels['kubernetes.io/hostname'], NODE);
  });

  it('renews the node Lease (renewTime advances)', async () => {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`;
    const first = await eventually(
      async () => {
        const r = await api.request('GET', path);
        return r.status === 200 ? r.body : undefined;
      },
      { ...SLOW, message: 'Lease created' },
    );
    assert.equal(first.spec.holderIdentity, NODE);
    assert.equal(first.spec.leaseDurationSeconds, 8, 'nodeLeaseDurationSeconds from the configuration');
    const t0 = Date.parse(first.spec.renewTime);
    await eventually(async () => Date.parse((await api.request('GET', path)).body?.spec?.renewTime) > t0, { ...SLOW, message: 'Lease renewed' });
    // Health includes the lease check, and it passes.
    const port = (await readFile(statusManagerPortFile(api), 'utf8')).trim();
    const health = await fetch(`http://127.0.0.1:${port}/healthz?verbose`);
    const text = await health.text();
    assert.equal(health.status, 200, text);
  });

  it('computes the pressure conditions and Ready from the node, moving lastTransitionTime only on a change', async () => {
    const path = `/api/v1/nodes/${NODE}`;
    const condition = async (type: string): Promise<any> => ((await api.request('GET', path)).body?.status?.conditions ?? []).find((c: any) => c.type === type);
    const before = await eventually(() => condition('MemoryPressure'), { ...SLOW, message: 'MemoryPressure reported' });
    assert.deepEqual([before.status, before.reason, before.message], ['False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available']);

    const setAt = Date.now();
    record = { ...record, pressure: { memory: true, disk: true, pid: false } };
    await writeRecord();
    const mem = await eventually(async () => ((await condition('MemoryPressure'))?.status === 'True' ? condition('MemoryPressure') : undefined), {
      ...SLOW,
      message: 'MemoryPressure True',
    });
    assert.deepEqual([mem.reason, mem.message], ['KubeletHasInsufficientMemory', 'kubelet has insufficient memory available']);
    assert.ok(Date.parse(mem.lastTransitionTime) >= Math.floor(setAt / 1000) * 1000, `lastTransitionTime ${mem.lastTransitionTime} moved with the change`);
    const disk = await condition('DiskPressure');
    assert.deepEqual([disk.status, disk.reason, disk.message], ['True', 'KubeletHasDiskPressure', 'kubelet has disk pressure']);
    const pid = await condition('PIDPressure');
    assert.deepEqual([pid.status, pid.reason, pid.message], ['False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available']);
    const readyBefore = await condition('Ready');
    assert.equal(readyBefore.status, 'True', 'pressure does not make the node NotReady');

    // Still under pressure at the next report (nodeStatusReportFrequency 3 s here): the transition time stays put while lastHeartbeatTime moves.
    await eventually(async () => Date.parse((await condition('MemoryPressure'))?.lastHeartbeatTime) > Date.parse(mem.lastHeartbeatTime), { ...SLOW, message: 'a later heartbeat' });
    assert.equal((await condition('MemoryPressure')).lastTransitionTime, mem.lastTransitionTime);

    // The node's record stops being refreshed (volume-manager gone): Ready turns False, KubeletNotReady.
    clearInterval(heartbeat);
    await writeRecord(new Date(Date.now() - 120_000).toISOString());
    const notReady = await eventually(async () => ((await condition('Ready'))?.status === 'False' ? condition('Ready') : undefined), { ...SLOW, message: 'Ready False' });
    assert.equal(notReady.reason, 'KubeletNotReady');
    assert.match(notReady.message, /volume-manager on node-a is not running/);
    assert.ok(Date.parse(notReady.lastTransitionTime) >= Date.parse(readyBefore.lastTransitionTime));

    record = { ...record, pressure: { memory: false, disk: false, pid: false } };
    await writeRecord();
    heartbeat = setInterval(() => void writeRecord().catch(() => undefined), 3000);
    const ready = await eventually(async () => ((await condition('Ready'))?.status === 'True' ? condition('Ready') : undefined), { ...SLOW, message: 'Ready True again' });
    assert.equal(ready.reason, 'KubeletReady');
    const memAfter = await condition('MemoryPressure');
    assert.deepEqual([memAfter.status, memAfter.reason], ['False', 'KubeletHasSufficientMemory']);
    assert.ok(Date.parse(memAfter.lastTransitionTime) >= Date.parse(mem.lastTransitionTime));
  });

  it('the container runtime reported down by cri-adapter (sl_node_runtime): Ready False with its error; up again: Ready True', async () => {
    const path = `/api/v1/nodes/${NODE}`;
    const ready = async (): Promise<any> => ((await api.request('GET', path)).body?.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    const runtimeKv = await bus.kv(Buckets.nodeRuntime, NodeRuntimeStatus);
    const put = (up: boolean, message: string) =>
      runtimeKv.put(Keys.node(NODE), { type: 'kubelet.node.RuntimeStatus.v1', node: NODE, ready: up, message, observedAt: new Date().toISOString() });
    await put(false, 'container runtime is down: rpc error: code = Unavailable desc = connection refused');
    const down = await eventually(async () => ((await ready())?.status === 'False' ? ready() : undefined), { ...SLOW, message: 'Ready False' });
    assert.deepEqual([down.reason, down.message], ['KubeletNotReady', 'container runtime is down: rpc error: code = Unavailable desc = connection refused']);
    await put(true, '');
    const up = await eventually(async () => ((await ready())?.status === 'True' ? ready() : undefined), { ...SLOW, message: 'Ready True again' });
    assert.equal(up.reason, 'KubeletReady');
    assert.ok(Date.parse(up.lastTransitionTime) >= Date.parse(down.lastTransitionTime));
  });
});
