/**
 * Every message and KV record on the bus, as versioned zod schemas.
 *
 * Ids follow `kubelet.<domain>.<Name>.v1`. Evolution rule: add optional fields only; a breaking change
 * is a new `.v2` schema, and readers accept the old one for one release.
 *
 * Over ~450 lines on purpose: this is the wire contract (as pleg/pleg.go is for PLEG), a list of
 * schemas with no behaviour, kept in one file so a reviewer sees every message of the bus and its
 * evolution in one place; it grows by one schema per message, not by logic.
 *
 * One file on purpose: the catalogue of every message on the bus, each schema beside its type tag, so a change to the wire format is reviewed in one place.
 */
import { z } from 'zod';
import { BoundPod, PodStatus } from './pod.js';

/** A W3C trace-context carrier (`traceparent`, `tracestate`) kept inside records that trigger work. */
export const TraceCarrier = z.record(z.string(), z.string());
export type TraceCarrier = z.infer<typeof TraceCarrier>;

/** The error shape that crosses processes. */
export const WireError = z.object({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
});
export type WireError = z.infer<typeof WireError>;

/** Fencing token: the partition and the lease revision its owner held when it acted. */
export const Fence = z.object({ partition: z.number().int().min(0), epoch: z.number().int().min(0) });
export type Fence = z.infer<typeof Fence>;

// ---------------------------------------------------------------------------------------------
// config-source → sync-loop
// ---------------------------------------------------------------------------------------------

export const PodOperation = z.enum(['ADD', 'UPDATE', 'DELETE', 'REMOVE', 'RECONCILE']);
export type PodOperation = z.infer<typeof PodOperation>;

/** `api`: the API server (kubelet's name); `bus`: pods applied over the bus (`splitlet apply --nats-url`). */
export const PodSource = z.enum(['file', 'http', 'api', 'bus']);
export type PodSource = z.infer<typeof PodSource>;

export const PodUpdateItem = z.object({ pod: BoundPod, trace: TraceCarrier.optional() });
export type PodUpdateItem = z.infer<typeof PodUpdateItem>;

/**
 * Which config-source process published a PodUpdate, and its place in that process's sequence:
 * `publisher` is unique per process start, `seq` counts 1, 2, 3… in publish order. SL_CONFIG hands
 * sync-loop the updates one at a time in that order, so an update at or below the last `seq` applied
 * from its publisher is a replay (nats-server killed with -9 loses recent consumer acks and delivers
 * the stream again from an older ack floor), and sync-loop skips it.
 */
export const UpdateOrigin = z.object({ publisher: z.string().min(1), seq: z.number().int().min(1) });
export type UpdateOrigin = z.infer<typeof UpdateOrigin>;

/**
 * kubetypes.PodUpdate as the merged PodConfig emits it (incremental mode). An ADD with no pods is the
 * "source ready" signal on a source's first SET. `sources` lists every source config-source runs, so
 * sync-loop knows when all sources have been seen.
 */
export const PodUpdate = z.object({
  type: z.literal('kubelet.config.PodUpdate.v1'),
  op: PodOperation,
  source: PodSource,
  sources: z.array(PodSource),
  items: z.array(PodUpdateItem),
  sentAt: z.string(),
  /** Absent from updates made by hand (tests, tools): those are always applied. */
  origin: UpdateOrigin.optional(),
});
export type PodUpdate = z.infer<typeof PodUpdate>;

// ---------------------------------------------------------------------------------------------
// sync-loop → pod-worker (KV truth + stream pokes)
// ---------------------------------------------------------------------------------------------

export const SyncPodType = z.enum(['create', 'update', 'sync', 'kill']);
export type SyncPodType = z.infer<typeof SyncPodType>;

/** Bucket `sl_desired`: the latest desired pod. Written by sync-loop with `put` (latest wins). */
export const DesiredPod = z.object({
  type: z.literal('kubelet.podworker.DesiredPod.v1'),
  pod: BoundPod,
  updateType: SyncPodType,
  /** When the update entered sync-loop (UpdatePodOptions.StartTime), for latency metrics. */
  startTime: z.string(),
  /** Set when admission rejected the pod: the pod-worker never runs it; its status is Failed. */
  rejected: z.object({ reason: z.string(), message: z.string() }).optional(),
  /** The trace of the pod's creation episode, so later episodes can link to it. */
  creationTrace: TraceCarrier.optional(),
  /** The trace of the update that produced this record. */
  trace: TraceCarrier.optional(),
  /** The origin of the config update that produced this record: a restarted sync-loop knows from it which updates it applied. */
  configOrigin: UpdateOrigin.optional(),
  /** The sync-loop leader epoch (its lease revision) that wrote this record; a fenced old leader cannot write. */
  leaderEpoch: z.number().int().min(0).optional(),
  /** When that leader's fence admitted the write (ms since the Unix epoch, the writer's clock): a write arriving late was admitted while the term could still write. */
  fencedAt: z.number().int().min(0).optional(),
});
export type DesiredPod = z.infer<typeof DesiredPod>;

/**
 * Why a kill was requested, as sync-loop produces them: `removed` (a source removed the pod, or a
 * worker's pod is no longer desired) and `orphaned` (a runtime pod nothing desires).
 */
export const KillReason = z.enum(['removed', 'orphaned']);
export type KillReason = z.infer<typeof KillReason>;

/** A runtime pod with no spec (an orphan found in the runtime). */
export const RunningPodRef = z.object({ uid: z.string(), name: z.string(), namespace: z.string() });
export type RunningPodRef = z.infer<typeof RunningPodRef>;

