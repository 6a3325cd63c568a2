/**
 * The cri-adapter's fence epochs in KV bucket `sl_cri_fences` (key `<node>.<partition>`), written
 * only by this node's cri-adapter, read back at its start.
 */
import { Buckets, FenceEpoch, Keys } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { FenceStore } from '../ports.js';

/** Opens the bucket and returns the store for `node`. */
export async function createKvFenceStore(bus: Pick<Bus, 'kv'>, node: string): Promise<FenceStore> {
  const kv = await bus.kv(Buckets.criFences, FenceEpoch);
  return {
    async load() {
      const epochs = new Map<number, number>();
      for (const e of await kv.list(Keys.nodePrefix(node))) if (e.value !== null) epochs.set(e.value.partition, e.value.epoch);
      return epochs;
    },
    async save(partition, epoch) {
      await kv.put(Keys.fence(node, partition), { type: 'kubelet.runtime.FenceEpoch.v1', partition, epoch });
    },
  };
}
