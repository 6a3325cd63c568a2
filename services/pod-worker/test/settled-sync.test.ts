/**
 * Settled syncs (src/sync/settled-sync.ts): a sync whose inputs equal what the pod's last full
 * SyncPod in this lease epoch ended with skips the volume mount and the runtime SyncPod, and sends
 * its status only when status-manager already holds it; any real change syncs fully.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { BoundPod, PodStatus, PodStatusRecord, RuntimePodStatus, WorkerRecord } from '@splitlet/api';
import { hashContainer } from '@splitlet/kube';
import { aContainer, aPod } from '@splitlet/kube/testing';
import { createTestTracing } from '@splitlet/telemetry/testing';
import type { TestTracing } from '@splitlet/telemetry/testing';
import { LeaseGuard } from '../src/partitions/partition-guard.js';
import type { Versioned } from '../src/ports.js';
import { RECORD_MEMORY_MAX_AGE_MS } from '../src/sync/record-memory.js';
import { MAX_KNOWN_ABSENT, noRuntimeActions, runtimeKey, statusHeld, statusKey, SyncMemory, volumesSetUpOnce } from '../src/sync/settled-sync.js';
import { control, EPOCH, harness, PP } from './sync-harness.js';

let tracing: TestTracing;
before(() => {
  tracing = createTestTracing({ register: true });
});
after(async () => {
  await tracing.shutdown();
});
beforeEach(() => tracing.reset());

const UID = '12345678';
type H = ReturnType<typeof harness>;

const sets = (h: H): PodStatus[] => h.status.of(UID).flatMap((u) => (u.kind === 'set' && u.status !== undefined ? [u.status] : []));

/** A status-manager record holding `status`. */
function record(pod: BoundPod, status: PodStatus, version = 1): PodStatusRecord {
  return {
    type: 'kubelet.status.PodStatusRecord.v1',
    uid: UID,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    version,
    pod,
    status,
    finished: false,
    updatedAt: '2026-01-01T00:00:00Z',
  };
}

/** status-manager's part: it applied every set sent so far (the last one is its record). */
function applySets(h: H, pod: BoundPod): void {
  const last = sets(h).at(-1);
  assert.ok(last !== undefined);
  h.store.status.set(UID, record(pod, last, sets(h).length));
}

/** pleg's part: the cache has caught up with what cri-adapter's last SyncPod reply said (its own timestamps). */
function cacheCaughtUp(h: H): void {
  const reply = h.runtime.lastReply;
  assert.ok(reply !== undefined);
  const s = structuredClone(reply.podStatus);
  // Read again by pleg a moment later: the timestamps may be rounded differently, the content is the same.
  h.cache.statuses.set(UID, { ...s, sandboxes: s.sandboxes.map((x) => ({ ...x, createdAt: x.createdAt + 0.5 })), containers: [...s.containers].reverse() });
}

/** Creates and runs `pod`, then lets status-manager and pleg catch up and some time pass. */
async function running(h: H, pod: BoundPod): Promise<void> {
  h.desire(pod);
  await h.sync(UID);
  assert.equal(h.runtime.syncCalls.length, 1);
  applySets(h, pod);
  cacheCaughtUp(h);
  h.clock.advance(2_000);
  h.guard.renewed(h.clock.now());
}

function counts(h: H): { mounts: number; runtime: number; sets: number } {
  return { mounts: h.volumes.mounts.length, runtime: h.runtime.syncCalls.length, sets: sets(h).length };
}

