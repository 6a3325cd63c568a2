/**
 * The runtime lister over the bus: cri-adapter serves `relist` (RuntimeRelistRequest → RuntimeRelistReply).
 */
import { RuntimeRelistReply, RuntimeRelistRequest, Subjects, type RuntimePodStatus } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { RuntimeLister } from '../ports.js';

/**
 * A {@link RuntimeLister} that requests `Subjects.rpc.runtime(node, 'relist')` with a deadline, in
 * the active trace context (GenericPleg makes a periodic relist's context unsampled, so it starts
 * no trace every second). Rejects with a BusError (`Timeout`, `NoResponders`, `Remote`, `SchemaInvalid`).
 */
export function createBusRuntimeLister(bus: Pick<Bus, 'request'>, node: string, timeoutMs: number): RuntimeLister {
  const subject = Subjects.rpc.runtime(node, 'relist');
  return {
    async relist(uids?: readonly string[]): Promise<readonly RuntimePodStatus[]> {
      const req: RuntimeRelistRequest = { type: 'kubelet.runtime.RelistRequest.v1', ...(uids !== undefined ? { uids: [...uids] } : {}) };
      const reply = await bus.request(RuntimeRelistRequest, RuntimeRelistReply, subject, req, { timeoutMs });
      return reply.pods;
    },
  };
}
