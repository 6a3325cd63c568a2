import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TraceFlags, trace } from '@opentelemetry/api';
import { hasErrorCode, type BoundPod, type PodLifecycleEvent, type PodUpdate } from '@splitlet/api';
import { aNode } from '@splitlet/kube/testing';
import { harness, item, metric, pod, runtimeEntry, START, update, worker } from './fakes.js';
import { ALL_APPLIED } from '../src/sync-loop/applied-updates.js';

const READY = { sources: ['file' as const], seen: ['file' as const] };
const TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };

describe('HandlePodAdditions', () => {
  it('admits in creation order: the older pod wins the last CPU even when listed second', async () => {
    const h = await harness();
    const newer = pod('b', { created: '2024-01-01T10:00:05Z', cpu: '1500m' });
    const older = pod('a', { created: '2024-01-01T10:00:00Z', cpu: '1500m' });
    await h.loop.handlePodUpdate(update('ADD', [item(newer), item(older)]));
    assert.equal(h.desired.map.get('a')?.rejected, undefined);
    assert.deepEqual(h.desired.map.get('b')?.rejected, {
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 1500, used: 1500, capacity: 2000",
    });
    assert.deepEqual(h.poker.take(), ['create:a']);
  });

  it('falls back to config.seen when there is no creationTimestamp', async () => {
    const h = await harness();
    const late = pod('late', { seen: '2024-01-01T10:00:09Z', cpu: '1500m' });
    const early = pod('early', { seen: '2024-01-01T10:00:01Z', cpu: '1500m' });
    await h.loop.handlePodUpdate(update('ADD', [item(late), item(early)]));
    assert.equal(h.desired.map.get('early')?.rejected, undefined);
    assert.equal(h.desired.map.get('late')?.rejected?.reason, 'OutOfcpu');
  });

  it("an admitted pod: DesiredPod{create, startTime, trace, creationTrace} then a create poke in the pod's trace", async () => {
    const h = await harness();
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'), TRACE)]));
    const d = h.desired.map.get('a');
    assert.equal(d?.updateType, 'create');
    assert.equal(d?.startTime, new Date(START).toISOString());
    assert.deepEqual(d?.trace, TRACE);
    assert.deepEqual(d?.creationTrace, TRACE);
    assert.equal(h.loop.desiredPod('a')?.pod.metadata.uid, 'a');
    const poke = h.poker.pokes[0];
    assert.equal(poke?.kind, 'create');
    const [span] = h.tracing.spansNamed('admitPod');
    assert.ok(span);
    assert.equal(span.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
    assert.equal(span.parentSpanContext?.spanId, 'b7ad6b7169203331');
    assert.equal(span.attributes['k8s.pod.uid'], 'a');
    assert.equal(span.attributes['k8s.pod.name'], 'pod-a');
    assert.equal(span.attributes['k8s.namespace.name'], 'default');
    assert.equal(span.attributes['k8s.pod.update_type'], 'create');
    assert.equal(span.attributes['splitlet.admission.admitted'], true);
  });

  it('a rejected pod: DesiredPod{rejected}, status Failed "Pod was rejected: …", a Warning event, the metric, no poke', async () => {
    const h = await harness({ node: aNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '110' } }) });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('big', { cpu: '2' }), TRACE)]));
    assert.equal(h.desired.map.get('big')?.rejected?.reason, 'OutOfcpu');
    assert.deepEqual(h.poker.take(), []);
    const s = h.status.updates[0];
    assert.equal(s?.kind, 'set');
    assert.equal(s?.uid, 'big');
    assert.equal(s?.couldHaveRunningContainers, false);
    assert.deepEqual(s?.status, {
      qosClass: 'Burstable',
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000",
    });
    const e = h.events.events[0];
    assert.equal(e?.eventType, 'Warning');
    assert.equal(e?.reason, 'OutOfcpu');
    assert.equal(e?.message, "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000");
    assert.deepEqual(e?.involvedObject, { kind: 'Pod', name: 'pod-big', namespace: 'default', uid: 'big' });
    assert.deepEqual(e?.source, { component: 'kubelet', host: 'node-1' });
    assert.equal(await metric(h.registry, 'kubelet_admission_rejections_total', { reason: 'OutOfcpu' }), 1);
    const [span] = h.tracing.spansNamed('admitPod');
    assert.equal(span?.attributes['splitlet.admission.admitted'], false);
    assert.equal(span?.attributes['splitlet.admission.reason'], 'OutOfcpu');

    // A replayed ADD of the rejected pod does nothing again.
    await h.loop.handlePodUpdate(update('ADD', [item(pod('big', { cpu: '2' }))]));
    assert.equal(h.status.updates.length, 1);
    assert.equal(h.events.events.length, 1);
  });

  it('a pod admission cannot evaluate is rejected alone (UnexpectedAdmissionError), the rest of the update goes on', async () => {
    const h = await harness();
    const bad = pod('bad', { cpu: 'lots' });
    await h.loop.handlePodUpdate(update('ADD', [item(bad), item(pod('good'))]));
    assert.equal(h.desired.map.get('bad')?.rejected?.reason, 'UnexpectedAdmissionError');
    assert.match(h.desired.map.get('bad')?.rejected?.message ?? '', /^Failed to admit pod: /);
    assert.equal(h.desired.map.get('good')?.rejected, undefined);
    assert.deepEqual(h.poker.take(), ['create:good']);
    assert.equal(await metric(h.registry, 'kubelet_admission_rejections_total', { reason: 'UnexpectedAdmissionError' }), 1);
  });

  it('unknown rejection reasons count as Other in the metric (NodeAffinity)', async () => {
    const h = await harness();
    const p = pod('sel');
    p.spec.nodeSelector = { disk: 'ssd' };
    await h.loop.handlePodUpdate(update('ADD', [item(p)]));
    assert.equal(h.desired.map.get('sel')?.rejected?.reason, 'NodeAffinity');
    assert.equal(await metric(h.registry, 'kubelet_admission_rejections_total', { reason: 'Other' }), 1);
  });

  it('counts only active pods: rejected pods and pods whose worker terminated do not take a slot', async () => {
    const h = await harness({ node: aNode({ allocatable: { cpu: '2', memory: '4Gi', pods: '1' } }) });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a', { created: '2024-01-01T10:00:00Z' }))]));
    await h.loop.handlePodUpdate(update('ADD', [item(pod('b', { created: '2024-01-01T10:00:01Z' }))]));
    assert.equal(h.desired.map.get('b')?.rejected?.reason, 'OutOfpods');
    // a's worker terminated: it no longer counts.
    h.workers.map.set('a', worker('a', { state: 'terminated' }));
    await h.loop.handlePodUpdate(update('ADD', [item(pod('c', { created: '2024-01-01T10:00:02Z' }))]));
    assert.equal(h.desired.map.get('c')?.rejected, undefined);
  });

  it('a write failure is retryable and leaves the pod manager as if the update never came', async () => {
    const h = await harness();
    h.desired.failPut = true;
    await assert.rejects(
      h.loop.handlePodUpdate(update('ADD', [item(pod('a'))])),
      (e: unknown) => hasErrorCode(e, 'SyncLoopWriteFailed') && (e as { retryable: boolean }).retryable,
    );
    assert.equal(h.loop.desiredPod('a'), undefined);
    h.desired.failPut = false;
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'))]));
    assert.ok(h.loop.desiredPod('a'));
    assert.deepEqual(h.poker.take(), ['create:a']);
  });

  it('an empty ADD marks its source seen and persists the snapshot', async () => {
    const h = await harness();
    assert.equal(h.loop.sourcesReady.allReady(), false);
    await h.loop.handlePodUpdate(update('ADD', [], 'file', ['file', 'http']));
    assert.equal(h.loop.sourcesReady.allReady(), false);
    await h.loop.handlePodUpdate(update('ADD', [], 'http', ['file', 'http']));
    assert.equal(h.loop.sourcesReady.allReady(), true);
    assert.deepEqual(h.sources.snapshot, { sources: ['file', 'http'], seen: ['file', 'http'] });
  });
});