describe('PodSyncer: a settled pod', () => {
  it('skips the mount, the runtime SyncPod, the status set and the worker record, and asks to sync again at the resync once sync-loop poked the stored one', async () => {
    const h = harness(tracing);
    const pod = aPod({ spec: { volumes: [{ name: 'scratch', emptyDir: {} }] } });
    await running(h, pod);
    const before = counts(h);
    const rec0 = h.rec(UID)!;
    tracing.reset();

    const r = await h.sync(UID);
    assert.deepEqual(counts(h), before, 'nothing sent to volume-manager, cri-adapter or status-manager');
    assert.deepEqual(h.rec(UID), rec0, 'the worker record is not rewritten: only its sync times would change');
    assert.deepEqual(r, {}, "the record's nextSyncAt is 58 s ahead: sync-loop's tick pokes it then, no second resync");
    assert.deepEqual(h.metrics.workerDuration, ['create', 'sync'], 'a sync all the same');
    assert.deepEqual(h.metrics.settled, [false], 'counted as settled, status not sent');
    const [span] = tracing.spansNamed('syncPod');
    assert.ok(span);
    assert.equal(span.attributes['splitlet.sync.settled'], true);
    assert.equal(span.attributes['splitlet.sync.status_sent'], false);
    const steps = tracing
      .spans()
      .filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId)
      .map((s) => s.name);
    assert.deepEqual(steps, ['generateAPIPodStatus']);

    // The tick's poke of the record's nextSyncAt: still settled (the worker record is the one it
    // remembers), and from now on the pod workers resync it themselves.
    h.clock.advance(58_000);
    h.guard.renewed(h.clock.now());
    assert.equal(h.clock.now(), rec0.nextSyncAt);
    assert.deepEqual(await h.sync(UID), { resyncAfterMs: 60_000 }, 'the pod workers sync it again at the resync (random 0), as sync-loop would have');
    h.clock.advance(60_000);
    h.guard.renewed(h.clock.now());
    assert.deepEqual(await h.sync(UID), { resyncAfterMs: 60_000 });
    assert.deepEqual(counts(h), before);
    assert.deepEqual(h.rec(UID), rec0);
  });

  it('sends the status when status-manager rolled its record back to an older set (the failure that reverted 15d66e6)', async () => {
    // status-manager killed with sets in flight gets them redelivered after the ack wait, behind
    // the newer sets its successor already applied: its record goes back to an old status (here
    // the one before the container ran). A pod-worker that only remembered what it sent would
    // never send the current status again.
    const h = harness(tracing);
    const pod = aPod();
    await running(h, pod);
    const first = sets(h)[0]!;
    assert.equal(first.phase, 'Pending');
    h.store.status.set(UID, record(pod, first, 9));
    const before = counts(h);

    await h.sync(UID);
    const after = counts(h);
    assert.equal(after.sets, before.sets + 1, 'the current status is sent again');
    assert.equal(sets(h).at(-1)!.phase, 'Running');
    assert.deepEqual([after.mounts, after.runtime], [before.mounts, before.runtime], 'the runtime is settled all the same');
    assert.deepEqual(h.metrics.settled, [true]);

    // Once status-manager holds it again, nothing more is sent.
    applySets(h, pod);
    await h.sync(UID);
    assert.deepEqual(counts(h), after);
  });

  it('sends the status while status-manager has not applied the last set yet, or lost it', async () => {
    const h = harness(tracing);
    const pod = aPod();
    h.desire(pod);
    await h.sync(UID);
    cacheCaughtUp(h);
    // status-manager holds the first set only (the second is still on its way, or its write failed).
    h.store.status.set(UID, record(pod, sets(h)[0]!));
    const before = counts(h);
    await h.sync(UID);
    assert.equal(counts(h).sets, before.sets + 1);
    assert.equal(counts(h).runtime, before.runtime);
    // No record at all (status-manager lost it): sent again.
    h.store.status.delete(UID);
    await h.sync(UID);
    assert.equal(counts(h).sets, before.sets + 2);
  });

  it('sends the status when the last set sent differs from the record though the new one equals it (a set of ours still in flight)', async () => {
    const h = harness(tracing);
    const pod = aPod({ spec: { containers: [aContainer({ readinessProbe: { exec: { command: ['true'] } } })] } });
    h.desire(pod);
    await h.sync(UID);
    cacheCaughtUp(h);
    const cid = h.runtime.lastReply!.podStatus.containers[0]!.id;
    h.probes.results.set(UID, { readiness: { [cid]: 'Success' } });
    await h.sync(UID); // readiness changed: a full sync, sends ready
    applySets(h, pod);
    const ready = sets(h).at(-1)!;
    assert.equal(ready.containerStatuses?.[0]?.ready, true);
    h.probes.results.set(UID, { readiness: { [cid]: 'Failure' } });
    await h.sync(UID); // full again: sends not-ready, which status-manager has not applied yet
    assert.equal(sets(h).at(-1)!.containerStatuses?.[0]?.ready, false);
    h.probes.results.set(UID, { readiness: { [cid]: 'Success' } });
    const before = counts(h);
    await h.sync(UID); // full (probes changed); the ready status equals the record, but not the last set sent
    assert.equal(counts(h).sets, before.sets + 2, 'the status is sent: the not-ready set would otherwise be the last word');
  });

  it('keeps not sending when status-manager rewrote only the condition times of the last set', async () => {
    const h = harness(tracing);
    const pod = aPod();
    await running(h, pod);
    const held = structuredClone(h.store.status.get(UID)!);
    held.status.conditions = held.status.conditions!.map((c) => ({ ...c, lastTransitionTime: '2026-01-01T00:00:01Z' }));
    held.status.startTime = '2026-01-01T00:00:01Z';
    h.store.status.set(UID, held);
    const before = counts(h);
    await h.sync(UID);
    assert.deepEqual(counts(h), before);
  });

  describe('syncs fully on a real change', () => {
    it('a new desired revision (an image update)', async () => {
      const h = harness(tracing);
      const pod = aPod();
      await running(h, pod);
      h.desire(aPod({ spec: { containers: [aContainer({ image: 'busybox:1.37' })] } }), 'update');
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 2);
      assert.equal(h.volumes.mounts.length, 2);
    });

    it('a container that died (the cache differs from the reply)', async () => {
      const h = harness(tracing);
      const pod = aPod();
      await running(h, pod);
      const s = h.cache.statuses.get(UID)!;
      h.cache.statuses.set(UID, { ...s, containers: s.containers.map((c) => ({ ...c, state: 'CONTAINER_EXITED' as const, exitCode: 1, finishedAt: 5, reason: 'Error' })) });
      const before = sets(h).length;
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 2);
      assert.equal(sets(h).length, before + 2);
    });

    it('a changed probe result (liveness Failure)', async () => {
      const h = harness(tracing);
      const pod = aPod({ spec: { containers: [aContainer({ livenessProbe: { exec: { command: ['true'] } } })] } });
      await running(h, pod);
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 1, 'settled with no results yet');
      const cid = h.runtime.lastReply!.podStatus.containers[0]!.id;
      h.probes.results.set(UID, { liveness: { [cid]: 'Failure' } });
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 2);
      assert.deepEqual(h.runtime.syncCalls[1]!.probes, { liveness: { [cid]: 'Failure' } });
    });

    it('a kill request', async () => {
      const h = harness(tracing);
      const pod = aPod();
      await running(h, pod);
      h.killReq(UID);
      await h.sync(UID);
      assert.equal(h.rec(UID)!.state, 'terminated');
      assert.equal(h.runtime.killCalls.length, 1);
    });

    it('a reply whose own status has work left (the container exited during that SyncPod)', async () => {
      const h = harness(tracing);
      const pod = aPod();
      h.runtime.exitCode = 1;
      h.desire(pod);
      await h.sync(UID);
      applySets(h, pod);
      cacheCaughtUp(h);
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 2, 'restartPolicy Always: computePodActions restarts it');
    });

    it('a sync that failed, or left a container in backoff', async () => {
      const h = harness(tracing);
      const pod = aPod();
      h.runtime.nextResults = [{ action: 'StartContainer', target: 'foo1', error: 'CrashLoopBackOff', message: 'back-off', retryAt: h.clock.now() + 10_000 }];
      h.desire(pod);
      await h.sync(UID);
      h.runtime.nextResults = undefined;
      applySets(h, pod);
      cacheCaughtUp(h);
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 2, 'after a backoff');
      // An image update whose runtime SyncPod fails (cri-adapter killed): the retry is full.
      h.desire(aPod({ spec: { containers: [aContainer({ image: 'busybox:1.37' })] } }), 'update');
      h.runtime.syncError = new Error('no responders');
      await h.sync(UID);
      h.runtime.syncError = undefined;
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 4, 'after an error');
      applySets(h, pod);
      cacheCaughtUp(h);
      await h.sync(UID);
      assert.equal(h.runtime.syncCalls.length, 4, 'settled once a sync succeeded');
    });

    it('a new lease epoch (a takeover, a restart): the first sync is full and reads the worker record from KV', async () => {
      const h = harness(tracing);
      const pod = aPod();
      await running(h, pod);
      let workerReads = 0;
      const get = h.store.getWorker.bind(h.store);
      h.store.getWorker = (pp, uid) => {
        workerReads++;
        return get(pp, uid);
      };
      await h.sync(UID);
      assert.equal(workerReads, 0, 'this epoch’s own record, from memory');
      const guard = new LeaseGuard(PP, EPOCH + 1, h.clock.now(), 7000, () => h.clock.now());
      await h.syncer.sync(guard, UID, control().ctl);
      assert.equal(workerReads, 1);
      assert.equal(h.runtime.syncCalls.length, 2, 'full');
      assert.equal(sets(h).length, 4);
      applySets(h, pod);
      cacheCaughtUp(h);
      await h.syncer.sync(guard, UID, control().ctl);
      assert.equal(h.runtime.syncCalls.length, 2, 'then settled again');
      assert.equal(workerReads, 1);
    });

    it('a pod with a configMap, secret, projected or downwardAPI volume (remounted at every sync)', async () => {
      for (const volume of [
        { name: 'cfg', configMap: { name: 'cfg' } },
        { name: 'sec', secret: { secretName: 'sec' } },
        { name: 'proj', projected: { sources: [] } },
        { name: 'info', downwardAPI: { items: [] } },
      ]) {
        const h = harness(tracing);
        const pod = aPod({ spec: { volumes: [{ name: 'scratch', emptyDir: {} }, volume] } });
        await running(h, pod);
        await h.sync(UID);
        assert.equal(h.volumes.mounts.length, 2, `${volume.name}: mounted again`);
        assert.equal(h.runtime.syncCalls.length, 2);
      }
    });

    it('a failed status send: the next sync sends the status', async () => {
      const h = harness(tracing);
      const pod = aPod();
      await running(h, pod);
      h.store.status.set(UID, record(pod, sets(h)[0]!));
      const send = h.status.send.bind(h.status);
      h.status.send = () => Promise.reject(new Error('JetStream unavailable'));
      await assert.rejects(h.sync(UID), /JetStream unavailable/);
      h.status.send = send;
      const before = sets(h).length;
      await h.sync(UID);
      assert.equal(sets(h).length, before + 1);
    });
  });
});