/**
 * Bucket `sl_kill`: a kill request. Created by sync-loop with `create` (first kill wins, no later
 * non-kill update can overwrite it); sync-loop may only shorten the grace (CAS update); the pod-worker
 * that carried it out deletes it.
 */
export const KillRequest = z.object({
  type: z.literal('kubelet.podworker.KillRequest.v1'),
  uid: z.string(),
  reason: KillReason,
  /** The pod as last known; absent for an orphaned runtime pod. */
  pod: BoundPod.optional(),
  runningPod: RunningPodRef.optional(),
  /** KillPodOptions.PodTerminationGracePeriodSecondsOverride. */
  gracePeriodOverride: z.number().int().min(0).optional(),
  evict: z.boolean().optional(),
  requestedAt: z.string(),
  trace: TraceCarrier.optional(),
  /** The sync-loop leader epoch (its lease revision) that wrote this record; a fenced old leader cannot write. */
  leaderEpoch: z.number().int().min(0).optional(),
  /** When that leader's fence admitted the write (ms since the Unix epoch, the writer's clock): a write arriving late was admitted while the term could still write. */
  fencedAt: z.number().int().min(0).optional(),
});
export type KillRequest = z.infer<typeof KillRequest>;

/** Stream `SL_WORK`: a poke. Never trusted for content; the worker reads KV. */
export const WorkPoke = z.object({
  type: z.literal('kubelet.podworker.WorkPoke.v1'),
  uid: z.string(),
  kind: SyncPodType,
  /**
   * The revision of the pod's `sl_desired` record as sync-loop last wrote (or, after a restart,
   * listed) it; absent when it holds none for the pod (deleted, never desired, or not known). A
   * pod worker that read the record at this revision or later need not read it again.
   */
  desiredRevision: z.number().int().min(1).optional(),
  /**
   * The revision of the pod's `sl_kill` request as sync-loop last wrote or saw it; 0: it knows of
   * none; absent while its own write is in flight (or from a sync-loop that does not say). A pod
   * worker that read the request (or its absence) at this revision or later need not read it again.
   */
  killRevision: z.number().int().min(0).optional(),
  /** The sync-loop leader epoch (its lease revision) that wrote this record; a fenced old leader cannot write. */
  leaderEpoch: z.number().int().min(0).optional(),
  /** When that leader's fence admitted the write (ms since the Unix epoch, the writer's clock): a write arriving late was admitted while the term could still write. */
  fencedAt: z.number().int().min(0).optional(),
});
export type WorkPoke = z.infer<typeof WorkPoke>;

export const WorkerState = z.enum(['sync', 'terminating', 'terminated']);
export type WorkerState = z.infer<typeof WorkerState>;

/** The kubelet's reasonCache entry: why a container is waiting. */
export const ContainerReason = z.object({ reason: z.string(), message: z.string() });
export type ContainerReason = z.infer<typeof ContainerReason>;

/** Bucket `sl_worker`: a pod's worker state (podSyncStatus). Written by the owning pod-worker. */
export const WorkerRecord = z.object({
  type: z.literal('kubelet.podworker.WorkerRecord.v1'),
  uid: z.string(),
  name: z.string(),
  namespace: z.string(),
  state: WorkerState,
  finished: z.boolean(),
  deleted: z.boolean().optional(),
  evicted: z.boolean().optional(),
  startedAt: z.string().optional(),
  syncedAt: z.string().optional(),
  terminatingAt: z.string().optional(),
  terminatedAt: z.string().optional(),
  gracePeriod: z.number().int().optional(),
  /** The runtime cache time the last sync was based on (GetNewerThan). */
  lastSyncTime: z.number().optional(),
  /**
   * The node's time (cri-adapter's reply `timestamp`) after the last sync's last runtime change:
   * the next sync waits for a runtime cache newer than this instead of `lastSyncTime`, so the relist
   * cri-adapter's poke started once the change was made satisfies it without waiting for the next
   * periodic relist. Absent when the last sync made no runtime call.
   */
  runtimeSyncedAt: z.number().optional(),
  /** `RuntimeCacheEntry.episode.at` of the runtime status the last sync was based on: a newer episode is new to this worker. */
  episodeAt: z.number().optional(),
  /** Desired revision the last completed sync saw. */
  syncedRevision: z.number().int().optional(),
  /** The work queue: when sync-loop's 1 s tick should poke this pod again (ms since epoch). */
  nextSyncAt: z.number().optional(),
  /**
   * The trace the due sync continues: set when the pod was requeued to retry an unfinished episode
   * (a sync error, or a container or image in backoff), absent for the periodic resync. sync-loop's
   * tick pokes with it, else with an unsampled context, so a resync that changes nothing records
   * no trace.
   */
  nextSyncTrace: TraceCarrier.optional(),
  /** reasonCache: container name → last start failure. */
  reasons: z.record(z.string(), ContainerReason),
  /** Set once the pod first reached Running, for pod_start_duration_seconds. */
  runningObserved: z.boolean().optional(),
  /** Set once every regular container was first seen running, for pod_start_sli_duration_seconds. */
  startedObserved: z.boolean().optional(),
  /**
   * The pod's image-pull window until `startedObserved` (ms since the epoch): the earliest pull
   * start and the latest successful pull end the runtime reported (pod_startup_latency_tracker's
   * firstStartedPulling / lastFinishedPulling), excluded from pod_start_sli_duration_seconds.
   */
  imagePullStartedAt: z.number().optional(),
  imagePullFinishedAt: z.number().optional(),
  epoch: z.number().int().optional(),
});
export type WorkerRecord = z.infer<typeof WorkerRecord>;

