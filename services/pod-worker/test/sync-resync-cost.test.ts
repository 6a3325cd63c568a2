/**
 * What a resync with nothing changed still sends: no status set equal to the last one, no mount
 * request for volumes already mounted (status-manager and volume-manager would answer both from
 * their caches).
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { BoundPod, PodStatus } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { createTestTracing } from '@splitlet/telemetry/testing';
import type { TestTracing } from '@splitlet/telemetry/testing';
import { LeaseGuard } from '../src/partitions/partition-guard.js';
import { control, EPOCH, harness, PP } from './sync-harness.js';
import { runningContainer } from './fakes.js';

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

/** status-manager's part: the last status set becomes the cached status the next sync reads. */
function cacheLastSet(h: H, pod: BoundPod): void {
  const last = h.status.of(UID).at(-1);
  assert.ok(last?.status !== undefined);
  h.store.status.set(UID, {
    type: 'kubelet.status.PodStatusRecord.v1',
    uid: UID,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    version: h.status.of(UID).length,
    pod,
    status: last.status,
    finished: false,
    updatedAt: new Date(h.clock.now()).toISOString(),
  });
}

/** pleg's part: the pod's containers are running in a ready sandbox. */
function runningInCache(h: H, pod: BoundPod): void {
  h.cache.statuses.set(UID, {
    uid: UID,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    ips: ['10.0.0.2'],
    sandboxes: [{ id: 'sb1', state: 'SANDBOX_READY', createdAt: 1, attempt: 0, ip: '10.0.0.2' }],
    containers: pod.spec.containers.map((c) => runningContainer(c.name)),
  });
}

/** Starts `pod`, then lets 60 s pass with the caches up to date, as before a periodic resync. */
async function started(h: H, pod: BoundPod): Promise<void> {
  h.desire(pod);
  await h.sync(UID);
  cacheLastSet(h, pod);
  runningInCache(h, pod);
  h.clock.advance(60_000);
  h.guard.renewed(h.clock.now());
}

const sets = (h: H): PodStatus[] => h.status.of(UID).flatMap((u) => (u.kind === 'set' && u.status !== undefined ? [u.status] : []));

describe('PodSyncer: a resync with nothing changed', () => {
  it('sends no status set and asks volume-manager nothing, but still runs the runtime SyncPod and the same steps', async () => {
    const h = harness(tracing);
    const pod = aPod({
      spec: {
        volumes: [
          { name: 'scratch', emptyDir: {} },
          { name: 'host', hostPath: { path: '/tmp' } },
        ],
      },
    });
    await started(h, pod);
    const setsBefore = sets(h).length;
    assert.equal(h.volumes.mounts.length, 1);
    tracing.reset();

    await h.sync(UID);
    assert.equal(sets(h).length, setsBefore, 'the status equals the last one sent');
    assert.equal(h.volumes.mounts.length, 1, 'the volumes are mounted for this spec');
    assert.equal(h.runtime.syncCalls.length, 2);
    assert.deepEqual(h.runtime.syncCalls[1]!.volumes, h.runtime.syncCalls[0]!.volumes, 'the mounted volumes volume-manager reported');
    assert.equal(h.runtime.syncCalls[1]!.podDir, h.runtime.syncCalls[0]!.podDir);
    const [syncPod] = tracing.spansNamed('syncPod');
    assert.ok(syncPod);
    const children = tracing
      .spans()
      .filter((s) => s.parentSpanContext?.spanId === syncPod.spanContext().spanId)
      .map((s) => s.name);
    assert.deepEqual(children, ['generateAPIPodStatus', 'canRunPod', 'makePodDataDirs+waitForAttachAndMount', 'getPullSecretsForPod', 'runtime.SyncPod']);
    assert.equal(h.rec(UID)!.state, 'sync');
  });

  it('a changed status is sent', async () => {
    const h = harness(tracing);
    const pod = aPod();
    await started(h, pod);
    const setsBefore = sets(h).length;
    // The container died and is restarted by the runtime SyncPod: both statuses are new.
    const name = pod.spec.containers[0]!.name;
    h.cache.statuses.get(UID)!.containers[0] = { ...runningContainer(name), state: 'CONTAINER_EXITED', exitCode: 1, finishedAt: 3, reason: 'Error' };
    await h.sync(UID);
    assert.equal(sets(h).length, setsBefore + 2);
    assert.ok(sets(h).at(-2)!.containerStatuses![0]!.state!.terminated !== undefined);
  });

  it('after the lease changed hands, an equal status is sent again (another owner may have sent others)', async () => {
    const h = harness(tracing);
    const pod = aPod();
    await started(h, pod);
    const setsBefore = sets(h).length;
    const guard = new LeaseGuard(PP, EPOCH + 1, h.clock.now(), 7000, () => h.clock.now());
    await h.syncer.sync(guard, UID, control().ctl);
    assert.ok(sets(h).length > setsBefore);
    assert.equal(h.volumes.mounts.length, 2, 'and the volumes are asked for again');
  });

  it('pods with configMap, secret, projected or downwardAPI volumes ask volume-manager at every sync (they are remounted)', async () => {
    for (const volume of [
      { name: 'cfg', configMap: { name: 'cfg' } },
      { name: 'sec', secret: { secretName: 'sec' } },
      { name: 'proj', projected: { sources: [] } },
      { name: 'info', downwardAPI: { items: [] } },
    ]) {
      const h = harness(tracing);
      const pod = aPod({ spec: { volumes: [{ name: 'scratch', emptyDir: {} }, volume] } });
      await started(h, pod);
      await h.sync(UID);
      assert.equal(h.volumes.mounts.length, 2, `${volume.name}: mounted again`);
    }
  });

  it('a pod whose sandbox is not ready asks volume-manager again (its sandbox and volumes are made again)', async () => {
    const h = harness(tracing);
    const pod = aPod({ spec: { volumes: [{ name: 'scratch', emptyDir: {} }] } });
    await started(h, pod);
    const cached = h.cache.statuses.get(UID)!;
    h.cache.statuses.set(UID, { ...cached, sandboxes: [{ id: 'sb1', state: 'SANDBOX_NOTREADY', createdAt: 1, attempt: 0 }], containers: [] });
    await h.sync(UID);
    assert.equal(h.volumes.mounts.length, 2);
  });

  it('a failed mount is asked again at the next sync', async () => {
    const h = harness(tracing);
    const pod = aPod({ spec: { volumes: [{ name: 'scratch', emptyDir: {} }] } });
    h.desire(pod);
    h.volumes.mountError = new Error('disk full');
    await h.sync(UID);
    h.volumes.mountError = undefined;
    runningInCache(h, pod);
    await h.sync(UID);
    assert.equal(h.volumes.mounts.length, 2, 'asked again after the failure');
    await h.sync(UID);
    assert.equal(h.volumes.mounts.length, 2, 'mounted since');
  });
});
