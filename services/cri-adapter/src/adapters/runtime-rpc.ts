/**
 * Serves the runtime request/reply endpoints `sl.<node>.rpc.runtime.{syncPod,killPod,getPodStatus,relist,garbageCollect}`
 * (queue group `cri-adapter`): the bus validates requests (a malformed one gets a SchemaInvalid reply
 * and a dead letter) and replies; errors go back as WireErrors with their code (FencedOff, Unavailable …).
 */
import {
  RuntimeGarbageCollectReply,
  RuntimeGarbageCollectRequest,
  RuntimeGetPodStatusReply,
  RuntimeGetPodStatusRequest,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimeRelistReply,
  RuntimeRelistRequest,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  Subjects,
} from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { RuntimeOperations } from '../runtime-operations.js';

/** The queue group every cri-adapter replica of a node joins. */
export const CRI_ADAPTER_QUEUE = 'cri-adapter';

/**
 * Binds the five endpoints until `signal` aborts. `onRequest` is called for every request served
 * (progress for the health check).
 */
export function serveRuntimeRpc(bus: Pick<Bus, 'serve'>, node: string, ops: RuntimeOperations, signal: AbortSignal, onRequest: () => void = () => undefined): void {
  const opts = { queue: CRI_ADAPTER_QUEUE, signal };
  bus.serve(
    Subjects.rpc.runtime(node, 'syncPod'),
    RuntimeSyncPodRequest,
    RuntimeSyncPodReply,
    (req) => {
      onRequest();
      return ops.syncPod(req);
    },
    opts,
  );
  bus.serve(
    Subjects.rpc.runtime(node, 'killPod'),
    RuntimeKillPodRequest,
    RuntimeKillPodReply,
    (req) => {
      onRequest();
      return ops.killPod(req);
    },
    opts,
  );
  bus.serve(
    Subjects.rpc.runtime(node, 'getPodStatus'),
    RuntimeGetPodStatusRequest,
    RuntimeGetPodStatusReply,
    (req) => {
      onRequest();
      return ops.getPodStatus(req);
    },
    opts,
  );
  bus.serve(
    Subjects.rpc.runtime(node, 'relist'),
    RuntimeRelistRequest,
    RuntimeRelistReply,
    (req) => {
      onRequest();
      return ops.relist(req);
    },
    opts,
  );
  bus.serve(
    Subjects.rpc.runtime(node, 'garbageCollect'),
    RuntimeGarbageCollectRequest,
    RuntimeGarbageCollectReply,
    (req) => {
      onRequest();
      return ops.garbageCollect(req);
    },
    opts,
  );
}
