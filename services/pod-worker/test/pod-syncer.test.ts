import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { aContainer, aPod } from '@splitlet/kube/testing';
import { extractContext, injectContext } from '@splitlet/telemetry';
import { createTestTracing } from '@splitlet/telemetry/testing';
import type { TestTracing } from '@splitlet/telemetry/testing';
import { isSyncAborted } from '../src/pod-workers/pod-workers.js';
import { EPOCH, PP, T0, control, harness } from './sync-harness.js';
import { settle } from './fakes.js';

let tracing: TestTracing;
before(() => {
  tracing = createTestTracing({ register: true });
});
after(async () => {
  await tracing.shutdown();
});
beforeEach(() => tracing.reset());

const UID = '12345678';

describe('PodSyncer: SyncPod', () => {
  it("mounts the pod's volumes while its first status is on the way to status-manager, and calls the runtime only once the status was acknowledged", async () => {
    const h = harness(tracing);
    h.desire(aPod());
    let acknowledge!: () => void;
    const send = h.status.send.bind(h.status);
    let held = true;
    h.status.send = (u) => {
      if (!held) return send(u);
      held = false;
      return send(u).then(() => new Promise<void>((r) => (acknowledge = r)));
    };
    const syncing = h.sync(UID);
    for (let i = 0; i < 50 && h.volumes.mounts.length === 0; i++) await settle();
    assert.equal(h.volumes.mounts.length, 1, 'the volume mount was requested before the status was acknowledged');
    assert.equal(h.status.of(UID).length, 1, 'the Pending status was sent');
    await settle(20);
    assert.equal(h.runtime.syncCalls.length, 0, 'no runtime SyncPod before the status was acknowledged');
    acknowledge();
    assert.deepEqual(await syncing, {});
    assert.equal(h.runtime.syncCalls.length, 1);
    assert.deepEqual(
      h.status.of(UID).map((u) => u.status?.phase),
      ['Pending', 'Running'],
      'in order',
    );
  });

  it('a first status the bus refuses fails the sync, also when the volume mount failed meanwhile; the runtime is not called', async () => {
    for (const mountFails of [false, true]) {
      const h = harness(tracing);
      h.desire(aPod());
      h.status.send = () => Promise.reject(new Error('nats: timeout'));
      if (mountFails) h.volumes.mount = () => Promise.reject(new Error('mount failed'));
      await assert.rejects(h.sync(UID), /nats: timeout/, `mount fails: ${mountFails}`);
      assert.equal(h.runtime.syncCalls.length, 0);
    }
  });

  it('creates a pod: status, mount, runtime SyncPod with the fence, Running reported from the reply, requeued at the resync interval', async () => {
    const h = harness(tracing);
    const parent = tracing.tracer.startSpan('config-source');
    const carrier = injectContext(trace.setSpan(ROOT_CONTEXT, parent));
    parent.end();
    const seen = new Date(T0 - 2000).toISOString();
    h.desire(aPod({ metadata: { annotations: { 'kubernetes.io/config.seen': seen } } }), 'create', { trace: carrier });
    const c = control();
    const r = await h.sync(UID, c);
    assert.deepEqual(r, {});
    assert.equal(c.terminating, false);
    assert.equal(h.volumes.mounts.length, 1);
    assert.deepEqual(h.volumes.mounts[0]!.fence, { partition: PP, epoch: EPOCH });
    assert.equal(h.runtime.syncCalls.length, 1);
    assert.deepEqual(h.runtime.syncCalls[0]!.fence, { partition: PP, epoch: EPOCH });
    assert.equal(h.runtime.syncCalls[0]!.podDir, `/var/lib/kubelet/pods/${UID}`, 'the pod directory volume-manager made, for the managed files');
    assert.equal(h.runtime.syncCalls[0]!.podStatusTimestamp, 1, "the cache's time of the status it synced on (cri-adapter trusts it empty when newer than its last change)");
    const sets = h.status.of(UID).filter((u) => u.kind === 'set');
    assert.equal(sets.at(0)!.status!.phase, 'Pending');
    assert.equal(sets.at(-1)!.status!.phase, 'Running', 'Running without waiting for a relist');
    assert.ok(sets.every((u) => u.couldHaveRunningContainers));
    assert.equal(sets.at(-1)!.status!.containerStatuses![0]!.containerID, 'containerd://foo1-id');
    const rec = h.rec(UID)!;
    assert.equal(rec.state, 'sync');
    assert.equal(rec.finished, false);
    assert.equal(rec.nextSyncAt, T0 + 60_000, 'jitter(60 s, 0.5) with random 0');
    assert.equal(rec.runningObserved, true);
    assert.equal(rec.lastSyncTime, T0);
    assert.equal(rec.epoch, EPOCH);
    assert.deepEqual(h.metrics.podStart, [2]);
    assert.deepEqual(h.metrics.podStartSli, [[2, 2]], 'every container running: the SLI, from config.seen without a creation timestamp');
    assert.equal(rec.startedObserved, true);
    assert.deepEqual(h.metrics.workerStart, [2]);
    assert.deepEqual(h.metrics.workerDuration, ['create']);

    const [syncPod] = tracing.spansNamed('syncPod');
    assert.ok(syncPod);
    assert.equal(syncPod.parentSpanContext?.spanId, parent.spanContext().spanId, 'parent = the desired record trace');
    assert.equal(syncPod.attributes['k8s.pod.update_type'], 'create');
    assert.equal(syncPod.attributes['k8s.pod.uid'], UID);
    assert.equal(syncPod.attributes['k8s.pod.name'], 'foo');
    assert.equal(syncPod.attributes['k8s.namespace.name'], 'default');
    const children = tracing
      .spans()
      .filter((s) => s.parentSpanContext?.spanId === syncPod.spanContext().spanId)
      .map((s) => s.name);
    assert.deepEqual(children, ['generateAPIPodStatus', 'canRunPod', 'makePodDataDirs+waitForAttachAndMount', 'getPullSecretsForPod', 'runtime.SyncPod']);

    // The next sync is a plain resync labelled `sync`, waiting for a cache newer than the last sync.
    h.clock.advance(60_000);
    h.guard.renewed(h.clock.now());
    await h.sync(UID);
    assert.deepEqual(h.cache.calls.at(-1), { uid: UID, after: T0 });
    assert.deepEqual(h.metrics.workerDuration, ['create', 'sync']);
    assert.deepEqual(h.metrics.podStart, [2], 'pod start observed once');
    assert.equal(h.metrics.podStartSli.length, 1, 'the SLI observed once');
  });

  it("the next sync waits for a cache newer than the runtime reply's node time, not than the end of the sync", async () => {
    const h = harness(tracing);
    h.desire(aPod());
    // cri-adapter made its changes at T0 - 5 (node time); the sync ends at T0 + 40.
    h.runtime.replyTimestamp = T0 - 5;
    h.runtime.during = () => h.clock.advance(40);
    await h.sync(UID);
    assert.equal(h.rec(UID)!.runtimeSyncedAt, T0 - 5);
    assert.equal(h.rec(UID)!.lastSyncTime, T0 + 40);
    h.runtime.during = undefined;
    h.runtime.replyTimestamp = undefined;
    await h.sync(UID);
    assert.deepEqual(h.cache.calls.at(-1), { uid: UID, after: T0 - 5 }, 'the relist pleg started after the change satisfies it');
    // That sync made a runtime call without a timestamp (an older cri-adapter): back to lastSyncTime.
    assert.equal(h.rec(UID)!.runtimeSyncedAt, undefined);
    await h.sync(UID);
    assert.deepEqual(h.cache.calls.at(-1), { uid: UID, after: h.rec(UID)!.lastSyncTime! - 0 });
  });

  it('a static pod gets the mirrorPod step, and pull secret names go to the runtime', async () => {
    const h = harness(tracing);
    h.desire(aPod({ metadata: { annotations: { 'kubernetes.io/config.source': 'file' } }, spec: { imagePullSecrets: [{ name: 'regcred' }] } }));
    await h.sync(UID);
    assert.equal(tracing.spansNamed('mirrorPod').length, 1);
    // Standalone mode has no API server: the step's span says it did nothing.
    assert.equal(tracing.spansNamed('mirrorPod')[0]?.attributes['splitlet.step.noop'], true);
    assert.match(String(tracing.spansNamed('mirrorPod')[0]?.attributes['splitlet.step.noop_reason']), /no API server/);
    assert.deepEqual(h.runtime.syncCalls[0]!.pullSecrets, ['regcred']);
  });

  it('backoff-only failures are not errors (resync 60 s) but fill the reasons cache; a later success clears it', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    h.runtime.nextResults = [{ action: 'StartContainer', target: 'foo1', error: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=foo1' }];
    await h.sync(UID);
    let rec = h.rec(UID)!;
    assert.deepEqual(rec.reasons, { foo1: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=foo1' } });
    assert.equal(rec.nextSyncAt, T0 + 60_000);
    const last = h.status.of(UID).at(-1)!;
    assert.equal(last.status!.containerStatuses![0]!.state!.waiting!.reason, 'CrashLoopBackOff');
    h.runtime.nextResults = undefined;
    await h.sync(UID);
    rec = h.rec(UID)!;
    assert.deepEqual(rec.reasons, {});
  });

  it('other runtime failures requeue after 10 s; "network is not ready" after 1 s', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    h.runtime.nextResults = [{ action: 'StartContainer', target: 'foo1', error: 'RunContainerError', message: 'exec format error' }];
    await h.sync(UID);
    assert.equal(h.rec(UID)!.nextSyncAt, T0 + 10_000);
    assert.equal(h.rec(UID)!.reasons['foo1']!.reason, 'RunContainerError');
    const [span] = tracing.spansNamed('syncPod');
    assert.equal(span!.status.code, 2, 'syncPod span marked as error');
    assert.match(span!.status.message ?? '', /failed to "StartContainer" for "foo1" with RunContainerError: "exec format error"/);

    h.runtime.nextResults = [{ action: 'CreatePodSandbox', target: UID, error: 'CreatePodSandboxError', message: 'network is not ready: cni config uninitialized' }];
    await h.sync(UID);
    assert.equal(h.rec(UID)!.nextSyncAt, T0 + 1_000);
  });

  it('a failed mount is a FailedMount event and a requeue; the runtime is not called', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    h.volumes.mountError = new Error('configmap "cfg" not found');
    await h.sync(UID);
    assert.equal(h.runtime.syncCalls.length, 0);
    assert.deepEqual(
      h.events.events.map((e) => [e.eventType, e.reason, e.message]),
      [['Warning', 'FailedMount', 'Unable to attach or mount volumes: configmap "cfg" not found']],
    );
    assert.equal(h.events.events[0]!.involvedObject.uid, UID);
    assert.equal(h.rec(UID)!.nextSyncAt, T0 + 10_000);
  });

  it('canRunPod refuses privileged pods: Forbidden status with Blocked containers, an event, the pod killed, requeued as an error', async () => {
    const h = harness(tracing);
    h.desire(aPod({ spec: { containers: [aContainer({ securityContext: { privileged: true } })] } }));
    await h.sync(UID);
    const msg = `pod with UID "${UID}" specified privileged container, but is disallowed`;
    const last = h.status.of(UID).at(-1)!.status!;
    assert.equal(last.reason, 'Forbidden');
    assert.equal(last.message, msg);
    assert.equal(last.containerStatuses![0]!.state!.waiting!.reason, 'Blocked');
    assert.deepEqual(
      h.events.events.map((e) => [e.reason, e.message]),
      [['Forbidden', msg]],
    );
    assert.equal(h.runtime.killCalls.length, 1);
    assert.equal(h.runtime.syncCalls.length, 0);
    assert.equal(h.rec(UID)!.state, 'sync');
    assert.equal(h.rec(UID)!.nextSyncAt, T0 + 10_000);
  });

  it('host namespaces are refused too, unless privileged pods are allowed', async () => {
    const h = harness(tracing);
    h.desire(aPod({ spec: { hostNetwork: true } }));
    await h.sync(UID);
    assert.equal(h.status.of(UID).at(-1)!.status!.message, `pod with UID "${UID}" specified host networking, but is disallowed`);
    const ok = harness(tracing, { allowPrivileged: true });
    ok.desire(aPod({ spec: { hostNetwork: true } }));
    await ok.sync(UID);
    assert.equal(ok.runtime.syncCalls.length, 1);
  });

  it('a terminal phase moves the pod to terminating and on to terminated; a still-desired pod is finished, not forgotten', async () => {
    const h = harness(tracing);
    h.desire(aPod({ spec: { restartPolicy: 'Never' } }));
    h.runtime.exitCode = 0;
    const c = control();
    const r = await h.sync(UID, c);
    assert.deepEqual(r, { again: true });
    assert.equal(h.status.of(UID).at(-1)!.status!.phase, 'Succeeded');
    assert.equal(h.rec(UID)!.state, 'terminating');
    const cacheReads = h.cache.calls.length;
    const r2 = await h.sync(UID);
    assert.deepEqual(r2, { again: true });
    assert.equal(h.cache.calls.length, cacheReads, 'the runtime status from the reply is handed over: no relist wait');
    assert.equal(h.runtime.killCalls.length, 1);
    assert.equal(h.rec(UID)!.state, 'terminated');
    const last = h.status
      .of(UID)
      .filter((u) => u.status !== undefined)
      .at(-1)!.status!;
    assert.equal(last.podIP, '10.0.0.2', 'the completed pod keeps its IP after KillPod tore the sandbox down (GenericPLEG.getPodIPs)');
    assert.deepEqual(last.podIPs, [{ ip: '10.0.0.2' }]);
    await h.sync(UID);
    const rec = h.rec(UID)!;
    assert.equal(rec.finished, true);
    assert.equal(rec.nextSyncAt, undefined);
    assert.equal(h.volumes.unmounts.length, 1);
    assert.equal(h.volumes.unmounts[0]!.removeContent, false);
    const kinds = h.status.of(UID).map((u) => u.kind);
    assert.equal(kinds.at(-1), 'terminated');
    assert.equal(h.status.of(UID).at(-1)!.couldHaveRunningContainers, false);
    assert.ok(!kinds.includes('removed'));
    // A finished worker ignores later updates.
    h.desire(aPod({ spec: { restartPolicy: 'Never' } }), 'update');
    const before = h.status.updates.length;
    await h.sync(UID);
    assert.equal(h.status.updates.length, before);
  });
});

describe('PodSyncer: termination', () => {
  it('REMOVE: kill → terminating (killPod with the grace) → terminated (unmount, removeContent) → forgotten', async () => {
    const h = harness(tracing);
    h.desire(aPod({ spec: { terminationGracePeriodSeconds: 20 } }));
    await h.sync(UID);
    const pod = aPod({ spec: { terminationGracePeriodSeconds: 20 } });
    h.undesire(UID);
    h.killReq(UID, { reason: 'removed', pod });
    const c = control();
    assert.deepEqual(await h.sync(UID, c), { again: true });
    assert.equal(c.terminating, true);
    assert.equal(h.runtime.killCalls.length, 1);
    assert.equal(h.runtime.killCalls[0]!.gracePeriodOverride, 20);
    assert.deepEqual(h.runtime.killCalls[0]!.fence, { partition: PP, epoch: EPOCH });
    assert.deepEqual(
      h.runtime.killCalls[0]!.podStatus,
      { uid: UID, name: pod.metadata.name, namespace: pod.metadata.namespace, ips: [], sandboxes: [], containers: [] },
      'the kill carries the status it was based on',
    );
    assert.equal(h.rec(UID)!.state, 'terminated');
    assert.equal(h.rec(UID)!.deleted, true);
    const whileDesired = h.status.of(UID).findIndex((u) => u.podRemoved === true);
    assert.ok(
      whileDesired > 0 &&
        h.status
          .of(UID)
          .slice(0, whileDesired)
          .every((u) => u.podRemoved === undefined),
      "the creation's statuses are the desired pod's",
    );
    await h.sync(UID);
    assert.equal(h.volumes.unmounts[0]!.removeContent, true);
    const kinds = h.status.of(UID).map((u) => u.kind);
    assert.deepEqual(kinds.slice(-2), ['terminated', 'removed']);
    assert.ok(
      h.status
        .of(UID)
        .slice(whileDesired, -1)
        .every((u) => u.podRemoved === true),
      'every status of the termination says the pod was removed from its source',
    );
    assert.equal(h.rec(UID), undefined, 'worker record deleted');
    assert.equal(h.store.kill.get(`${PP}.${UID}`), null, 'kill request deleted');
    assert.equal(tracing.spansNamed('syncTerminatingPod').length, 1);
    assert.equal(tracing.spansNamed('syncTerminatedPod').length, 1);
    assert.deepEqual(h.metrics.workerDuration, ['create', 'kill', 'terminated']);
  });

  it('a pending kill is never overwritten by a later update (sticky) and the grace period only decreases', async () => {
    const h = harness(tracing);
    h.desire(aPod({ spec: { terminationGracePeriodSeconds: 30 } }));
    await h.sync(UID);
    h.runtime.killError = new Error('runtime busy');
    h.killReq(UID, { reason: 'removed', evict: true, gracePeriodOverride: 5, pod: aPod() });
    await h.sync(UID);
    let rec = h.rec(UID)!;
    assert.equal(rec.state, 'terminating');
    assert.equal(rec.gracePeriod, 5);
    assert.equal(rec.evicted, true);
    assert.deepEqual(
      h.events.events.map((e) => [e.reason, e.message]),
      [['FailedKillPod', 'error killing pod: runtime busy']],
    );
    assert.equal(rec.nextSyncAt, T0 + 10_000);
    // An update with a longer deletion grace does not bring the pod back, nor lengthen the grace.
    h.desire(aPod({ metadata: { deletionTimestamp: new Date(T0).toISOString(), deletionGracePeriodSeconds: 30 } }), 'update');
    await h.sync(UID);
    rec = h.rec(UID)!;
    assert.equal(rec.state, 'terminating');
    assert.equal(rec.gracePeriod, 5);
    // sync-loop shortens the kill's grace by CAS: the worker takes it.
    const k = h.store.kill.get(`${PP}.${UID}`)!;
    h.updateKill(UID, { ...k.value, gracePeriodOverride: 2 }, k.revision);
    await h.sync(UID);
    assert.equal(h.rec(UID)!.gracePeriod, 2);
    assert.deepEqual(
      h.runtime.killCalls.map((c) => c.gracePeriodOverride),
      [5, 5, 2],
    );
    h.runtime.killError = undefined;
    assert.equal(await h.syncAll(UID), 2);
    assert.equal(h.rec(UID)!.finished, true);
    assert.equal(h.volumes.unmounts[0]!.removeContent, true, 'evicted → content removed');
  });

  it('running containers after a successful KillPod are a CRI violation (retried)', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    await h.sync(UID);
    h.runtime.leaveRunningAfterKill = true;
    h.desire(aPod({ metadata: { deletionTimestamp: new Date(T0).toISOString(), deletionGracePeriodSeconds: 0 } }), 'update');
    await h.sync(UID);
    const rec = h.rec(UID)!;
    assert.equal(rec.state, 'terminating');
    assert.equal(rec.gracePeriod, 1, 'grace floor is 1 s');
    const [span] = tracing.spansNamed('syncTerminatingPod');
    assert.match(span!.status.message ?? '', /detected running containers after a successful KillPod, CRI violation: \[containerd:\/\/foo1-id\]/);
  });

  it('first sight of a pod whose phase is terminal with nothing running starts as terminated (kubelet restart)', async () => {
    const h = harness(tracing);
    h.desire(aPod({ status: { phase: 'Succeeded' } }), 'sync');
    await h.sync(UID);
    assert.equal(h.runtime.syncCalls.length, 0);
    assert.equal(h.runtime.killCalls.length, 0);
    assert.equal(h.rec(UID)!.finished, true);
    assert.equal(h.volumes.unmounts.length, 1);
  });

  it('a rejected pod and an unknown pod need nothing', async () => {
    const h = harness(tracing);
    h.desire(aPod(), 'create', { rejected: { reason: 'OutOfcpu', message: 'no' } });
    assert.deepEqual(await h.sync(UID), {});
    assert.deepEqual(await h.sync('nobody'), {});
    assert.equal(h.status.updates.length, 0);
    assert.equal(h.store.worker.entries.size, 0);
  });

  it('an orphaned runtime pod is killed with a 1 s grace, without a status, and its kill removed', async () => {
    const h = harness(tracing);
    h.killReq('orphan', { reason: 'orphaned', runningPod: { uid: 'orphan', name: 'old', namespace: 'default' }, gracePeriodOverride: 1 });
    await h.sync('orphan');
    assert.equal(h.runtime.killCalls.length, 1);
    assert.equal(h.runtime.killCalls[0]!.gracePeriodOverride, 1);
    assert.equal(h.runtime.killCalls[0]!.pod, undefined);
    assert.equal(h.status.updates.length, 0);
    assert.equal(h.store.kill.entries.size, 0);
  });

  it('a finished worker with a kill whose pod is no longer desired is forgotten', async () => {
    const h = harness(tracing);
    h.desire(aPod({ status: { phase: 'Failed' } }), 'sync');
    await h.sync(UID);
    assert.equal(h.rec(UID)!.finished, true);
    h.undesire(UID);
    h.killReq(UID, { reason: 'removed', pod: aPod() });
    await h.sync(UID);
    assert.equal(h.rec(UID), undefined);
    assert.equal(h.store.kill.entries.size, 0);
    assert.equal(h.status.updates.at(-1)!.kind, 'removed');
  });
});

