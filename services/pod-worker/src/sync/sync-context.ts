/**
 * What one sync of one pod carries between its steps, and the options every sync shares.
 *
 * Models the arguments of pkg/kubelet/kubelet.go's SyncPod / SyncTerminatingPod /
 * SyncTerminatedPod (the pod, its status, the update type), read here from KV instead.
 */
import type { Context, Tracer } from '@opentelemetry/api';
import type { BoundPod, DesiredPod, KillRequest, PodStatus, PodStatusRecord, ProbeResultsByType, RuntimePodStatus } from '@splitlet/api';
import { hasErrorCode } from '@splitlet/api';
import type { Clock, EventSink, Log, PodStateStore, ProbeResultsSource, RuntimeClient, RuntimeStatusSource, StatusSink, SyncMetrics, Versioned, VolumeClient } from '../ports.js';
import type { PartitionGuard } from '../partitions/partition-guard.js';
import type { SyncControl } from '../pod-workers/pod-workers.js';
import type { WorkerStateDecision } from './worker-decisions.js';

/** Options of the pod syncer. */
export interface PodSyncerOptions {
  readonly node: string;
  /** Prefix of container IDs in statuses (`containerd://…`). */
  readonly runtimeName: string;
  /** canRunPod: allow privileged containers and host namespaces. */
  readonly allowPrivileged: boolean;
  /** makePodDataDirs + WaitForAttachAndMount deadline. */
  readonly volumeTimeoutMs: number;
  /** runtime SyncPod deadline. */
  readonly runtimeSyncTimeoutMs: number;
  readonly store: PodStateStore;
  readonly runtimeCache: RuntimeStatusSource;
  readonly runtime: RuntimeClient;
  readonly volumes: VolumeClient;
  readonly status: StatusSink;
  readonly events: EventSink;
  readonly metrics: SyncMetrics;
  readonly tracer: Tracer;
  readonly clock: Clock;
  readonly logger: Log;
  /** @default Math.random */
  readonly random?: () => number;
  /** syncFrequency: the resync period after a successful sync. @default 60000 */
  readonly resyncMs?: number;
  /** The node's IPs for hostIP/hostIPs (optional). */
  readonly hostIPs?: readonly string[];
  /** The prober's results (`sl_probe`); absent: no probe results (containers with probes stay unready). */
  readonly probes?: ProbeResultsSource;
}

/** Everything one sync read, passed between its steps. */
export interface SyncCtx {
  readonly guard: PartitionGuard;
  readonly ctl: SyncControl;
  readonly uid: string;
  readonly pod: BoundPod;
  readonly desired: Versioned<DesiredPod> | null;
  readonly kill: Versioned<KillRequest> | null;
  /** The status-manager's cached status (generateAPIPodStatus's old status). */
  readonly oldStatus: PodStatus | undefined;
  /** The status-manager's record the old status is from (undefined: none yet). */
  readonly apiRecord: PodStatusRecord | undefined;
  readonly runtimeStatus: RuntimePodStatus;
  /** The pleg cache's timestamp of `runtimeStatus` (GetNewerThan's); undefined when the previous sync's reply handed it over. */
  readonly runtimeStatusAt: number | undefined;
  /** Nothing the pod's last full SyncPod in this epoch read has changed (settled-sync.ts): skip the volume mount and the runtime SyncPod. */
  readonly settled: boolean;
  readonly decision: WorkerStateDecision;
  /** The span of this pod's previous sync, when this sync continues it (a worker state transition). */
  readonly continues: Context | undefined;
  /** A runtime episode (a container death pleg began a trace for) this worker has not synced on yet. */
  readonly newEpisode: Context | undefined;
  /** `episode.at` of the runtime status this sync is based on (persisted as `WorkerRecord.episodeAt`). */
  readonly episodeAt: number | undefined;
  /** The probe results this sync read (prober_manager UpdatePodStatus's input); undefined for pods without probes. */
  readonly probes: ProbeResultsByType | undefined;
  /** The `timestamp` of this sync's last runtime reply (SyncPod, KillPod), persisted as `WorkerRecord.runtimeSyncedAt`. */
  readonly runtimeCalls: { at: number | undefined };
}

/** A handled SyncPod / SyncTerminatingPod outcome. */
export interface StateSyncOutcome {
  readonly terminal: boolean;
  readonly error?: string;
  /** The runtime status right after the step (cri-adapter's reply), for the next sync. */
  readonly runtimeStatus?: RuntimePodStatus;
  /** The earliest backoff expiry the runtime reported (ms since the epoch), to requeue then. */
  readonly backoffUntil?: number;
  /** cri-adapter's SyncPod reply status, when the sync ran the runtime SyncPod. */
  readonly replyStatus?: RuntimePodStatus;
  /** The sync found the pod settled and skipped the mount and the runtime SyncPod. */
  readonly settled?: boolean;
}

/** Throws the abort reason when the sync was aborted (a kill arrived, the partition stopped). */
export function checkpoint(ctl: SyncControl): void {
  ctl.signal.throwIfAborted();
}

/** True for the error an aborted sync throws. */
export function isAbort(e: unknown): boolean {
  return hasErrorCode(e, 'SyncAborted');
}

/** True for an error the sync must not handle itself: it was aborted, or its lease is gone. */
export function isFatalToSync(e: unknown): boolean {
  return isAbort(e) || hasErrorCode(e, 'LeaseLost');
}
