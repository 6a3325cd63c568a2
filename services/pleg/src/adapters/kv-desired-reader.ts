/**
 * Reads a pod's desired record from `sl_desired` (key `<node>.<partition>.<uid>`; sync-loop writes
 * it, pleg only reads single keys when a container died).
 */
import { Buckets, DesiredPod, Keys, partitionOf } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { DesiredPodReader } from '../ports.js';

/** A {@link DesiredPodReader} over `sl_desired`, for a node whose pods are spread over `partitions`. */
export async function createKvDesiredReader(bus: Pick<Bus, 'kv'>, node: string, partitions: number): Promise<DesiredPodReader> {
  const kv = await bus.kv(Buckets.desired, DesiredPod);
  return {
    async get(uid: string): Promise<DesiredPod | undefined> {
      const e = await kv.get(Keys.podInPartition(node, partitionOf(uid, partitions), uid));
      return e?.value ?? undefined;
    },
  };
}