describe('HandlePodUpdates / HandlePodReconcile', () => {
  it('UPDATE and graceful DELETE put DesiredPod{update} keeping the creation trace, poke update, no re-admission', async () => {
    const h = await harness({ node: aNode({ allocatable: { cpu: '2', memory: '4Gi', pods: '110' } }) });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a', { cpu: '1' }), TRACE)]));
    h.poker.take();
    const bigger = pod('a', { cpu: '8' });
    const other = { traceparent: '00-11111111111111111111111111111111-2222222222222222-01' };
    await h.loop.handlePodUpdate(update('UPDATE', [item(bigger, other)]));
    const d = h.desired.map.get('a');
    assert.equal(d?.updateType, 'update');
    assert.equal(d?.rejected, undefined);
    assert.deepEqual(d?.creationTrace, TRACE);
    assert.deepEqual(d?.trace, other);
    assert.deepEqual(h.poker.take(), ['update:a']);

    await h.loop.handlePodUpdate(update('DELETE', [item(pod('a', { deletionGrace: 5 }))]));
    assert.equal(h.desired.map.get('a')?.pod.metadata.deletionGracePeriodSeconds, 5);
    assert.deepEqual(h.poker.take(), ['update:a']);
  });

  it('an update of a rejected pod stays rejected and pokes nothing', async () => {
    const h = await harness({ node: aNode({ allocatable: { cpu: '1', memory: '4Gi', pods: '110' } }) });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a', { cpu: '4' }))]));
    await h.loop.handlePodUpdate(update('UPDATE', [item(pod('a', { cpu: '4' }))]));
    assert.equal(h.desired.map.get('a')?.rejected?.reason, 'OutOfcpu');
    assert.deepEqual(h.poker.take(), []);
  });

  it('RECONCILE puts the desired pod without a poke', async () => {
    const h = await harness();
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'))]));
    h.poker.take();
    const p = pod('a');
    p.status = { phase: 'Running' };
    await h.loop.handlePodUpdate(update('RECONCILE', [item(p)]));
    assert.equal(h.desired.map.get('a')?.pod.status?.phase, 'Running');
    assert.equal(h.desired.map.get('a')?.updateType, 'create');
    assert.deepEqual(h.poker.take(), []);
  });
});

