/**
 * Fence epochs survive a cri-adapter restart: against a real nats-server, an adapter accepts epoch 5
 * of a partition, is stopped, and a new adapter (new connection, same node) still refuses epoch 4,
 * because the epoch was stored in `sl_cri_fences` before the request acted. Without the store, the
 * restarted adapter accepts the stale epoch (the control case).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Buckets, FenceEpoch, Keys } from '@splitlet/api';
import { isBusError } from '@splitlet/bus';
import { startNatsServer, type NatsServer } from '@splitlet/testkit';
import { createKvFenceStore } from '../src/adapters/kv-fence-store.js';
import { startAdapterOverNats, type AdapterOverNats } from './adapter-over-nats.js';
import { aPod } from './fixtures.js';

const NODE = 'fence-node';
const isFencedOff = (e: unknown): boolean => isBusError(e, 'Remote') && e.remoteCode === 'FencedOff' && e.retryable === false;

describe('cri-adapter fence epochs across a restart (real nats-server)', () => {
  let nats: NatsServer;
  let h: AdapterOverNats | undefined;

  before(async () => {
    nats = await startNatsServer();
  });
  after(async () => {
    await h?.close();
    await nats?.stop();
  });

  const start = (persisted: boolean) =>
    startAdapterOverNats({
      node: NODE,
      caller: 'pod-worker',
      logPrefix: 'cri-fences-',
      nats,
      ...(persisted ? { deps: async (bus) => ({ fenceStore: await createKvFenceStore(bus, NODE) }) } : {}),
    });

  it('a restarted adapter still refuses an epoch older than one accepted before the restart', async () => {
    const pod = aPod({ name: 'fenced', uid: 'uid-fence-1' });
    h = await start(true);
    h.fence = { partition: 3, epoch: 5 };
    await h.syncPod(pod);
    const stored = await (await h.caller.kv(Buckets.criFences, FenceEpoch)).get(Keys.fence(NODE, 3));
    assert.deepEqual(stored?.value, { type: 'kubelet.runtime.FenceEpoch.v1', partition: 3, epoch: 5 });
    await h.close();

    h = await start(true);
    h.fence = { partition: 3, epoch: 4 };
    await assert.rejects(h.syncPod(pod), isFencedOff, 'the old owner of partition 3 is fenced off after the restart');
    await assert.rejects(h.killPod(pod, 0), isFencedOff);
    h.fence = { partition: 7, epoch: 1 };
    await h.syncPod(aPod({ name: 'other', uid: 'uid-fence-2' })); // a partition never seen: any epoch
    h.fence = { partition: 3, epoch: 5 };
    await h.killPod(pod, 0); // the current owner still acts
    await h.close();
    h = undefined;
  });

  it('control: without the store, the restarted adapter would accept the stale epoch', async () => {
    const pod = aPod({ name: 'unfenced', uid: 'uid-fence-3' });
    h = await start(false);
    h.fence = { partition: 11, epoch: 5 };
    await h.syncPod(pod);
    await h.close();
    h = await start(false);
    h.fence = { partition: 11, epoch: 4 };
    await h.killPod(pod, 0);
    await h.close();
    h = undefined;
  });
});