describe('SyncMemory: worker records known absent', () => {
  const rec = (uid: string): Versioned<WorkerRecord> => ({ value: { uid } as unknown as WorkerRecord, revision: 1 });

  it('keeps the latest MAX_KNOWN_ABSENT deleted pods; an older one is unknown again (read KV), and records that exist are kept', () => {
    const m = new SyncMemory();
    m.setWorker('live', rec('live'));
    for (let i = 0; i < MAX_KNOWN_ABSENT + 10; i++) m.setWorker(`gone-${i}`, null);
    assert.equal(m.worker('gone-0'), undefined, 'the oldest deleted pod is forgotten');
    assert.equal(m.worker('gone-9'), undefined);
    assert.equal(m.worker('gone-10'), null, 'the latest MAX_KNOWN_ABSENT stay known absent');
    assert.equal(m.worker(`gone-${MAX_KNOWN_ABSENT + 9}`), null);
    assert.deepEqual(m.worker('live'), rec('live'), 'a record that exists is not evicted');
  });

  it('a pod known absent that gets a record again, or becomes unknown, no longer counts against the bound', () => {
    const m = new SyncMemory();
    m.setWorker('back', null);
    m.setWorker('back', rec('back'));
    m.setWorker('unsure', null);
    m.setWorker('unsure', undefined);
    for (let i = 0; i < MAX_KNOWN_ABSENT; i++) m.setWorker(`gone-${i}`, null);
    assert.deepEqual(m.worker('back'), rec('back'));
    assert.equal(m.worker('unsure'), undefined);
    assert.equal(m.worker('gone-0'), null, 'exactly MAX_KNOWN_ABSENT nulls: none evicted');
  });
});