describe('PodSyncer: aborts and fencing', () => {
  it('a kill aborts a sync waiting for its volumes: no runtime call, no record written', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    let open!: () => void;
    h.volumes.mountGate = new Promise<void>((r) => {
      open = r;
    });
    const c = control();
    const p = h.sync(UID, c);
    await settle();
    assert.equal(h.volumes.mounts.length, 1);
    c.kill();
    await assert.rejects(p, (e: unknown) => isSyncAborted(e, 'kill'));
    open();
    assert.equal(h.runtime.syncCalls.length, 0);
    assert.equal(h.rec(UID), undefined);
  });

  it('nothing happens once the lease is lost', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    h.guard.revoke();
    await assert.rejects(h.sync(UID), (e: unknown) => (e as { code?: string }).code === 'LeaseLost');
    assert.equal(h.status.updates.length, 0);
    assert.equal(h.volumes.mounts.length, 0);
    assert.equal(h.runtime.syncCalls.length, 0);
    assert.equal(h.store.worker.entries.size, 0);
  });
});

describe('PodSyncer: pod start SLI without image pulls', () => {
  it('pod_start_sli_duration_seconds leaves out the pull window cri-adapter reported across syncs; pod_start_duration_seconds keeps it', async () => {
    const h = harness(tracing);
    const created = new Date(T0 - 1000).toISOString();
    h.desire(aPod({ metadata: { creationTimestamp: created, annotations: { 'kubernetes.io/config.seen': created } } }));
    // First sync: the pull starts at T0 and fails 2 s later.
    h.runtime.nextResults = [{ action: 'StartContainer', target: 'foo1', error: 'ErrImagePull', message: 'pull access denied' }];
    h.runtime.nextPulls = { imagePullStartedAt: T0 };
    h.runtime.during = () => h.clock.advance(2000);
    await h.sync(UID);
    assert.equal(h.rec(UID)!.imagePullStartedAt, T0);
    assert.equal(h.rec(UID)!.imagePullFinishedAt, undefined);
    assert.deepEqual(h.metrics.podStartSli, []);
    // Ten seconds later the pull is retried, succeeds in 3 s, and the container runs.
    h.clock.advance(10_000);
    h.guard.renewed(h.clock.now());
    h.runtime.nextResults = undefined;
    const retry = h.clock.now();
    h.runtime.nextPulls = { imagePullStartedAt: retry, imagePullFinishedAt: retry + 3000 };
    h.runtime.during = () => h.clock.advance(3500);
    await h.sync(UID);
    // Running at T0 + 15.5 s, created at T0 − 1 s: 16.5 s in all, of which T0 … T0 + 15 s pulling.
    assert.deepEqual(h.metrics.podStartSli, [[1.5, 16.5]]);
    assert.deepEqual(h.metrics.podStart, [16.5], 'pod_start_duration_seconds includes the pulls');
    const rec = h.rec(UID)!;
    assert.equal(rec.startedObserved, true);
    assert.equal(rec.imagePullStartedAt, undefined, 'the window is forgotten once observed');
    assert.equal(rec.imagePullFinishedAt, undefined);
  });
});