export const PartitionLease = z.object({
  type: z.literal('kubelet.podworker.PartitionLease.v1'),
  holder: z.string(),
  acquiredAt: z.string(),
});
export type PartitionLease = z.infer<typeof PartitionLease>;

export const MemberHeartbeat = z.object({
  type: z.literal('kubelet.podworker.Member.v1'),
  instance: z.string(),
  at: z.string(),
});
export type MemberHeartbeat = z.infer<typeof MemberHeartbeat>;

// ---------------------------------------------------------------------------------------------
// Runtime view (kubecontainer.PodStatus), pleg cache and events
// ---------------------------------------------------------------------------------------------

export const SandboxState = z.enum(['SANDBOX_READY', 'SANDBOX_NOTREADY']);
export const ContainerRuntimeState = z.enum(['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN']);
export type ContainerRuntimeState = z.infer<typeof ContainerRuntimeState>;

export const RuntimeSandboxStatus = z.object({
  id: z.string(),
  state: SandboxState,
  /** Unix nanoseconds as a decimal string would overflow JSON numbers; milliseconds are enough here. */
  createdAt: z.number(),
  attempt: z.number().int(),
  ip: z.string().optional(),
  additionalIps: z.array(z.string()).optional(),
  hostNetwork: z.boolean().optional(),
});
export type RuntimeSandboxStatus = z.infer<typeof RuntimeSandboxStatus>;

export const RuntimeContainerStatus = z.object({
  id: z.string(),
  name: z.string(),
  sandboxId: z.string(),
  state: ContainerRuntimeState,
  createdAt: z.number(),
  startedAt: z.number().optional(),
  finishedAt: z.number().optional(),
  exitCode: z.number().int().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  image: z.string(),
  imageRef: z.string(),
  /** The kubelet's container hash (spec hash) from the container's annotations. */
  hash: z.string(),
  restartCount: z.number().int(),
  /** True for init containers (from annotations). */
  init: z.boolean().optional(),
});
export type RuntimeContainerStatus = z.infer<typeof RuntimeContainerStatus>;

/** kubecontainer.PodStatus: what the runtime says about one pod. */
export const RuntimePodStatus = z.object({
  uid: z.string(),
  name: z.string(),
  namespace: z.string(),
  ips: z.array(z.string()),
  sandboxes: z.array(RuntimeSandboxStatus),
  containers: z.array(RuntimeContainerStatus),
});
export type RuntimePodStatus = z.infer<typeof RuntimePodStatus>;

/** Bucket `sl_runtime`, key `<node>.<uid>`: the pleg cache entry with the time it was observed. */
export const RuntimeCacheEntry = z.object({
  type: z.literal('kubelet.pleg.RuntimeCacheEntry.v1'),
  uid: z.string(),
  /** Milliseconds since the epoch at which the status was read from the runtime. */
  timestamp: z.number(),
  status: RuntimePodStatus,
  /**
   * The pod's latest runtime episode: set by the relist that found a regular container dead after
   * its start (a restart, or the pod completing), which pleg traces as a new trace linked to the
   * pod's creation trace; carried in the pod's later entries. `at` is that relist's time: a sync
   * based on an entry whose episode is newer than its previous sync joins the episode's trace.
   */
  episode: z.object({ trace: TraceCarrier, at: z.number() }).optional(),
});
export type RuntimeCacheEntry = z.infer<typeof RuntimeCacheEntry>;

/** Bucket `sl_runtime`, key `<node>._relist`: the global cache time (cache.UpdateTime). */
export const RelistMark = z.object({
  type: z.literal('kubelet.pleg.RelistMark.v1'),
  timestamp: z.number(),
});
export type RelistMark = z.infer<typeof RelistMark>;

export const PlegEventType = z.enum(['ContainerStarted', 'ContainerDied', 'ContainerRemoved', 'PodSync', 'ContainerChanged']);
export type PlegEventType = z.infer<typeof PlegEventType>;

/** Stream `SL_PLEG`: pleg.PodLifecycleEvent. */
export const PodLifecycleEvent = z.object({
  type: z.literal('kubelet.pleg.PodLifecycleEvent.v1'),
  uid: z.string(),
  event: PlegEventType,
  /** The container id for container events. */
  data: z.string().optional(),
  containerName: z.string().optional(),
  at: z.string(),
  /**
   * The `sl_runtime` revision of the cache write the event came from (absent when the write removed
   * the pod's entry). A write's events are one relist's news about one pod: the sync one of them
   * starts reads that entry whole, so sync-loop pokes once per write, as the kubelet's pod worker
   * folds updates that arrive while one is pending.
   */
  cacheRevision: z.number().int().min(1).optional(),
});
export type PodLifecycleEvent = z.infer<typeof PodLifecycleEvent>;

/** The most events one {@link PodLifecycleEventList} carries. */
export const MAX_PLEG_EVENTS_PER_LIST = 64;

/**
 * Stream `SL_PLEG`: the events of one runtime cache write of one pod (a relist's news about it:
 * its sandbox and its container started, say), in order, in one message instead of one message
 * each. Read as the PodLifecycleEvents it holds ({@link plegEventsOf}).
 */
export const PodLifecycleEventList = z.object({
  type: z.literal('kubelet.pleg.PodLifecycleEventList.v1'),
  items: z.array(PodLifecycleEvent).min(1).max(MAX_PLEG_EVENTS_PER_LIST),
});
export type PodLifecycleEventList = z.infer<typeof PodLifecycleEventList>;

