/**
 * The prober's results bucket `sl_probe` (key `<node>.<uid>`), read at each sync.
 */
import { Buckets, Keys, PodProbeResults } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { ProbeResultsSource } from '../ports.js';

export async function createKvProbeResults(bus: Pick<Bus, 'kv'>, node: string): Promise<ProbeResultsSource> {
  const kv = await bus.kv(Buckets.probe, PodProbeResults);
  return {
    async get(uid) {
      const r = (await kv.get(Keys.pod(node, uid)))?.value;
      if (r == null) return undefined;
      return { ...(r.liveness ? { liveness: r.liveness } : {}), ...(r.readiness ? { readiness: r.readiness } : {}), ...(r.startup ? { startup: r.startup } : {}) };
    },
  };
}