describe('PodSyncer: trace of a runtime episode', () => {
  /** A finished root span (another process's), and its context as a remote parent. */
  function remote(name: string, parent = ROOT_CONTEXT) {
    const span = tracing.tracer.startSpan(name, {}, parent);
    span.end();
    const sc = span.spanContext();
    return { sc, ctx: trace.setSpanContext(ROOT_CONTEXT, { ...sc, isRemote: true }), carrier: injectContext(trace.setSpan(ROOT_CONTEXT, span)) };
  }

  it('the first sync on a container death pleg traced joins that trace (the poke linked); later syncs follow their pokes', async () => {
    const h = harness(tracing);
    h.desire(aPod());
    await h.sync(UID);
    const died = remote('ContainerDied');
    h.cache.episodes.set(UID, { trace: died.carrier, at: T0 + 500 });
    const creationPoke = remote('process sl.{node}.work.{partition}.{uid} (creation trace)');
    tracing.reset();
    h.clock.advance(1000);
    h.guard.renewed(h.clock.now());
    await h.sync(UID, control(creationPoke.ctx));
    let [s] = tracing.spansNamed('syncPod');
    assert.equal(s?.spanContext().traceId, died.sc.traceId, "the restart sync is in the episode's trace");
    assert.equal(s?.parentSpanContext?.spanId, died.sc.spanId);
    assert.deepEqual(
      s?.links.map((l) => l.context.spanId),
      [creationPoke.sc.spanId],
      'the poke that ran it is linked',
    );
    assert.equal(h.rec(UID)!.episodeAt, T0 + 500, 'the worker remembers the episode it synced on');

    // The same episode again: the sync follows its poke.
    tracing.reset();
    const later = remote('process sl.{node}.work.{partition}.{uid} (later)');
    await h.sync(UID, control(later.ctx));
    [s] = tracing.spansNamed('syncPod');
    assert.equal(s?.parentSpanContext?.spanId, later.sc.spanId);

    // A newer episode whose own poke runs the sync: the poke is the parent (the hop stays visible).
    const died2 = remote('ContainerDied');
    h.cache.episodes.set(UID, { trace: died2.carrier, at: T0 + 5000 });
    const inEpisode = remote('process sl.{node}.work.{partition}.{uid} (episode 2)', trace.setSpanContext(ROOT_CONTEXT, died2.sc));
    tracing.reset();
    await h.sync(UID, control(inEpisode.ctx));
    [s] = tracing.spansNamed('syncPod');
    assert.equal(s?.spanContext().traceId, died2.sc.traceId);
    assert.equal(s?.parentSpanContext?.spanId, inEpisode.sc.spanId);
    assert.deepEqual(s?.links, []);
    assert.equal(h.rec(UID)!.episodeAt, T0 + 5000);
  });

  it("a backoff requeue carries the sync's trace for the due poke; a plain resync carries none", async () => {
    const h = harness(tracing);
    h.desire(aPod());
    await h.sync(UID);
    assert.equal(h.rec(UID)!.nextSyncTrace, undefined, 'running: the 60–90 s resync starts no trace');
    tracing.reset();
    h.runtime.nextResults = [
      { action: 'StartContainer', target: 'foo1', error: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=foo1', retryAt: T0 + 10_000 },
    ];
    await h.sync(UID);
    const [s] = tracing.spansNamed('syncPod');
    const rec = h.rec(UID)!;
    assert.equal(rec.nextSyncAt, T0 + 10_000);
    const due = trace.getSpanContext(extractContext(rec.nextSyncTrace));
    assert.equal(due?.spanId, s?.spanContext().spanId, "the due sync continues the backoff's trace");
    h.runtime.nextResults = undefined;
    await h.sync(UID);
    assert.equal(h.rec(UID)!.nextSyncTrace, undefined);
  });

  it('the sync after a state transition continues the trace of the sync that made it', async () => {
    const h = harness(tracing);
    h.desire(aPod({ spec: { restartPolicy: 'Never' } }));
    h.runtime.exitCode = 0;
    await h.sync(UID);
    await h.sync(UID);
    await h.sync(UID);
    const [syncPod] = tracing.spansNamed('syncPod');
    const [terminating] = tracing.spansNamed('syncTerminatingPod');
    const [terminated] = tracing.spansNamed('syncTerminatedPod');
    assert.equal(terminating?.parentSpanContext?.spanId, syncPod?.spanContext().spanId);
    assert.equal(terminated?.parentSpanContext?.spanId, terminating?.spanContext().spanId);
  });
});