describe('HandlePodRemoves', () => {
  it('before every source was seen: deletes the desired pod, logs the kubelet error, creates no kill', async () => {
    const h = await harness();
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'))], 'file', ['file', 'http']));
    h.poker.take();
    await h.loop.handlePodUpdate(update('REMOVE', [item(pod('a'))], 'file', ['file', 'http']));
    assert.equal(h.desired.map.has('a'), false);
    assert.equal(h.kills.map.size, 0);
    assert.deepEqual(h.poker.take(), []);
    assert.ok(h.logs.some((l) => l.includes("skipping delete because sources aren't ready yet")));
    // Housekeeping is skipped too until every source was seen…
    h.workers.map.set('a', worker('a'));
    assert.equal(await h.loop.housekeeping(), false);
    // …then it kills the worker of the removed pod.
    await h.loop.handlePodUpdate(update('ADD', [], 'http', ['file', 'http']));
    assert.equal(await h.loop.housekeeping(), true);
    assert.equal(h.kills.map.get('a')?.value.reason, 'removed');
    assert.equal(h.kills.map.get('a')?.value.pod?.metadata.uid, 'a');
    assert.deepEqual(h.poker.take(), ['kill:a']);
  });

  it('after every source was seen: KillRequest{removed, pod, trace} and a kill poke', async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'))]));
    h.poker.take();
    await h.loop.handlePodUpdate(update('REMOVE', [item(pod('a'), TRACE)]));
    const k = h.kills.map.get('a')?.value;
    assert.equal(k?.reason, 'removed');
    assert.equal(k?.pod?.metadata.name, 'pod-a');
    assert.deepEqual(k?.trace, TRACE);
    assert.equal(k?.gracePeriodOverride, undefined);
    assert.equal(h.desired.map.has('a'), false);
    assert.equal(h.loop.desiredPod('a'), undefined);
    assert.deepEqual(h.poker.take(), ['kill:a']);
  });

  it("a pending kill's grace only ever shrinks", async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(update('REMOVE', [item(pod('a', { grace: 30 }))]));
    const first = h.kills.map.get('a');
    assert.equal(first?.value.gracePeriodOverride, undefined);
    // A shorter grace (deletionGracePeriodSeconds 5) shortens it by CAS.
    await h.loop.handlePodUpdate(update('REMOVE', [item(pod('a', { grace: 30, deletionGrace: 5 }))]));
    assert.equal(h.kills.map.get('a')?.value.gracePeriodOverride, 5);
    assert.ok((h.kills.map.get('a')?.revision ?? 0) > (first?.revision ?? 0));
    // A longer one leaves it alone.
    const rev = h.kills.map.get('a')?.revision;
    await h.loop.handlePodUpdate(update('REMOVE', [item(pod('a', { grace: 30, deletionGrace: 10 }))]));
    assert.equal(h.kills.map.get('a')?.value.gracePeriodOverride, 5);
    assert.equal(h.kills.map.get('a')?.revision, rev);
    assert.equal(h.kills.map.get('a')?.value.reason, 'removed');
  });
});

