/**
 * The pod status cache in KV bucket `sl_status`, key `<node>.<uid>` → PodStatusRecord.
 */
import { Buckets, Keys, PodStatusRecord } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { StatusStore } from '../ports.js';

/** A {@link StatusStore} over the node's keys of `sl_status`. */
export async function createKvStatusStore(bus: Pick<Bus, 'kv'>, node: string): Promise<StatusStore> {
  const kv = await bus.kv(Buckets.status, PodStatusRecord);
  return {
    async load(): Promise<PodStatusRecord[]> {
      const out: PodStatusRecord[] = [];
      for (const e of await kv.list(Keys.nodePrefix(node))) if (e.value !== null) out.push(e.value);
      return out;
    },
    async put(record: PodStatusRecord): Promise<void> {
      await kv.put(Keys.pod(node, record.uid), record);
    },
    async delete(uid: string): Promise<void> {
      await kv.delete(Keys.pod(node, uid));
    },
  };
}
