/**
 * The node's capacity record in KV bucket `sl_node_capacity` (key `<node>`), written only by this
 * node's volume-manager; sync-loop watches it for admission.
 */
import { Buckets, Keys, NodeCapacity } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { NodeCapacityStore } from '../ports.js';

/** Opens the bucket and returns the store for `node`. */
export async function kvNodeCapacityStore(bus: Pick<Bus, 'kv'>, node: string): Promise<NodeCapacityStore> {
  const kv = await bus.kv(Buckets.nodeCapacity, NodeCapacity);
  return {
    put: async (capacity) => {
      await kv.put(Keys.node(node), capacity);
    },
  };
}