describe('PLEG events (HandlePodSyncs)', () => {
  it('pokes sync for a desired pod, not for ContainerRemoved, unknown or rejected pods', async () => {
    const h = await harness({ node: aNode({ allocatable: { cpu: '1', memory: '4Gi', pods: '110' } }) });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a')), item(pod('r', { cpu: '4' }))]));
    h.poker.take();
    const ev = (uid: string, event: 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved') => ({
      type: 'kubelet.pleg.PodLifecycleEvent.v1' as const,
      uid,
      event,
      data: 'c1',
      at: new Date(START).toISOString(),
    });
    await h.loop.handlePlegEvent(ev('a', 'ContainerStarted'));
    await h.loop.handlePlegEvent(ev('a', 'ContainerDied'));
    await h.loop.handlePlegEvent(ev('a', 'ContainerRemoved'));
    await h.loop.handlePlegEvent(ev('nobody', 'ContainerStarted'));
    await h.loop.handlePlegEvent(ev('r', 'ContainerStarted'));
    assert.deepEqual(h.poker.take(), ['sync:a', 'sync:a']);
  });

  it('events of one runtime cache write poke once; a failed poke is retried by the event delivered again', async () => {
    const h = await harness();
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a')), item(pod('b'))]));
    h.poker.take();
    const ev = (uid: string, data: string, cacheRevision?: number): PodLifecycleEvent => ({
      type: 'kubelet.pleg.PodLifecycleEvent.v1',
      uid,
      event: 'ContainerStarted',
      data,
      at: new Date(START).toISOString(),
      ...(cacheRevision === undefined ? {} : { cacheRevision }),
    });
    // The sandbox and the container seen started in one relist: one write, one poke — concurrently too.
    await Promise.all([h.loop.handlePlegEvent(ev('a', 'sandbox', 7)), h.loop.handlePlegEvent(ev('a', 'c1', 7))]);
    await h.loop.handlePlegEvent(ev('b', 'sandbox', 7));
    assert.deepEqual(h.poker.take(), ['sync:a', 'sync:b']);
    // A later write, and events that name no write, each poke.
    await h.loop.handlePlegEvent(ev('a', 'c1', 9));
    await h.loop.handlePlegEvent(ev('a', 'c1'));
    await h.loop.handlePlegEvent(ev('a', 'c1'));
    assert.deepEqual(h.poker.take(), ['sync:a', 'sync:a', 'sync:a']);
    h.poker.fail = true;
    await assert.rejects(h.loop.handlePlegEvent(ev('a', 'sandbox', 11)));
    h.poker.fail = false;
    await h.loop.handlePlegEvent(ev('a', 'c1', 11));
    await h.loop.handlePlegEvent(ev('a', 'sandbox', 11));
    assert.deepEqual(h.poker.take(), ['sync:a']);
  });
});