/** What `SL_PLEG` holds: one event, or a list of one pod's. */
export const PlegMessage = z.discriminatedUnion('type', [PodLifecycleEvent, PodLifecycleEventList]);
export type PlegMessage = z.infer<typeof PlegMessage>;

/** The events a message of `SL_PLEG` carries, in order. */
export function plegEventsOf(m: PlegMessage): readonly PodLifecycleEvent[] {
  return m.type === 'kubelet.pleg.PodLifecycleEventList.v1' ? m.items : [m];
}

// Probe results (the prober's results managers), shared by `sl_probe` and SyncPodRequest

export const ProbeResultValue = z.enum(['Success', 'Failure', 'Unknown']);
export type ProbeResultValue = z.infer<typeof ProbeResultValue>;

/** One results manager's content for a pod: container id (no `<runtime>://`) → result. */
export const ProbeResultMap = z.record(z.string(), ProbeResultValue);

/** The three results managers' content for one pod. */
export const ProbeResultsByType = z.object({
  liveness: ProbeResultMap.optional(),
  readiness: ProbeResultMap.optional(),
  startup: ProbeResultMap.optional(),
});
export type ProbeResultsByType = z.infer<typeof ProbeResultsByType>;

// ---------------------------------------------------------------------------------------------
// pod-worker → cri-adapter (request/reply)
// ---------------------------------------------------------------------------------------------

/** kubecontainer.SyncResult: one action and its outcome. `error` names the kubelet error (CrashLoopBackOff, ErrImagePull…). */
export const SyncResult = z.object({
  action: z.enum(['StartContainer', 'KillContainer', 'CreatePodSandbox', 'KillPodSandbox', 'ConfigPodSandbox', 'InitContainer']),
  target: z.string(),
  error: z.string().optional(),
  message: z.string().optional(),
  /**
   * For backoff errors (CrashLoopBackOff, ImagePullBackOff): when the backoff expires (ms since the
   * epoch), so the worker requeues then instead of at the resync (kubernetes PR 133066).
   */
  retryAt: z.number().optional(),
});
export type SyncResult = z.infer<typeof SyncResult>;

/** Host paths volume-manager mounted for a pod, by volume name. */
export const MountedVolumes = z.record(z.string(), z.object({ hostPath: z.string(), readOnly: z.boolean().optional() }));
export type MountedVolumes = z.infer<typeof MountedVolumes>;

export const RuntimeSyncPodRequest = z.object({
  type: z.literal('kubelet.runtime.SyncPodRequest.v1'),
  pod: BoundPod,
  /** The runtime status the worker based its decision on. */
  podStatus: RuntimePodStatus,
  /**
   * When `podStatus` is the pleg cache's: the node's time (ms since the epoch) it is valid as of,
   * GetNewerThan's timestamp. Absent when it is not the cache's (the previous sync's reply, handed
   * over) or from an older sender.
   */
  podStatusTimestamp: z.number().optional(),
  /**
   * The prober's liveness and startup results by container id (`sl_probe`), for computePodActions:
   * a Failure kills the container and restarts it under its restart policy. Absent: no results.
   */
  probes: ProbeResultsByType.optional(),
  volumes: MountedVolumes,
  /** Pull secret *names*; their values are resolved on the node by cri-adapter. */
  pullSecrets: z.array(z.string()),
  /**
   * The pod's data directory on the node (volume-manager's `MountReply.podDir`), where cri-adapter
   * writes the kubelet-managed `etc-hosts` and `containers/<name>/<id>` termination-message files.
   * Absent (an older sender): neither file is made.
   */
  podDir: z.string().min(1).optional(),
  fence: Fence,
});
export type RuntimeSyncPodRequest = z.infer<typeof RuntimeSyncPodRequest>;

export const RuntimeSyncPodReply = z.object({
  type: z.literal('kubelet.runtime.SyncPodReply.v1'),
  results: z.array(SyncResult),
  /** The runtime status right after the sync, so the worker need not wait for a relist. */
  podStatus: RuntimePodStatus,
  /** When this sync's first image pull started (ms since the epoch); absent when nothing was pulled. */
  imagePullStartedAt: z.number().optional(),
  /** When this sync's last successful image pull finished (ms since the epoch). */
  imagePullFinishedAt: z.number().optional(),
  /**
   * The node's time once the sync's runtime changes were made (ms since the epoch): a relist started
   * later sees them. A sync that made no CRI call gives the time of the pod's last change.
   */
  timestamp: z.number().optional(),
});
export type RuntimeSyncPodReply = z.infer<typeof RuntimeSyncPodReply>;

export const RuntimeKillPodRequest = z.object({
  type: z.literal('kubelet.runtime.KillPodRequest.v1'),
  pod: BoundPod.optional(),
  runningPod: RunningPodRef,
  /**
   * The runtime status the worker based the kill on (the pleg cache's, as the kubelet's KillPod
   * gets its running pod from it). When it equals the status cri-adapter read at the end of the
   * pod's last SyncPod or KillPod, the runtime is not read again before the kill. Absent: read.
   */
  podStatus: RuntimePodStatus.optional(),
  gracePeriodOverride: z.number().int().min(0).optional(),
  fence: Fence,
});
export type RuntimeKillPodRequest = z.infer<typeof RuntimeKillPodRequest>;

export const RuntimeKillPodReply = z.object({
  type: z.literal('kubelet.runtime.KillPodReply.v1'),
  results: z.array(SyncResult),
  podStatus: RuntimePodStatus,
  /** The node's time once the kill's runtime changes were made (ms since the epoch): a relist started later sees them. */
  timestamp: z.number().optional(),
});
export type RuntimeKillPodReply = z.infer<typeof RuntimeKillPodReply>;

