/**
 * The api source over NATS: its store is this node's keys of KV `sl_api_pods` (config-source is the
 * bucket's one writer), and it serves `sl.<node>.rpc.config.{apply,delete}` (queue group
 * `config-source`). The bus validates requests and replies with zod; a refused request goes back to
 * the CLI as a WireError (`Invalid`, `Forbidden`, `NotFound`) with the message the user reads.
 */
import { ApiPodRecord, ApplyPodsReply, ApplyPodsRequest, Buckets, DeletePodReply, DeletePodRequest, Keys, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { ApiPodStore, ApiSource } from '../sources/api-source.js';

/** An {@link ApiPodStore} over the node's keys of `sl_api_pods`. */
export async function createKvApiPodStore(bus: Pick<Bus, 'kv'>, node: string): Promise<ApiPodStore> {
  const kv = await bus.kv(Buckets.apiPods, ApiPodRecord);
  return {
    async list() {
      const out: ApiPodRecord[] = [];
      for (const e of await kv.list(Keys.nodePrefix(node))) if (e.value !== null) out.push(e.value);
      return out;
    },
    async put(record) {
      await kv.put(Keys.apiPod(node, record.pod.metadata.namespace, record.pod.metadata.name), record);
    },
    async delete(namespace, name) {
      await kv.delete(Keys.apiPod(node, namespace, name));
    },
  };
}

/** Serves apply and delete until `signal` aborts. */
export function serveApiSource(bus: Pick<Bus, 'serve'>, node: string, source: ApiSource, signal: AbortSignal): void {
  const opts = { queue: 'config-source', signal };
  bus.serve(Subjects.rpc.config(node, 'apply'), ApplyPodsRequest, ApplyPodsReply, (req) => source.apply(req), opts);
  bus.serve(Subjects.rpc.config(node, 'delete'), DeletePodRequest, DeletePodReply, (req) => source.delete(req), opts);
}