describe('tick (the work queue)', () => {
  it('pokes each due nextSyncAt once', async () => {
    const h = await harness();
    h.workers.map.set('due', worker('due', { nextSyncAt: START - 1 }));
    h.workers.map.set('later', worker('later', { nextSyncAt: START + 5000 }));
    h.workers.map.set('done', worker('done', { nextSyncAt: START - 1, finished: true }));
    h.workers.map.set('none', worker('none'));
    assert.equal(await h.loop.tick(), 1);
    assert.deepEqual(h.poker.take(), ['sync:due']);
    h.clock.advance(1000);
    await h.loop.tick();
    assert.deepEqual(h.poker.take(), []);
    // The worker requeued with a new time: poked again once due.
    h.workers.map.set('due', worker('due', { nextSyncAt: START + 2000 }));
    h.clock.advance(6000);
    await h.loop.tick();
    assert.deepEqual(h.poker.take().sort(), ['sync:due', 'sync:later']);
  });

  it("a retry continues the worker's nextSyncTrace; a plain resync pokes unsampled", async () => {
    const h = await harness();
    h.workers.map.set('retry', worker('retry', { nextSyncAt: START - 1, nextSyncTrace: TRACE }));
    h.workers.map.set('resync', worker('resync', { nextSyncAt: START - 1 }));
    await h.loop.tick();
    const ctxOf = (uid: string) => trace.getSpanContext(h.poker.pokes.find((p) => p.uid === uid)!.ctx!);
    const retry = ctxOf('retry');
    assert.equal(retry?.traceId, '0af7651916cd43dd8448eb211c80319c');
    assert.equal(retry?.spanId, 'b7ad6b7169203331', 'the poke is sent as a child of the sync that requeued');
    assert.equal(retry?.traceFlags, TraceFlags.SAMPLED);
    const resync = ctxOf('resync');
    assert.ok(resync !== undefined && trace.isSpanContextValid(resync), 'the resync poke carries a span context…');
    assert.equal(resync.traceFlags, TraceFlags.NONE, '…that is not sampled, so no process records a span for it');
  });

  it('retries a failed poke on the next tick', async () => {
    const h = await harness();
    h.workers.map.set('due', worker('due', { nextSyncAt: START }));
    h.poker.fail = true;
    await h.loop.tick();
    h.poker.fail = false;
    await h.loop.tick();
    assert.deepEqual(h.poker.take(), ['sync:due']);
  });
});