export const RuntimeGetPodStatusRequest = z.object({
  type: z.literal('kubelet.runtime.GetPodStatusRequest.v1'),
  pod: RunningPodRef,
});
export type RuntimeGetPodStatusRequest = z.infer<typeof RuntimeGetPodStatusRequest>;

export const RuntimeGetPodStatusReply = z.object({
  type: z.literal('kubelet.runtime.GetPodStatusReply.v1'),
  podStatus: RuntimePodStatus,
  timestamp: z.number(),
});
export type RuntimeGetPodStatusReply = z.infer<typeof RuntimeGetPodStatusReply>;

/**
 * `uids`: relist only these pods (pleg's relist targeted by the UIDs of cri-adapter's pokes);
 * absent: every pod the runtime knows (the periodic relist, the safety net).
 */
export const RuntimeRelistRequest = z.object({ type: z.literal('kubelet.runtime.RelistRequest.v1'), uids: z.array(z.string().min(1)).max(4096).optional() });
export type RuntimeRelistRequest = z.infer<typeof RuntimeRelistRequest>;

export const RuntimeRelistReply = z.object({
  type: z.literal('kubelet.runtime.RelistReply.v1'),
  pods: z.array(RuntimePodStatus),
  timestamp: z.number(),
});
export type RuntimeRelistReply = z.infer<typeof RuntimeRelistReply>;

/**
 * The body of a core-NATS poke on `sl.<node>.plegrelist` (cri-adapter → pleg after a runtime
 * change): `uid` names the pod whose operation changed the runtime, so pleg relists that pod only;
 * absent (a change outside any pod's operation), pleg relists everything.
 */
export const PlegRelistPoke = z.object({ uid: z.string().min(1).optional() });
export type PlegRelistPoke = z.infer<typeof PlegRelistPoke>;

