/**
 * status-manager in cluster mode against the real embedded API server on a real nats-server: the real
 * status-manager process (src/main.ts through tsx) with `KUBECONFIG`, status updates published on
 * `SL_STATUS`, everything asserted through the API: pod status patches (exact fields, unchanged not
 * re-patched, a terminal phase not regressed), deletion of a terminated pod with a deletionTimestamp,
 * mirror pods of static pods, events posted as core/v1 Events, the Node (Ready, capacity) and its
 * renewed Lease.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Buckets, KubeEvent, Keys, NodeCapacity, PodStatusRecord, PodStatusUpdate, Subjects, type BoundPod, type PodStatus } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aRunningStatus, aTerminatedStatus } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, spawnProcess, type SpawnedProcess } from '@splitlet/testkit';
import { startApiServer, type ApiServerUnderTest } from './apiserver/harness.js';

const NODE = 'node-a';
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const SLOW = { timeoutMs: 60_000 };

describe('status-manager → API server (integration)', () => {
  let api: ApiServerUnderTest;
  let bus: NatsBus;
  let proc: SpawnedProcess;

  before(async () => {
    api = await startApiServer();
    bus = await connectBus({ servers: api.nats.url, process: 'test', node: NODE, logger: createLogger({ service: 'test', stream: { write: () => true } }) });
    const capacity = await bus.kv(Buckets.nodeCapacity, NodeCapacity);
    const res = { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' };
    await capacity.put(Keys.node(NODE), { type: 'kubelet.node.NodeCapacity.v1', node: NODE, capacity: res, allocatable: { ...res, memory: '7Gi' }, observedAt: new Date().toISOString() });
    proc = await spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', join(repoRoot, 'services/status-manager/src/main.ts')],
      cwd: repoRoot,
      name: 'status-manager',
      env: { NATS_URL: api.nats.url, NODE_NAME: NODE, KUBECONFIG: api.kubeconfig, CONTAINER_RUNTIME_VERSION: 'containerd://2.0.0', HEALTH_PORT: '0', HEALTH_PORT_FILE: join(api.dir.path, 'status-manager.port'), LOG_LEVEL: 'debug', PUBLISH_SPANS: 'false', OTEL_SDK_DISABLED: 'true' },
    });
    await proc.waitForLine('status-manager started', 60_000);
  });

  after(async () => {
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
    const u: PodStatusUpdate = { type: 'kubelet.status.PodStatusUpdate.v1', kind, uid: pod.metadata.uid, name: pod.metadata.name, namespace: 'default', pod, couldHaveRunningContainers, at: new Date().toISOString() };
    if (status !== undefined) u.status = status;
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, pod.metadata.uid), u);
  }

  async function getPod(name: string): Promise<{ status: number; body: any }> {
    return api.request('GET', `/api/v1/namespaces/default/pods/${name}`);
  }

  const conditions = [
    { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
    { type: 'Initialized', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
    { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' },
    { type: 'ContainersReady', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' },
    { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
  ];

  it('patches pods/status with the written status, and does not re-patch an unchanged one', async () => {
    const pod = await createPod('web-1');
    const running = aRunningStatus('foo1');
    await publish(pod, { phase: 'Running', conditions, podIP: '127.77.0.5', podIPs: [{ ip: '127.77.0.5' }], hostIP: '127.0.0.1', containerStatuses: [running], qosClass: 'BestEffort' }, true);
    const got = await eventually(async () => {
      const r = await getPod('web-1');
      return r.body?.status?.phase === 'Running' ? r.body : undefined;
    }, { ...SLOW, message: 'API pod web-1 Running' });
    assert.equal(got.metadata.uid, pod.metadata.uid);
    // Exactly the status status-manager recorded (its merge stamps lastTransitionTime and startTime).
    const record = (await (await bus.kv(Buckets.status, PodStatusRecord)).get(Keys.pod(NODE, pod.metadata.uid)))?.value;
    assert.ok(record);
    for (const [k, v] of Object.entries(record.status)) assert.deepEqual(got.status[k], v, `status.${k}`);
    assert.deepEqual(got.status.conditions.map((c: any) => [c.type, c.status]), conditions.map((c) => [c.type, c.status]));
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

  it('never regresses a terminal phase the API server has', async () => {
    const pod = await createPod('web-2');
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [aRunningStatus('foo1')] }, true);
    await eventually(async () => (await getPod('web-2')).body?.status?.phase === 'Running', { ...SLOW, message: 'API pod web-2 Running' });
    // Another writer (e.g. an eviction) made the pod Failed.
    const p = await api.request('PATCH', '/api/v1/namespaces/default/pods/web-2/status', { status: { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(p.status, 200, p.text);
    const restarted = { ...aRunningStatus('foo1'), restartCount: 1 };
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [restarted] }, true);
    const got = await eventually(async () => {
      const r = await getPod('web-2');
      return r.body?.status?.containerStatuses?.[0]?.restartCount === 1 ? r.body : undefined;
    }, { ...SLOW, message: 'API pod web-2 container status updated' });
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
      spec: { containers: [{ name: 'foo1', image: 'busybox' }], restartPolicy: 'Always' } as BoundPod['spec'],
    };
    await publish(pod, { phase: 'Running', conditions, containerStatuses: [aRunningStatus('foo1')] }, true);
    const mirror = await eventually(async () => {
      const r = await getPod(name);
      return r.body?.status?.phase === 'Running' ? r.body : undefined;
    }, { ...SLOW, message: 'mirror pod Running' });
    assert.equal(mirror.metadata.annotations['kubernetes.io/config.mirror'], uid);
    assert.equal(mirror.metadata.labels.app, 'static');
    assert.equal(mirror.spec.nodeName, NODE);
    assert.deepEqual(mirror.metadata.ownerReferences.map((o: any) => [o.kind, o.name, o.controller]), [['Node', NODE, true]]);
    assert.notEqual(mirror.metadata.uid, uid);

    // Deleted by a user: the next resync replaces it.
    await api.request('DELETE', `/api/v1/namespaces/default/pods/${name}`);
    const again = await eventually(async () => {
      const r = await getPod(name);
      return r.status === 200 && r.body.metadata.uid !== mirror.metadata.uid && r.body.metadata.deletionTimestamp === undefined && r.body.status?.phase === 'Running' ? r.body : undefined;
    }, { ...SLOW, message: 'mirror pod recreated' });
    assert.equal(again.metadata.annotations['kubernetes.io/config.mirror'], uid);

    // The static pod is gone: so is its mirror pod.
    await publish(pod, undefined, false, 'removed');
    await eventually(async () => (await getPod(name)).status === 404, { ...SLOW, message: 'mirror pod deleted' });
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
    const ev = await eventually(async () => {
      const r = await api.request('GET', '/api/v1/namespaces/default/events');
      return (r.body?.items as any[] | undefined)?.find((e) => e.involvedObject?.uid === 'uid-ev');
    }, { ...SLOW, message: 'Event posted' });
    assert.match(ev.metadata.name, /^web-ev\.[0-9a-f]+$/);
    assert.deepEqual([ev.type, ev.reason, ev.message, ev.count], ['Warning', 'BackOff', 'Back-off restarting failed container foo1 in pod web-ev_default(uid-ev)', 1]);
    assert.deepEqual(ev.involvedObject, { apiVersion: 'v1', kind: 'Pod', name: 'web-ev', namespace: 'default', uid: 'uid-ev', fieldPath: 'spec.containers{foo1}' });
    assert.deepEqual(ev.source, { component: 'kubelet', host: NODE });
    assert.equal(Date.parse(ev.lastTimestamp), Math.floor(Date.parse(timestamp) / 1000) * 1000);
  });

  it('registers the Node, Ready with the capacity the node published', async () => {
    const node = await eventually(async () => {
      const r = await api.request('GET', `/api/v1/nodes/${NODE}`);
      return r.status === 200 && Array.isArray(r.body?.status?.conditions) ? r.body : undefined;
    }, { ...SLOW, message: 'Node with status' });
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
    const first = await eventually(async () => {
      const r = await api.request('GET', path);
      return r.status === 200 ? r.body : undefined;
    }, { ...SLOW, message: 'Lease created' });
    assert.equal(first.spec.holderIdentity, NODE);
    assert.equal(first.spec.leaseDurationSeconds, 40);
    const t0 = Date.parse(first.spec.renewTime);
    await eventually(async () => Date.parse((await api.request('GET', path)).body?.spec?.renewTime) > t0, { ...SLOW, message: 'Lease renewed' });
    // Health includes the lease check, and it passes.
    const port = (await readFile(join(api.dir.path, 'status-manager.port'), 'utf8')).trim();
    const health = await fetch(`http://127.0.0.1:${port}/healthz?verbose`);
    const text = await health.text();
    assert.equal(health.status, 200, text);
  });
});