describe('housekeeping (HandlePodCleanups)', () => {
  it('kills a running runtime pod unknown to config and workers with a 1 s grace; leaves stopped ones', async () => {
    const h = await harness({ sources: READY });
    h.runtime.map.set('orphan', runtimeEntry('orphan', true));
    h.runtime.map.set('dead', runtimeEntry('dead', false));
    await h.loop.housekeeping();
    const k = h.kills.map.get('orphan')?.value;
    assert.equal(k?.reason, 'orphaned');
    assert.equal(k?.gracePeriodOverride, 1);
    assert.deepEqual(k?.runningPod, { uid: 'orphan', name: 'orphan-orphan', namespace: 'default' });
    assert.equal(k?.pod, undefined);
    assert.equal(h.kills.map.has('dead'), false);
    assert.deepEqual(h.poker.take(), ['kill:orphan']);
    assert.equal(await metric(h.registry, 'kubelet_orphaned_runtime_pods_total'), 1);
    assert.ok(h.tracing.spansNamed('killPod').length === 1);
  });

  it('does not kill runtime pods that are desired, have a worker, or already have a kill', async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('desired'))]));
    h.poker.take();
    h.runtime.map.set('desired', runtimeEntry('desired', true));
    h.runtime.map.set('worked', runtimeEntry('worked', true));
    h.workers.map.set('worked', worker('worked', { state: 'terminating' }));
    h.runtime.map.set('killing', runtimeEntry('killing', true));
    h.kills.map.set('killing', { value: { type: 'kubelet.podworker.KillRequest.v1', uid: 'killing', reason: 'orphaned', requestedAt: 'x' }, revision: 2 });
    h.kills.map.set('worked', { value: { type: 'kubelet.podworker.KillRequest.v1', uid: 'worked', reason: 'removed', requestedAt: 'x' }, revision: 1 });
    h.syncKillView();
    await h.loop.housekeeping();
    assert.deepEqual(h.poker.take(), []);
  });

  it('kills workers whose pod is no longer desired and has no kill (finished or not)', async () => {
    const h = await harness({ sources: READY });
    h.workers.map.set('gone', worker('gone'));
    h.workers.map.set('gone-finished', worker('gone-finished', { state: 'terminated', finished: true }));
    await h.loop.housekeeping();
    assert.equal(h.kills.map.get('gone')?.value.reason, 'removed');
    assert.deepEqual(h.kills.map.get('gone')?.value.runningPod, { uid: 'gone', name: 'pod-gone', namespace: 'default' });
    assert.equal(h.kills.map.get('gone-finished')?.value.reason, 'removed');
    assert.deepEqual(h.poker.take().sort(), ['kill:gone', 'kill:gone-finished']);
  });

  it('asks volume-manager to keep desired pods, unfinished workers and running pods; a failure is not fatal', async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'))]));
    h.workers.map.set('a', worker('a'));
    h.workers.map.set('t', worker('t', { state: 'terminating' }));
    h.workers.map.set('f', worker('f', { state: 'terminated', finished: true }));
    h.runtime.map.set('r', runtimeEntry('r', true));
    h.volumes.error = new Error('no responder for sl.node-1.rpc.volume.cleanup');
    assert.equal(await h.loop.housekeeping(), true);
    assert.deepEqual(h.volumes.calls[0], ['a', 'r', 't']);
    assert.ok(h.logs.some((l) => l.includes('Failed cleaning up orphaned pod directories')));
    // Logged once, not on every pass.
    await h.loop.housekeeping();
    assert.equal(h.logs.filter((l) => l.includes('Failed cleaning up orphaned pod directories')).length, 1);
  });

  it('restarts desired pods unknown to the workers after a while (UID reuse, a lost poke)', async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('s', { static: true }))]));
    h.poker.take();
    await h.loop.housekeeping();
    assert.deepEqual(h.poker.take(), []);
    h.clock.advance(10_000);
    await h.loop.housekeeping();
    assert.deepEqual(h.poker.take(), ['create:s']);
    assert.equal(await metric(h.registry, 'kubelet_restarted_pods_total', { static: 'true' }), 1);
  });

  it('sets the desired, active and working pod gauges', async () => {
    const h = await harness({ sources: READY, node: aNode({ allocatable: { cpu: '1', memory: '4Gi', pods: '110' } }) });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a')), item(pod('s', { static: true })), item(pod('rej', { cpu: '4' }))]));
    h.workers.map.set('a', worker('a', { state: 'sync' }));
    h.workers.map.set('s', worker('s', { state: 'terminating' }));
    h.workers.map.set('old', worker('old', { state: 'terminating' }));
    h.kills.map.set('old', { value: { type: 'kubelet.podworker.KillRequest.v1', uid: 'old', reason: 'removed', requestedAt: 'x' }, revision: 1 });
    h.syncKillView();
    h.runtime.map.set('o', runtimeEntry('o', true));
    await h.loop.housekeeping();
    assert.equal(await metric(h.registry, 'kubelet_desired_pods', { static: '' }), 2);
    assert.equal(await metric(h.registry, 'kubelet_desired_pods', { static: 'true' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_active_pods', { static: '' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_active_pods', { static: 'true' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_working_pods', { lifecycle: 'sync', config: 'desired', static: '' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_working_pods', { lifecycle: 'terminating', config: 'desired', static: 'true' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_working_pods', { lifecycle: 'terminating', config: 'orphan', static: '' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_working_pods', { lifecycle: 'terminating', config: 'runtime_only', static: 'unknown' }), 1);
    assert.equal(await metric(h.registry, 'kubelet_working_pods', { lifecycle: 'terminated', config: 'desired', static: '' }), 0);
  });

  it('logs a pass slower than 1 s as an error', async () => {
    const h = await harness({ sources: READY });
    const slow = h.volumes.cleanup.bind(h.volumes);
    h.volumes.cleanup = async (keep) => {
      h.clock.advance(1500);
      return slow(keep);
    };
    await h.loop.housekeeping();
    const line = h.logs.find((l) => l.includes('Housekeeping took longer than expected'));
    assert.ok(line);
    assert.match(line, /"expected":"1s","actual":"1.5s"/);
  });
});

describe('config updates delivered again (PodUpdate.origin)', () => {
  const from = (publisher: string, seq: number, u: PodUpdate): PodUpdate => ({ ...u, origin: { publisher, seq } });
  const image = (uid: string, img: string): BoundPod => {
    const p = pod(uid);
    p.spec.containers[0]!.image = img;
    return p;
  };

  it('skips an ADD or UPDATE at or below the last seq applied from its publisher: the pod keeps its newer spec, nothing is poked', async () => {
    const h = await harness({ sources: READY });
    const add = from('cs-1', 1, update('ADD', [item(image('a', 'busybox:1'))]));
    const upd = from('cs-1', 2, update('UPDATE', [item(image('a', 'busybox:2'))]));
    await h.loop.handlePodUpdate(add);
    await h.loop.handlePodUpdate(upd);
    assert.deepEqual(h.poker.take(), ['create:a', 'update:a']);
    // nats-server lost the acks: both come again, in order.
    await h.loop.handlePodUpdate(add);
    await h.loop.handlePodUpdate(upd);
    assert.deepEqual(h.poker.take(), []);
    assert.equal(h.desired.map.get('a')?.pod.spec.containers[0]?.image, 'busybox:2');
    assert.deepEqual(h.desired.map.get('a')?.configOrigin, { publisher: 'cs-1', seq: 2 });
    assert.equal(await metric(h.registry, 'splitlet_config_updates_replayed_total'), 2);
    const line = h.logs.find((l) => l.includes('skipping a pod update applied already'));
    assert.match(line ?? '', /"op":"ADD".*"publisher":"cs-1","seq":1,"lastApplied":2/);
    // The next update of that publisher, and any of a new one (config-source restarted), are applied.
    await h.loop.handlePodUpdate(from('cs-1', 3, update('UPDATE', [item(image('a', 'busybox:3'))])));
    await h.loop.handlePodUpdate(from('cs-2', 1, update('UPDATE', [item(image('a', 'busybox:4'))])));
    assert.deepEqual(h.poker.take(), ['update:a', 'update:a']);
    assert.equal(h.desired.map.get('a')?.pod.spec.containers[0]?.image, 'busybox:4');
  });

  it('a replayed ADD does not bring back a pod removed since, also from an older publisher', async () => {
    const h = await harness({ sources: READY });
    const add = from('cs-1', 7, update('ADD', [item(pod('a'))]));
    await h.loop.handlePodUpdate(add);
    await h.loop.handlePodUpdate(from('cs-2', 1, update('REMOVE', [item(pod('a'))])));
    assert.deepEqual(h.poker.take(), ['create:a', 'kill:a']);
    await h.loop.handlePodUpdate(add);
    assert.deepEqual(h.poker.take(), []);
    assert.equal(h.loop.desiredPod('a'), undefined);
  });

  it('an update whose write failed is not counted as applied: delivered again, it is applied', async () => {
    const h = await harness();
    const add = from('cs-1', 1, update('ADD', [item(pod('a'))]));
    h.desired.failPut = true;
    await assert.rejects(h.loop.handlePodUpdate(add));
    h.desired.failPut = false;
    await h.loop.handlePodUpdate(add);
    assert.deepEqual(h.poker.take(), ['create:a']);
  });

  it('a restarted sync loop knows the updates its desired pods came from, all but the latest of each publisher (it may have been cut off)', async () => {
    const first = await harness({ sources: READY });
    const add = from('cs-1', 4, update('ADD', [item(pod('a')), item(pod('b'))]));
    const upd = from('cs-1', 5, update('UPDATE', [item(image('a', 'busybox:2'))]));
    await first.loop.handlePodUpdate(add);
    // The leader was killed after writing a's record, before its poke.
    first.poker.fail = true;
    await assert.rejects(first.loop.handlePodUpdate(upd));
    assert.deepEqual(first.desired.map.get('a')?.configOrigin, { publisher: 'cs-1', seq: 5 });
    const second = await harness({ sources: READY, desired: [...first.desired.map.values()] });
    await second.loop.handlePodUpdate(add);
    assert.deepEqual(second.poker.take(), []);
    await second.loop.handlePodUpdate(upd);
    assert.deepEqual(second.poker.take(), ['update:a']);
    await second.loop.handlePodUpdate(upd);
    assert.deepEqual(second.poker.take(), []);
  });

  it('a restarted sync loop skips a replayed ADD of an earlier publisher whose records a newer one rewrote and removed', async () => {
    const first = await harness({ sources: READY });
    const oldAdd = from('cs-1', 3, update('ADD', [item(pod('a')), item(pod('b'))]));
    await first.loop.handlePodUpdate(oldAdd);
    assert.deepEqual(first.applied.marks, [], 'nothing to persist before the first publisher');
    // config-source restarted: its first update rewrites both records, then b is removed.
    await first.loop.handlePodUpdate(from('cs-2', 1, update('RECONCILE', [item(pod('a')), item(pod('b'))])));
    assert.deepEqual(first.applied.marks, [['cs-1', ALL_APPLIED]], 'cs-1 persisted done before cs-2 was applied');
    await first.loop.handlePodUpdate(from('cs-2', 2, update('REMOVE', [item(pod('b'))])));
    await first.loop.handlePodUpdate(from('cs-2', 3, update('UPDATE', [item(pod('a'))])));
    assert.equal(first.loop.desiredPod('b'), undefined);
    assert.deepEqual(
      [...first.desired.map.values()].map((d) => d.configOrigin?.publisher),
      ['cs-2'],
      'no record names cs-1 any more',
    );
    first.poker.take();
    // Restarted (a new leader), the loop gets SL_CONFIG again from an older ack floor.
    const second = await harness({ sources: READY, desired: [...first.desired.map.values()], applied: first.applied.marks });
    await second.loop.handlePodUpdate(oldAdd);
    await second.loop.handlePodUpdate(from('cs-2', 2, update('REMOVE', [item(pod('b'))])));
    assert.equal(second.loop.desiredPod('b'), undefined, 'b stays removed');
    assert.deepEqual(second.poker.take(), []);
    // cs-2's last update counts as cut off (its record may have been written before the poke): applied again.
    await second.loop.handlePodUpdate(from('cs-2', 3, update('UPDATE', [item(pod('a'))])));
    assert.deepEqual(second.poker.take(), ['update:a']);
    assert.deepEqual(second.applied.marks, [['cs-1', ALL_APPLIED]], 'a known publisher writes nothing');
  });

  it('a new publisher whose earlier ones cannot be persisted is not applied (retryable), and is once they are', async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(from('cs-1', 1, update('ADD', [item(pod('a'))])));
    h.poker.take();
    h.applied.fail = true;
    const next = from('cs-2', 1, update('ADD', [item(pod('b'))]));
    await assert.rejects(h.loop.handlePodUpdate(next), (e: Error & { reason?: string }) => {
      assert.match(e.message, /could not persist the updates applied from earlier config publishers/);
      return true;
    });
    assert.equal(h.loop.desiredPod('b'), undefined);
    assert.deepEqual(h.poker.take(), []);
    h.applied.fail = false;
    await h.loop.handlePodUpdate(next);
    assert.deepEqual(h.poker.take(), ['create:b']);
    assert.deepEqual(h.applied.marks, [['cs-1', ALL_APPLIED]]);
  });

  it("a loop that started since knows a publisher's latest update only as maybe cut off; a new publisher marks it done", async () => {
    const first = await harness({ sources: READY });
    const addX = from('cs-1', 10, update('ADD', [item(pod('x'))]));
    await first.loop.handlePodUpdate(from('cs-1', 9, update('ADD', [item(pod('y'))])));
    await first.loop.handlePodUpdate(addX);
    // A new leader: from x's record it counts cs-1's 10 as maybe cut off (addX was acknowledged: not delivered again).
    const second = await harness({ sources: READY, desired: [...first.desired.map.values()] });
    await second.loop.handlePodUpdate(from('cs-2', 1, update('RECONCILE', [item(pod('x')), item(pod('y'))])));
    await second.loop.handlePodUpdate(from('cs-2', 2, update('REMOVE', [item(pod('x'))])));
    assert.deepEqual(second.applied.marks, [['cs-1', ALL_APPLIED]]);
    second.poker.take();
    // nats-server lost the acks; the next leader gets SL_CONFIG again from an older ack floor.
    const third = await harness({ sources: READY, desired: [...second.desired.map.values()], applied: second.applied.marks });
    await third.loop.handlePodUpdate(addX);
    assert.equal(third.loop.desiredPod('x'), undefined, 'x stays removed');
    assert.deepEqual(third.poker.take(), []);
    const line = third.logs.find((l) => l.includes('skipping a pod update applied already'));
    assert.match(line ?? '', /"publisher":"cs-1","seq":10,"lastApplied":"all \(a newer publisher has started since\)"/);
  });

  it('updates without an origin (made by hand) are always applied', async () => {
    const h = await harness({ sources: READY });
    await h.loop.handlePodUpdate(from('cs-1', 9, update('ADD', [item(pod('a'))])));
    await h.loop.handlePodUpdate(update('UPDATE', [item(pod('a'))]));
    await h.loop.handlePodUpdate(update('UPDATE', [item(pod('a'))]));
    assert.deepEqual(h.poker.take(), ['create:a', 'update:a', 'update:a']);
  });
});

describe('start', () => {
  it('rebuilds the pod manager from sl_desired and the seen sources from sl_node', async () => {
    const first = await harness({ sources: READY });
    await first.loop.handlePodUpdate(update('ADD', [item(pod('a'))]));
    const second = await harness({ sources: READY, desired: [...first.desired.map.values()] });
    assert.equal(second.loop.desiredPod('a')?.updateType, 'create');
    assert.equal(second.loop.sourcesReady.allReady(), true);
  });
});