// ---------------------------------------------------------------------------------------------
// The evented PLEG: the runtime's container events, as cri-adapter hands them to pleg
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.ContainerEventType`, as the CRI spells it. */
export const RuntimeContainerEventType = z.enum(['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
export type RuntimeContainerEventType = z.infer<typeof RuntimeContainerEventType>;

/**
 * What every message of one event stream carries: `stream` names cri-adapter's subscription to the
 * runtime's events (a new one after every reconnect or restart), `seq` numbers its messages from 1
 * (pods and stream state alike), so pleg sees a lost message as a gap and relists.
 */
const EventStreamPosition = {
  stream: z.string().min(1).max(64),
  seq: z.number().int().positive(),
};

/**
 * `sl.<node>.runtimeevents.<uid>`: the runtime's container events about one sandbox of the pod,
 * coalesced over a short window. `status` is the pod's status as far as that sandbox goes (the
 * sandbox and its containers, translated with the code the relist uses; no sandbox: it was deleted)
 * — the CRI event's `pod_sandbox_status` and `containers_statuses` of the newest event.
 * `observedAt` is that event's `created_at` (ms since the epoch).
 */
export const RuntimeContainerEvents = z.object({
  type: z.literal('kubelet.runtime.ContainerEvents.v1'),
  ...EventStreamPosition,
  uid: z.string().min(1),
  sandboxId: z.string().min(1),
  status: RuntimePodStatus,
  observedAt: z.number(),
  /** The coalesced events, oldest first (`containerId` is the sandbox id for a sandbox's own events, as in the CRI). */
  events: z
    .array(z.object({ containerId: z.string(), event: RuntimeContainerEventType, at: z.number() }))
    .min(1)
    .max(1024),
});
export type RuntimeContainerEvents = z.infer<typeof RuntimeContainerEvents>;

/**
 * `sl.<node>.runtimeevents.<uid>`: the pod's whole status as a SyncPod or KillPod read it after its
 * changes (sent while the event stream is live, instead of a relist poke). `observedAt`: when that
 * read started; `timestamp`: the cache time the pod's entry gets, later than the operation's reply
 * `timestamp`, so the pod-worker's next sync (GetNewerThan) does not wait for the next relist mark.
 * Events cri-adapter received during the operation follow it again, so pleg ends on the newest.
 */
export const RuntimePodOperated = z.object({
  type: z.literal('kubelet.runtime.PodOperated.v1'),
  ...EventStreamPosition,
  uid: z.string().min(1),
  status: RuntimePodStatus,
  observedAt: z.number(),
  timestamp: z.number(),
});
export type RuntimePodOperated = z.infer<typeof RuntimePodOperated>;

/**
 * `sl.<node>.runtimeevents._stream`: the state of cri-adapter's event stream, sent on every change
 * and every second while live (the heartbeat). `seq` is this message's own number (the previous
 * message of the stream had `seq - 1`). `live`: every event the runtime sent before `at` (ms,
 * cri-adapter's clock) was handed over before this message — pleg's global cache time
 * (updateGlobalCache). `down`: the stream broke or cannot be had (`reason`); pleg relists every period.
 */
export const RuntimeEventStreamState = z.object({
  type: z.literal('kubelet.runtime.EventStreamState.v1'),
  ...EventStreamPosition,
  state: z.enum(['live', 'down']),
  at: z.number(),
  reason: z.string().max(1024).optional(),
});
export type RuntimeEventStreamState = z.infer<typeof RuntimeEventStreamState>;

/**
 * The observation times of the runtime's events (its clock), of an operation's read (cri-adapter's)
 * and of a relist (pleg's) come from different clocks of one node: two closer than this are not
 * ordered by their times (a receiver that must order them asks the runtime again instead).
 */
export const RUNTIME_CLOCK_SKEW_MS = 10;

/** Any message on `sl.<node>.runtimeevents.*`, told apart by `type`. */
export const RuntimeEventMessage = z.discriminatedUnion('type', [RuntimeContainerEvents, RuntimePodOperated, RuntimeEventStreamState]);
export type RuntimeEventMessage = z.infer<typeof RuntimeEventMessage>;

/**
 * `sl.<node>.rpc.runtime.exec`: runs a command in a running container (CRI ExecSync) for
 * `splitlet exec`. stdin and a tty are not supported (ExecSync has neither).
 */
export const RuntimeExecRequest = z.object({
  type: z.literal('kubelet.runtime.ExecRequest.v1'),
  containerId: z.string().min(1),
  cmd: z.array(z.string()).min(1, 'a command is required'),
  /** Seconds; 0 runs without a limit. */
  timeoutSeconds: z.number().int().min(0),
});
export type RuntimeExecRequest = z.infer<typeof RuntimeExecRequest>;

export const RuntimeExecReply = z.object({
  type: z.literal('kubelet.runtime.ExecReply.v1'),
  /** Base64 of the command's stdout and stderr (each capped; `truncated` says so). */
  stdout: z.string(),
  stderr: z.string(),
  exitCode: z.number().int(),
  truncated: z.boolean().optional(),
});
export type RuntimeExecReply = z.infer<typeof RuntimeExecReply>;

// ---------------------------------------------------------------------------------------------
// prober → sync-loop, pod-worker (KV `sl_probe`)
// ---------------------------------------------------------------------------------------------

/**
 * Bucket `sl_probe`, key `<node>.<uid>`: the pod's probe results (the kubelet's liveness, readiness
 * and startup results managers), written only by the prober, on a result change. sync-loop watches
 * the bucket and syncs the pod (the results managers' Updates channels → HandlePodSyncs); the pod
 * worker reads it for the container `ready`/`started` flags and passes liveness and startup to
 * cri-adapter's computePodActions.
 */
export const PodProbeResults = ProbeResultsByType.extend({
  type: z.literal('kubelet.prober.PodProbeResults.v1'),
  uid: z.string(),
  updatedAt: z.string(),
  /** The span of the probe whose result change wrote this record: the sync it causes continues it. */
  trace: TraceCarrier.optional(),
});
export type PodProbeResults = z.infer<typeof PodProbeResults>;

// ---------------------------------------------------------------------------------------------
// sync-loop → cri-adapter: container garbage collection (request/reply)
// ---------------------------------------------------------------------------------------------

/**
 * kubecontainer.GCPolicy: which dead containers may be removed. The kubelet's defaults are
 * MinAge 0, MaxPerPodContainer 1, MaxContainers -1.
 */
export const ContainerGCPolicy = z.object({
  /** Minimum age (ms since creation) at which a container can be garbage collected; 0: no limit. */
  minAgeMs: z.number().int().min(0, 'invalid minimum garbage collection age: must not be negative'),
  /** Max dead containers per (pod UID, container name); less than zero: no limit. */
  maxPerPodContainer: z.number().int(),
  /** Max dead containers on the node; less than zero: no limit. */
  maxContainers: z.number().int(),
});
export type ContainerGCPolicy = z.infer<typeof ContainerGCPolicy>;

/**
 * containerGC.GarbageCollect as a request: sync-loop (the kubelet's StartGarbageCollection and its
 * podStateProvider) asks cri-adapter (the runtime) to remove dead containers, dead sandboxes and
 * the log directories of gone pods. GC never touches running containers or ready sandboxes.
 */
export const RuntimeGarbageCollectRequest = z.object({
  type: z.literal('kubelet.runtime.GarbageCollectRequest.v1'),
  policy: ContainerGCPolicy,
  /** sourcesReady.AllReady(): only then are whole pods' containers and log directories removed. */
  allSourcesReady: z.boolean(),
  /**
   * The pods whose content must stay: those the pod workers know, unless evicted or deleted and
   * terminated. Every other pod's content may be removed once all sources are ready
   * (podWorkers.ShouldPodContentBeRemoved).
   */
  keep: z.array(z.string()),
});
export type RuntimeGarbageCollectRequest = z.infer<typeof RuntimeGarbageCollectRequest>;

export const RuntimeGarbageCollectReply = z.object({
  type: z.literal('kubelet.runtime.GarbageCollectReply.v1'),
  removedContainers: z.number().int().min(0),
  removedSandboxes: z.number().int().min(0),
  removedLogDirs: z.number().int().min(0),
  /** The steps that failed, aggregated as the kubelet reports them (absent: GC succeeded). */
  error: z.string().optional(),
});
export type RuntimeGarbageCollectReply = z.infer<typeof RuntimeGarbageCollectReply>;

/**
 * Bucket `sl_cri_fences` (writer: the node's cri-adapter), key `<node>.<partition>`: the newest
 * pod-worker epoch the cri-adapter accepted for the partition. Written before the request it came
 * with acts, read at start, so a restarted cri-adapter still refuses an older epoch.
 */
export const FenceEpoch = z.object({
  type: z.literal('kubelet.runtime.FenceEpoch.v1'),
  partition: z.number().int().min(0),
  epoch: z.number().int().min(0),
});
export type FenceEpoch = z.infer<typeof FenceEpoch>;

// ---------------------------------------------------------------------------------------------
// node facts (published by the node-local side)
// ---------------------------------------------------------------------------------------------

/** A resource quantity as Kubernetes writes it: `4`, `3500m`, `8Gi`, `20000000000`. */
const Quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$/, 'must be a resource quantity, e.g. 4, 3500m, 8Gi');

/** The resources admission counts: `cpu`, `memory`, `ephemeral-storage`, `pods`. */
export const NodeResources = z.object({
  cpu: Quantity,
  memory: Quantity,
  'ephemeral-storage': Quantity,
  pods: Quantity,
});
export type NodeResources = z.infer<typeof NodeResources>;

/**
 * Bucket `sl_node_capacity` (writer: the node's volume-manager), key `<node>`: the node's resources
 * as measured on the node itself (Node `status.capacity` / `status.allocatable`). sync-loop admits
 * pods against `allocatable` once this record exists.
 */
export const NodeCapacity = z.object({
  type: z.literal('kubelet.node.NodeCapacity.v1'),
  node: z.string(),
  /** What the node has: CPUs, total memory, the size of the filesystem holding the kubelet root dir, maxPods. */
  capacity: NodeResources,
  /** What pods may use: the capacity, or less where the node's configuration says so. */
  allocatable: NodeResources,
  /** When it was measured (RFC 3339); re-measured every 10 s and rewritten at least every 20 s. */
  observedAt: z.string(),
  /**
   * Which eviction thresholds (evictionHard) the node crosses, or crossed within the pressure
   * transition period: MemoryPressure (memory.available), DiskPressure (nodefs.available,
   * nodefs.inodesFree), PIDPressure (pid.available).
   */
  pressure: z.object({ memory: z.boolean(), disk: z.boolean(), pid: z.boolean() }).optional(),
});
export type NodeCapacity = z.infer<typeof NodeCapacity>;

/**
 * Bucket `sl_node_runtime` (writer: the node's cri-adapter), key `<node>`: the container runtime's
 * state as the kubelet's updateRuntimeUp sees it (CRI Status every 5 s). Written on a change and at
 * least every 20 s.
 */
export const NodeRuntimeStatus = z.object({
  type: z.literal('kubelet.node.RuntimeStatus.v1'),
  node: z.string(),
  /** Status succeeded and reported RuntimeReady within the last 30 s. */
  ready: z.boolean(),
  /** Why not, in the kubelet's words (`container runtime is down: …`); empty when ready. */
  message: z.string(),
  /** When it was checked (RFC 3339). */
  observedAt: z.string(),
});
export type NodeRuntimeStatus = z.infer<typeof NodeRuntimeStatus>;

// ---------------------------------------------------------------------------------------------
// pod-worker / sync-loop → volume-manager (request/reply)
// ---------------------------------------------------------------------------------------------

export const VolumeMountRequest = z.object({
  type: z.literal('kubelet.volume.MountRequest.v1'),
  pod: BoundPod,
  fence: Fence,
});
export type VolumeMountRequest = z.infer<typeof VolumeMountRequest>;

export const VolumeMountReply = z.object({
  type: z.literal('kubelet.volume.MountReply.v1'),
  podDir: z.string(),
  volumes: MountedVolumes,
});
export type VolumeMountReply = z.infer<typeof VolumeMountReply>;

export const VolumeUnmountRequest = z.object({
  type: z.literal('kubelet.volume.UnmountRequest.v1'),
  uid: z.string(),
  /** Remove the pod's data directory too (ShouldPodContentBeRemoved). */
  removeContent: z.boolean(),
  fence: Fence,
});
export type VolumeUnmountRequest = z.infer<typeof VolumeUnmountRequest>;

export const VolumeUnmountReply = z.object({ type: z.literal('kubelet.volume.UnmountReply.v1'), unmounted: z.array(z.string()) });
export type VolumeUnmountReply = z.infer<typeof VolumeUnmountReply>;

export const VolumeCleanupRequest = z.object({
  type: z.literal('kubelet.volume.CleanupRequest.v1'),
  /** UIDs that may still have content: desired pods and pods whose workers are not finished. */
  keep: z.array(z.string()),
});
export type VolumeCleanupRequest = z.infer<typeof VolumeCleanupRequest>;

export const VolumeCleanupReply = z.object({ type: z.literal('kubelet.volume.CleanupReply.v1'), removed: z.array(z.string()) });
export type VolumeCleanupReply = z.infer<typeof VolumeCleanupReply>;

/** Bucket `sl_volumes`: actual state of world for one pod. */
export const PodVolumeState = z.object({
  type: z.literal('kubelet.volume.PodVolumeState.v1'),
  uid: z.string(),
  podDir: z.string(),
  mounted: z.boolean(),
  volumes: MountedVolumes,
  error: z.string().optional(),
  updatedAt: z.string(),
});
export type PodVolumeState = z.infer<typeof PodVolumeState>;

// ---------------------------------------------------------------------------------------------
// → status-manager
// ---------------------------------------------------------------------------------------------

/**
 * Stream `SL_STATUS`: statusManager.SetPodStatus / TerminatePod / RemovePod as a message.
 * `kind: set` carries a generated status; `terminated` marks the worker finished (TerminatePod);
 * `removed` forgets the pod (RemoveOrphanedStatuses).
 */
export const PodStatusUpdate = z.object({
  type: z.literal('kubelet.status.PodStatusUpdate.v1'),
  kind: z.enum(['set', 'terminated', 'removed']),
  uid: z.string(),
  name: z.string(),
  namespace: z.string(),
  pod: BoundPod.optional(),
  status: PodStatus.optional(),
  /** From the pod worker: could a container still be running? (holds a terminal phase back). */
  couldHaveRunningContainers: z.boolean(),
  /**
   * From the pod worker: the pod is no longer desired (its source removed it; sync-loop's pod
   * manager dropped it) and the worker is terminating it. status-manager keeps its status but
   * reports it to the API server no more — the kubelet's status manager, finding no pod-manager pod
   * for it, skips it: a static pod's mirror pod is not patched. Absent: desired.
   */
  podRemoved: z.boolean().optional(),
  /**
   * From the pod worker: the epoch of the partition lease it held (its fence). With `at` it orders
   * a pod's updates: status-manager ignores one older than the last it applied (an earlier epoch,
   * or the same epoch and an earlier `at`) — a redelivery overtaken by newer updates. Absent (sync-loop's
   * rejections): not ordered.
   */
  epoch: z.number().int().optional(),
  at: z.string(),
  trace: TraceCarrier.optional(),
});
export type PodStatusUpdate = z.infer<typeof PodStatusUpdate>;

/** Bucket `sl_status`: the versioned status cache entry. */
export const PodStatusRecord = z.object({
  type: z.literal('kubelet.status.PodStatusRecord.v1'),
  uid: z.string(),
  name: z.string(),
  namespace: z.string(),
  version: z.number().int(),
  pod: BoundPod,
  status: PodStatus,
  /** TerminatePod was called: the worker finished. */
  finished: z.boolean(),
  updatedAt: z.string(),
  /**
   * A terminal phase (with its reason and message) held back because a container could still be
   * running (status manager mergePodStatus): `status` keeps the previous phase until the worker
   * reports no running container or TerminatePod. Optional (added by status-manager).
   */
  heldTerminal: z.object({ phase: z.enum(['Succeeded', 'Failed']), reason: z.string().optional(), message: z.string().optional() }).optional(),
});
export type PodStatusRecord = z.infer<typeof PodStatusRecord>;

/** Stream `SL_EVENTS`: a core/v1 Event, as the event recorder would post it. */
export const KubeEvent = z.object({
  type: z.literal('kubelet.events.Event.v1'),
  eventType: z.enum(['Normal', 'Warning']),
  reason: z.string(),
  message: z.string(),
  involvedObject: z.object({
    kind: z.string(),
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    fieldPath: z.string().optional(),
  }),
  source: z.object({ component: z.string(), host: z.string() }),
  timestamp: z.string(),
});
export type KubeEvent = z.infer<typeof KubeEvent>;

/** The most events one {@link KubeEventList} carries. */
export const MAX_EVENTS_PER_LIST = 64;

/**
 * Stream `SL_EVENTS`: the events one process recorded for one object close together (a pod's
 * SyncPod: its sandbox, image, container created and started), oldest first, in one message
 * instead of one message each. Read as the KubeEvents it holds, in order ({@link kubeEventsOf}).
 */
export const KubeEventList = z.object({
  type: z.literal('kubelet.events.EventList.v1'),
  items: z.array(KubeEvent).min(1).max(MAX_EVENTS_PER_LIST),
});
export type KubeEventList = z.infer<typeof KubeEventList>;

/** What `SL_EVENTS` holds: one event, or a list of them. */
export const KubeEventMessage = z.discriminatedUnion('type', [KubeEvent, KubeEventList]);
export type KubeEventMessage = z.infer<typeof KubeEventMessage>;

/** The events a message of `SL_EVENTS` carries, oldest first. */
export function kubeEventsOf(m: KubeEventMessage): readonly KubeEvent[] {
  return m.type === 'kubelet.events.EventList.v1' ? m.items : [m];
}

/** Stream `SL_DLQ`: a message that could not be processed, with why. */
export const DeadLetter = z.object({
  type: z.literal('kubelet.bus.DeadLetter.v1'),
  subject: z.string(),
  stream: z.string().optional(),
  consumer: z.string().optional(),
  streamSequence: z.number().optional(),
  deliveryCount: z.number().optional(),
  reason: z.string(),
  /** The original payload, truncated to 64 KiB, as UTF-8 text (lossy for binary). */
  payload: z.string(),
  payloadBytes: z.number().int(),
  process: z.string(),
  at: z.string(),
});
export type DeadLetter = z.infer<typeof DeadLetter>;

/** A finished span, so `splitlet trace` works without a collector (on `SL_SPANS` inside a {@link SpanBatch}). */
export const SpanRecord = z.object({
  type: z.literal('kubelet.trace.Span.v1'),
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string(),
  kind: z.number().int(),
  service: z.string(),
  startUnixNano: z.string(),
  endUnixNano: z.string(),
  statusCode: z.number().int(),
  statusMessage: z.string().optional(),
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  links: z.array(z.object({ traceId: z.string(), spanId: z.string() })),
  events: z.array(z.object({ name: z.string(), timeUnixNano: z.string() })).optional(),
});
export type SpanRecord = z.infer<typeof SpanRecord>;

/**
 * Stream `SL_SPANS`, subject `sl.<node>.spans.<traceId>`: the finished spans of one trace that one
 * process recorded within a short window (one message for many spans: a pod's creation ends ~100
 * spans). Every record's `traceId` is the subject's.
 */
export const SpanBatch = z
  .object({
    type: z.literal('kubelet.trace.SpanBatch.v1'),
    spans: z.array(SpanRecord).min(1),
  })
  .refine((b) => b.spans.every((s) => s.traceId === b.spans[0]!.traceId), { message: 'every span of a batch belongs to one trace' });
export type SpanBatch = z.infer<typeof SpanBatch>;
