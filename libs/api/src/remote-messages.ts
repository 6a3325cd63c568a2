/**
 * The messages behind the CLI's remote commands: pods applied and deleted through config-source's
 * `api` source, and container logs served by the node (cri-adapter) as the kubelet serves
 * `/containerLogs`. Request/reply on `sl.<node>.rpc.config.*` and `sl.<node>.rpc.logs.read`.
 */
import { z } from 'zod';
import { BoundPod, Pod } from './pod.js';

/** Bucket `sl_api_pods`, key `<node>.<namespace>.<name>`: a pod of the `api` source. Writer: config-source. */
export const ApiPodRecord = z.object({
  type: z.literal('kubelet.config.ApiPod.v1'),
  pod: BoundPod,
  /** When the pod was first applied (its creationTimestamp) and last changed. */
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ApiPodRecord = z.infer<typeof ApiPodRecord>;

/** `sl.<node>.rpc.config.apply`: create or update pods (kubectl apply). At most 100 pods a request. */
export const ApplyPodsRequest = z.object({
  type: z.literal('kubelet.config.ApplyPods.v1'),
  pods: z.array(Pod).min(1).max(100),
  /** Where the manifests came from (a file name, `stdin`), for errors and the pods' spans. */
  origin: z.string().max(512),
});
export type ApplyPodsRequest = z.infer<typeof ApplyPodsRequest>;

export const ApplyOutcome = z.enum(['created', 'configured', 'unchanged']);
export type ApplyOutcome = z.infer<typeof ApplyOutcome>;

export const ApplyPodsReply = z.object({
  type: z.literal('kubelet.config.ApplyPodsResult.v1'),
  results: z.array(z.object({ namespace: z.string(), name: z.string(), uid: z.string(), outcome: ApplyOutcome })),
});
export type ApplyPodsReply = z.infer<typeof ApplyPodsReply>;

/** `sl.<node>.rpc.config.delete`: remove a pod of the `api` source. */
export const DeletePodRequest = z.object({
  type: z.literal('kubelet.config.DeletePod.v1'),
  namespace: z.string().min(1).max(63),
  name: z.string().min(1).max(253),
});
export type DeletePodRequest = z.infer<typeof DeletePodRequest>;

export const DeletePodReply = z.object({
  type: z.literal('kubelet.config.DeletePodResult.v1'),
  uid: z.string(),
});
export type DeletePodReply = z.infer<typeof DeletePodReply>;

/**
 * `sl.<node>.rpc.logs.read`: bytes of one container run's CRI log file
 * (`<pod log dir>/<ns>_<name>_<uid>/<container>/<attempt>.log`). Read from `offset` (or, with
 * `tailLines` and no offset, from where the last N lines start), at most `limitBytes`. Follow by
 * asking again from `nextOffset`.
 */
export const ContainerLogsRequest = z.object({
  type: z.literal('kubelet.logs.Read.v1'),
  namespace: z.string().min(1).max(63),
  podName: z.string().min(1).max(253),
  podUid: z.string().min(1).max(128),
  container: z.string().min(1).max(63),
  attempt: z.number().int().min(0),
  offset: z.number().int().min(0).optional(),
  tailLines: z.number().int().min(0).optional(),
  /** @default 262144 (kept well under the NATS max payload once base64-encoded) */
  limitBytes: z
    .number()
    .int()
    .min(1)
    .max(512 * 1024)
    .optional(),
});
export type ContainerLogsRequest = z.infer<typeof ContainerLogsRequest>;

export const ContainerLogsReply = z.object({
  type: z.literal('kubelet.logs.Chunk.v1'),
  /** The bytes read, base64 (a chunk may end inside a line or a UTF-8 sequence). */
  data: z.string(),
  /** Offset of the first byte returned. */
  offset: z.number().int().min(0),
  /** Where to continue. */
  nextOffset: z.number().int().min(0),
  /** The file's size when read: `nextOffset < size` means more is there already. */
  size: z.number().int().min(0),
});
export type ContainerLogsReply = z.infer<typeof ContainerLogsReply>;
