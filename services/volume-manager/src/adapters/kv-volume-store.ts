/**
 * The actual state of world in KV bucket `sl_volumes` (key `<node>.<uid>`), written only by
 * volume-manager.
 */
import { Buckets, Keys, PodVolumeState } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { VolumeStateStore } from '../ports.js';

/** Opens the bucket and returns the store for `node`. */
export async function kvVolumeStore(bus: Bus, node: string): Promise<VolumeStateStore> {
  const kv = await bus.kv(Buckets.volumes, PodVolumeState);
  return {
    put: async (state) => {
      await kv.put(Keys.pod(node, state.uid), state);
    },
    get: async (uid) => (await kv.get(Keys.pod(node, uid)))?.value ?? null,
    delete: async (uid) => {
      await kv.delete(Keys.pod(node, uid));
    },
    list: async () => (await kv.list(Keys.nodePrefix(node))).map((e) => e.value).filter((v): v is PodVolumeState => v !== null),
  };
}
