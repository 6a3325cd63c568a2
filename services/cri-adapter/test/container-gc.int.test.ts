/**
 * Integration: `sl.<node>.rpc.runtime.garbageCollect` served by the cri-adapter over a real
 * nats-server, with the CRI simulator behind a real gRPC socket, after real SyncPod/KillPod calls:
 * a crash-looping pod's older dead containers and their logs go, a deleted pod's containers,
 * sandbox and log directory go, and a malformed request is refused with a clear error.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RuntimeGarbageCollectReply, RuntimeGarbageCollectRequest, Subjects, type ContainerGCPolicy } from '@splitlet/api';
import { isBusError } from '@splitlet/bus';
import { eventually } from '@splitlet/testkit';
import { startAdapterOverNats, type AdapterOverNats } from './adapter-over-nats.js';
import { aPod } from './fixtures.js';

const NODE = 'gc-node.example';
const KUBELET_POLICY: ContainerGCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

describe('cri-adapter garbageCollect over NATS and the CRI simulator', () => {
  let h: AdapterOverNats;

  before(async () => {
    h = await startAdapterOverNats({ node: NODE, caller: 'sync-loop', logPrefix: 'cri-adapter-gc-' });
  });

  after(async () => {
    await h?.close();
  });

  const garbageCollect = (keep: string[], policy: ContainerGCPolicy = KUBELET_POLICY): Promise<RuntimeGarbageCollectReply> =>
    h.caller.request(
      RuntimeGarbageCollectRequest,
      RuntimeGarbageCollectReply,
      Subjects.rpc.runtime(NODE, 'garbageCollect'),
      { type: 'kubelet.runtime.GarbageCollectRequest.v1', policy, allSourcesReady: true, keep },
      { timeoutMs: 30_000 },
    );
  const attempts = async (uid: string): Promise<Array<[number, string]>> =>
    (await h.client.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid } } })).containers
      .map((c) => [c.metadata?.attempt ?? -1, c.state] as [number, string])
      .sort((a, b) => a[0] - b[0]);

  const crasher = aPod({ name: 'crasher', uid: 'uid-crasher', containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', 'echo crashed; exit 1'] }] });

  it("a crash-looping pod's older dead containers and their log files go; the newest stays", async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await h.syncPod(crasher);
      assert.deepEqual(
        r.results.filter((x) => x.error !== undefined),
        [],
        `sync ${attempt}`,
      );
      await eventually(async () => (await attempts('uid-crasher')).some(([a, s]) => a === attempt && s === 'CONTAINER_EXITED'), { message: `attempt ${attempt} exits` });
      h.clock.advance(600_000); // past the crash-loop back-off
    }
    assert.deepEqual(await attempts('uid-crasher'), [
      [0, 'CONTAINER_EXITED'],
      [1, 'CONTAINER_EXITED'],
      [2, 'CONTAINER_EXITED'],
    ]);
    const pokesBefore = h.pokes();
    const reply = await garbageCollect(['uid-crasher']);
    assert.deepEqual(reply, { type: 'kubelet.runtime.GarbageCollectReply.v1', removedContainers: 2, removedSandboxes: 0, removedLogDirs: 0 });
    assert.deepEqual(await attempts('uid-crasher'), [[2, 'CONTAINER_EXITED']]);
    assert.deepEqual(await readdir(join(h.logs.path, 'default_crasher_uid-crasher', 'main')), ['2.log']);
    await eventually(() => h.pokes() > pokesBefore, { message: 'pleg is asked to relist' });
    // The next SyncPod restarts from the kept container: restart count 3.
    await h.syncPod(crasher);
    assert.deepEqual(
      (await attempts('uid-crasher')).map(([a]) => a),
      [2, 3],
    );
  });

  it("a deleted pod's containers, sandbox and log directory go once it is no longer kept", async () => {
    await h.killPod(crasher, 0);
    const kept = await garbageCollect(['uid-crasher']);
    assert.deepEqual([kept.removedContainers, kept.removedSandboxes, kept.removedLogDirs], [1, 0, 0], 'a kept pod keeps its newest dead container and its only sandbox');
    const reply = await garbageCollect([]);
    assert.deepEqual(reply, { type: 'kubelet.runtime.GarbageCollectReply.v1', removedContainers: 1, removedSandboxes: 1, removedLogDirs: 1 });
    assert.deepEqual(await attempts('uid-crasher'), []);
    assert.deepEqual((await h.client.ListPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.uid': 'uid-crasher' } } })).items, []);
    assert.equal(existsSync(join(h.logs.path, 'default_crasher_uid-crasher')), false);
  });

  it('a negative MinAge is refused at both ends with the reason, and the adapter keeps serving', async () => {
    const bad = { type: 'kubelet.runtime.GarbageCollectRequest.v1', policy: { minAgeMs: -1, maxPerPodContainer: 1, maxContainers: -1 }, allSourcesReady: true, keep: [] };
    // The sender validates first…
    await assert.rejects(garbageCollect([], bad.policy), (e: unknown) => isBusError(e) && e.code === 'SchemaInvalid' && /invalid minimum garbage collection age/.test(e.message));
    // …and the adapter refuses what got past a sender that did not.
    const raw = await h.caller.nc.request(Subjects.rpc.runtime(NODE, 'garbageCollect'), JSON.stringify(bad), { timeout: 5000 });
    const env = raw.json<{ ok: boolean; error?: { code: string; message: string } }>();
    assert.equal(env.ok, false);
    assert.equal(env.error?.code, 'SchemaInvalid');
    assert.match(env.error?.message ?? '', /policy\.minAgeMs.*invalid minimum garbage collection age/);
    assert.equal((await garbageCollect([])).error, undefined);
  });
});
