/**
 * The results bucket `sl_probe` (key `<node>.<uid>`), which only the prober writes.
 */
import { Buckets, Keys, PodProbeResults } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { ProbeResultsStore } from '../ports.js';

export async function createKvResultsStore(bus: Pick<Bus, 'kv'>, node: string): Promise<ProbeResultsStore> {
  const kv = await bus.kv(Buckets.probe, PodProbeResults);
  return {
    async list() {
      return (await kv.list(Keys.nodePrefix(node))).flatMap((e) => (e.value === null ? [] : [e.value]));
    },
    async put(record) {
      await kv.put(Keys.pod(node, record.uid), record);
    },
    async delete(uid) {
      await kv.delete(Keys.pod(node, uid));
    },
  };
}