describe('settled-sync decisions', () => {
  const pod = aPod();
  const runtime = (containers: RuntimePodStatus['containers']): RuntimePodStatus => ({
    uid: UID,
    name: 'foo',
    namespace: 'default',
    ips: ['10.0.0.2'],
    sandboxes: [{ id: 'sb1', state: 'SANDBOX_READY', createdAt: 1, attempt: 0, ip: '10.0.0.2' }],
    containers,
  });

  it('runtimeKey ignores timestamps and order, nothing else', () => {
    const c = {
      id: 'a',
      name: 'foo1',
      sandboxId: 'sb1',
      state: 'CONTAINER_RUNNING' as const,
      createdAt: 1,
      startedAt: 2,
      image: 'busybox',
      imageRef: 'sha256:1',
      hash: 'h',
      restartCount: 0,
    };
    const d = { ...c, id: 'b', state: 'CONTAINER_EXITED' as const, exitCode: 0 };
    assert.equal(runtimeKey(runtime([c, d])), runtimeKey(runtime([{ ...d }, { ...c, createdAt: 5, startedAt: 6 }])));
    assert.notEqual(runtimeKey(runtime([c])), runtimeKey(runtime([{ ...c, restartCount: 1 }])));
    assert.notEqual(runtimeKey(runtime([c])), runtimeKey(runtime([{ ...c, state: 'CONTAINER_EXITED' }])));
    assert.notEqual(runtimeKey(runtime([c])), runtimeKey({ ...runtime([c]), ips: [] }));
  });

  it('noRuntimeActions is computePodActions with nothing to do', () => {
    const running = { id: 'a', name: 'foo1', sandboxId: 'sb1', state: 'CONTAINER_RUNNING' as const, createdAt: 1, image: 'busybox', imageRef: 'x', restartCount: 0 };
    assert.equal(noRuntimeActions(pod, runtime([{ ...running, hash: hashContainer(pod.spec.containers[0]!) }]), undefined), true);
    assert.equal(noRuntimeActions(pod, runtime([{ ...running, hash: 'other' }]), undefined), false, 'definition changed');
    assert.equal(noRuntimeActions(pod, runtime([]), undefined), false, 'nothing running');
    const ok = { ...running, hash: hashContainer(pod.spec.containers[0]!) };
    assert.equal(noRuntimeActions(pod, runtime([ok]), { liveness: { a: 'Failure' } }), false, 'liveness failure');
    assert.equal(noRuntimeActions(pod, runtime([ok]), { readiness: { a: 'Failure' } }), true, 'readiness is the status’s only');
    assert.equal(noRuntimeActions(pod, { ...runtime([ok]), sandboxes: [{ id: 'sb1', state: 'SANDBOX_NOTREADY', createdAt: 1, attempt: 0 }] }, undefined), false);
  });

  it('volumesSetUpOnce: emptyDir and hostPath only', () => {
    assert.equal(volumesSetUpOnce(aPod()), true);
    assert.equal(
      volumesSetUpOnce(
        aPod({
          spec: {
            volumes: [
              { name: 'a', emptyDir: {} },
              { name: 'b', hostPath: { path: '/x' } },
            ],
          },
        }),
      ),
      true,
    );
    assert.equal(volumesSetUpOnce(aPod({ spec: { volumes: [{ name: 'a', persistentVolumeClaim: { claimName: 'c' } }] } })), false);
  });

  it('statusHeld needs the record to equal the status and the last set sent (times aside)', () => {
    const s: PodStatus = { phase: 'Running', startTime: 't0', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 't1' }] };
    const rec = record(pod, s);
    assert.equal(statusHeld(s, rec, statusKey(s)), true);
    assert.equal(statusHeld(s, rec, statusKey({ ...s, startTime: 'x', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 'y' }] })), true);
    assert.equal(statusHeld(s, rec, undefined), false, 'nothing sent in this epoch');
    assert.equal(statusHeld(s, rec, statusKey({ ...s, phase: 'Pending' })), false, 'another set sent last');
    assert.equal(statusHeld(s, undefined, statusKey(s)), false, 'no record');
    assert.equal(statusHeld(s, { ...rec, heldTerminal: { phase: 'Failed' } }, statusKey(s)), false, 'a held terminal phase');
    assert.equal(statusHeld({ ...s, phase: 'Pending' }, rec, statusKey(s)), false, 'a new status');
  });
});

describe('PodSyncer: the desired record and the kill request are read only when a poke says they changed', () => {
  const reads = (h: H): { desired: number; kill: number } => ({ desired: h.store.desiredReads, kill: h.store.killReads });

  it('a periodic sync of a running pod and pokes naming the revisions read nothing; a new revision or none is read', async () => {
    const h = harness(tracing);
    const pod = aPod();
    await running(h, pod);
    const before = reads(h);
    await h.sync(UID); // the periodic resync: no poke from sync-loop since the read
    h.syncer.poked(h.guard, UID, { desired: h.store.desired.get(`${PP}.${UID}`)?.revision, kill: 0 }); // a PLEG event or a probe result
    await h.sync(UID);
    assert.deepEqual(reads(h), before, 'served from memory');

    h.desire(aPod({ spec: { containers: [aContainer({ image: 'busybox:1.37' })] } }), 'update');
    await h.sync(UID);
    assert.deepEqual(reads(h), { desired: before.desired + 1, kill: before.kill }, 'a poke naming a newer desired revision: that record is read');
    assert.equal(h.runtime.syncCalls.at(-1)?.pod.spec.containers[0]?.image, 'busybox:1.37', 'the sync ran the new record');

    h.syncer.poked(h.guard, UID, { desired: undefined, kill: undefined }); // a restarted sync-loop that has not listed the pod, or a write in flight
    await h.sync(UID);
    assert.deepEqual(reads(h), { desired: before.desired + 2, kill: before.kill + 1 }, 'a poke naming no revision: read');
    await h.sync(UID);
    assert.deepEqual(reads(h), { desired: before.desired + 2, kill: before.kill + 1 });

    h.killReq(UID); // sync-loop's kill poke names the request's revision
    await h.sync(UID);
    assert.equal(h.store.killReads, before.kill + 2);
    assert.notEqual(h.rec(UID)?.state, 'sync', 'the kill is seen');
  });

  it('reads again after the memory is five minutes old, and in a new lease epoch', async () => {
    const h = harness(tracing);
    await running(h, aPod());
    const before = reads(h);
    h.clock.advance(RECORD_MEMORY_MAX_AGE_MS);
    h.guard.renewed(h.clock.now());
    await h.sync(UID);
    assert.deepEqual(reads(h), { desired: before.desired + 1, kill: before.kill + 1 }, 'older than the bound: read');
    await h.sync(UID);
    assert.deepEqual(reads(h), { desired: before.desired + 1, kill: before.kill + 1 });
    const next = new LeaseGuard(PP, EPOCH + 1, h.clock.now(), 7000, () => h.clock.now());
    await h.syncer.sync(next, UID, control().ctl);
    assert.deepEqual(reads(h), { desired: before.desired + 2, kill: before.kill + 2 }, 'a new epoch starts without memory');
  });
});
