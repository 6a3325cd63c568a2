/**
 * One sync of one pod: read KV, decide, run SyncPod / SyncTerminatingPod / SyncTerminatedPod as a
 * transaction script with one span per step, write the worker record.
 *
 * Models pkg/kubelet/kubelet.go (Kubelet.SyncPod, SyncTerminatingPod, SyncTerminatingRuntimePod,
 * SyncTerminatedPod) and pkg/kubelet/pod_workers.go (podWorkerLoop's GetNewerThan wait,
 * completeSync / completeTerminating / completeTerminated, completeWork's requeue).
 *
 * Differences from the kubelet, by design:
 * - The worker never trusts a poke: everything comes from KV (`sl_kill` first, then `sl_desired`,
 *   `sl_worker`, `sl_status`) and from the pleg cache (`sl_runtime`).
 * - Side effects go to other processes (cri-adapter, volume-manager, status-manager) and carry the
 *   partition lease's fence; the lease is checked before every write and side effect.
 * - The GetNewerThan wait is bounded (the cache warns and proceeds); after a state transition the
 *   next sync uses the runtime status the cri-adapter just returned instead of waiting for a relist.
 * - Requeue = `WorkerRecord.nextSyncAt`; sync-loop's 1 s tick pokes the pod when it is due.
 */
import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, context, trace } from '@opentelemetry/api';
import type { Attributes, Context, Link, Span, Tracer } from '@opentelemetry/api';
import type {
  BoundPod,
  ContainerStatus,
  DesiredPod,
  KillRequest,
  KubeEvent,
  MountedVolumes,
  PodStatus,
  PodStatusUpdate,
  RuntimePodStatus,
  SyncPodType,
  TraceCarrier,
  WorkerRecord,
} from '@splitlet/api';
import { errorMessage, hasErrorCode } from '@splitlet/api';
import type { ProbeResultsByType } from '@splitlet/api';
import { ConfigAnnotations, generateAPIPodStatus, isStaticPod, parseTime, podIPsAfterTeardown, requeueDelay } from '@splitlet/kube';
import { extractContext, injectContext, withSpan } from '@splitlet/telemetry';
import type {
  Clock,
  EventSink,
  Log,
  PodStateStore,
  ProbeResultsSource,
  RuntimeClient,
  RuntimeStatusSource,
  StatusSink,
  SyncMetrics,
  Versioned,
  VolumeClient,
} from '../ports.js';
import type { PartitionGuard } from '../partitions/partition-guard.js';
import type { SyncControl, SyncFunction, SyncReturn } from '../pod-workers/pod-workers.js';
import { emptyRuntimeStatus } from '../runtime-cache/runtime-status-cache.js';
import { canRunPod } from './can-run-pod.js';
import { hasProbes, probesForRuntime } from './probe-results.js';
import { mergePullWindow, podStartDurations } from './pod-startup-latency.js';
import { earliestBackoffExpiry, runtimeSyncError, updateReasons } from './sync-results.js';
import { classify, isTerminalPhase, nextWorkerState, toTerminated, toTerminating } from './worker-decisions.js';
import type { WorkerStateDecision } from './worker-decisions.js';

/** The tracer scope the kubelet uses for its pod sync spans. */
export const KUBELET_TRACER = 'k8s.io/kubernetes/pkg/kubelet';

/** Options of {@link PodSyncer}. */
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
  /** The node's IPs for hostIP/hostIPs (optional). */
  readonly hostIPs?: readonly string[];
  /** The prober's results (`sl_probe`); absent: no probe results (containers with probes stay unready). */
  readonly probes?: ProbeResultsSource;
}

/** Everything one sync read, passed between its steps. */
interface SyncCtx {
  readonly guard: PartitionGuard;
  readonly ctl: SyncControl;
  readonly uid: string;
  readonly pod: BoundPod;
  readonly desired: Versioned<DesiredPod> | null;
  readonly kill: Versioned<KillRequest> | null;
  /** The status-manager's cached status (generateAPIPodStatus's old status). */
  readonly oldStatus: PodStatus | undefined;
  readonly runtimeStatus: RuntimePodStatus;
  readonly decision: WorkerStateDecision;
  /** The span of this pod's previous sync, when this sync continues it (a worker state transition). */
  readonly continues: Context | undefined;
  /** A runtime episode (a container death pleg began a trace for) this worker has not synced on yet. */
  readonly newEpisode: Context | undefined;
  /** `episode.at` of the runtime status this sync is based on (persisted as `WorkerRecord.episodeAt`). */
  readonly episodeAt: number | undefined;
}

/** The runtime status a sync is based on, and what it says about the sync's trace. */
interface RuntimeView {
  readonly status: RuntimePodStatus;
  readonly continues: Context | undefined;
  readonly newEpisode: Context | undefined;
  readonly episodeAt: number | undefined;
}

/** A handled SyncPod outcome. */
interface StateSyncOutcome {
  readonly terminal: boolean;
  readonly error?: string;
  /** The runtime status right after the step (cri-adapter's reply), for the next sync. */
  readonly runtimeStatus?: RuntimePodStatus;
  /** The earliest backoff expiry the runtime reported (ms since the epoch), to requeue then. */
  readonly backoffUntil?: number;
}

/** The pod syncer: stateless across pods except a hand-over of fresh runtime statuses between consecutive syncs of a pod. */
export class PodSyncer {
  readonly #o: PodSyncerOptions;
  readonly #random: () => number;
  /**
   * Runtime status from cri-adapter's last reply, used by the immediately following sync of the
   * pod, and the span of the sync that handed it over (the next sync continues its trace).
   */
  readonly #handoff = new Map<string, { status: RuntimePodStatus; epoch: number; parent: Context | undefined }>();
  /** The probe results each pod's sync in progress read (prober_manager UpdatePodStatus's input). */
  readonly #probes = new Map<string, ProbeResultsByType>();

  constructor(options: PodSyncerOptions) {
    this.#o = options;
    this.#random = options.random ?? Math.random;
  }

  /** The {@link SyncFunction} for one partition's pod workers. */
  forPartition(guard: PartitionGuard): SyncFunction {
    return (uid, ctl) => this.sync(guard, uid, ctl);
  }

  /**
   * Syncs `uid` once. Handled failures (a failed mount, a runtime error, a failed kill) are
   * reported (events, status), requeued through the worker record and resolve normally; a throw
   * is unexpected (KV unavailable, lease lost, aborted).
   */
  async sync(guard: PartitionGuard, uid: string, ctl: SyncControl): Promise<SyncReturn> {
    const o = this.#o;
    const pp = guard.partition;
    const [kill, desired, worker, apiRecord] = await abortable(
      Promise.all([o.store.getKill(pp, uid), o.store.getDesired(pp, uid), o.store.getWorker(pp, uid), o.store.getApiStatus(uid)]),
      ctl.signal,
    );
    const record = worker?.value;
    const c = classify(record, desired, kill);
    switch (c.action) {
      case 'none':
        this.#handoff.delete(uid);
        this.#probes.delete(uid);
        o.logger.debug('nothing to sync', { uid, why: c.why });
        return {};
      case 'remove':
        this.#probes.delete(uid);
        ctl.markTerminating();
        await this.#forget(guard, uid, record, c.kill, c.kill.value.pod ?? undefined);
        return {};
      case 'terminateRuntimePod':
        ctl.markTerminating();
        return this.#syncTerminatingRuntimePod(guard, ctl, uid, record, c.kill);
      case 'run':
        break;
    }
    const pod = c.pod;
    // The prober's results, read only for pods with probes (no extra KV read for the others).
    const probes = hasProbes(pod) ? await abortable(o.probes?.get(uid) ?? Promise.resolve(undefined), ctl.signal) : undefined;
    if (probes === undefined) this.#probes.delete(uid);
    else this.#probes.set(uid, probes);
    const view = await this.#runtimeStatus(guard, uid, record, ctl, pod);
    const runtimeStatus = view.status;
    const decision = nextWorkerState({
      uid,
      pod,
      record,
      desired,
      kill,
      apiPhase: apiRecord?.status.phase,
      runtimeStatus,
      now: o.clock.now(),
      epoch: guard.epoch,
    });
    if (decision.record.state !== 'sync') ctl.markTerminating();
    const ctx: SyncCtx = {
      guard,
      ctl,
      uid,
      pod,
      desired,
      kill,
      oldStatus: apiRecord?.status,
      runtimeStatus,
      decision,
      continues: view.continues,
      newEpisode: view.newEpisode,
      episodeAt: view.episodeAt,
    };
    switch (decision.record.state) {
      case 'sync':
        return this.#runSyncPod(ctx, decision.record);
      case 'terminating':
        return this.#runSyncTerminatingPod(ctx, decision.record);
      case 'terminated':
        return this.#runSyncTerminatedPod(ctx, decision.record);
    }
  }

  /**
   * The runtime status to sync against: the one the previous sync handed over, else the cache's
   * (GetNewerThan the last sync), with its episode — new when newer than the one the worker record
   * last saw.
   */
  async #runtimeStatus(guard: PartitionGuard, uid: string, record: WorkerRecord | undefined, ctl: SyncControl, pod: BoundPod): Promise<RuntimeView> {
    const h = this.#handoff.get(uid);
    this.#handoff.delete(uid);
    let view: RuntimeView;
    if (h !== undefined && h.epoch === guard.epoch) {
      view = { status: h.status, continues: h.parent, newEpisode: undefined, episodeAt: undefined };
    } else {
      const cached = await this.#o.runtimeCache.getNewerThan(uid, record?.lastSyncTime ?? 0, ctl.signal);
      const ep = cached.episode;
      const isNew = ep !== undefined && (record?.episodeAt === undefined || ep.at > record.episodeAt);
      view = { status: cached.status, continues: undefined, newEpisode: isNew ? extractContext(ep.trace) : undefined, episodeAt: ep?.at };
    }
    const status = view.status;
    if (status.name === '' && status.containers.length === 0 && status.sandboxes.length === 0) {
      return { ...view, status: emptyRuntimeStatus(uid, pod.metadata.name, pod.metadata.namespace) };
    }
    return view;
  }

  // ---------------------------------------------------------------------------------------------
  // sync state: SyncPod
  // ---------------------------------------------------------------------------------------------

  async #runSyncPod(ctx: SyncCtx, record: WorkerRecord): Promise<SyncReturn> {
    const o = this.#o;
    const start = o.clock.now();
    const { updateType } = ctx.decision;
    let rec: WorkerRecord = record;
    if (rec.startedAt === undefined) {
      rec = { ...rec, startedAt: new Date(start).toISOString() };
      if (updateType === 'create') {
        const seen = firstSeen(ctx.pod, ctx.desired?.value);
        if (seen !== undefined) o.metrics.observeWorkerStart(Math.max(0, start - seen) / 1000);
      }
    }
    const { parent, links } = this.#parentOf(ctx);
    let spanCtx: Context = ROOT_CONTEXT;
    const outcome = await withSpan(o.tracer, 'syncPod', { parent, links, attributes: podAttributes(ctx.pod, updateType) }, async (span) => {
      spanCtx = context.active();
      const r = await this.#syncPod(ctx, rec, (next) => {
        rec = next;
      });
      if (r.error !== undefined) failSpan(span, r.error);
      return r;
    });
    o.metrics.observeWorkerDuration(updateType, (o.clock.now() - start) / 1000);
    if (outcome.terminal) {
      rec = toTerminating(rec, ctx.pod, ctx.kill?.value, o.clock.now());
      delete rec.nextSyncTrace;
      await this.#persist(ctx, rec);
      this.#handOver(ctx, outcome.runtimeStatus, spanCtx);
      return { again: true };
    }
    let delay = requeueDelay(outcome.error === undefined ? {} : { error: outcome.error }, this.#random);
    if (outcome.error === undefined && outcome.backoffUntil !== undefined) {
      // A container or image in backoff: sync again when the backoff expires, not at the 60–90 s
      // resync (kubernetes PR 133066), never later than the resync.
      delay = Math.min(delay, Math.max(0, outcome.backoffUntil - o.clock.now()));
    }
    // A retry (an error, a backoff) continues this sync's trace; the periodic resync starts none.
    const unfinished = outcome.error !== undefined || outcome.backoffUntil !== undefined;
    rec = requeued(rec, o.clock.now() + Math.round(delay), unfinished ? spanCtx : undefined);
    if (outcome.error !== undefined) o.logger.warn('syncPod failed, requeued', { uid: ctx.uid, err: outcome.error, retryInMs: Math.round(delay) });
    await this.#persist(ctx, rec);
    return {};
  }

  /** Kubelet.SyncPod. `setRecord` publishes record changes (reasons cache, running observed) as they happen. */
  async #syncPod(ctx: SyncCtx, record: WorkerRecord, setRecord: (r: WorkerRecord) => void): Promise<StateSyncOutcome> {
    const o = this.#o;
    const { pod, ctl, guard } = ctx;
    let rec = record;
    const status = await this.#step('generateAPIPodStatus', ctx, () => this.#generate(pod, ctx.runtimeStatus, rec, ctx.oldStatus, false));
    if (isTerminalPhase(status.phase)) {
      await this.#sendStatus(ctx, status, true);
      return { terminal: true, runtimeStatus: ctx.runtimeStatus };
    }
    rec = this.#observeRunning(ctx, rec, status);
    setRecord(rec);
    await this.#sendStatus(ctx, status, true);

    const runnable = await this.#step('canRunPod', ctx, () => canRunPod(pod, o.allowPrivileged));
    if (!runnable.admit) {
      await this.#sendStatus(ctx, blockedStatus(status, runnable.reason, runnable.message), true);
      await this.#event(ctx.guard, pod, 'Warning', runnable.reason, runnable.message);
      try {
        await this.#killPod(ctx, undefined);
      } catch (e) {
        if (isAbort(e)) throw e;
        const msg = `error killing pod: ${errorMessage(e)}`;
        await this.#event(guard, pod, 'Warning', 'FailedKillPod', msg);
        return { terminal: false, error: msg };
      }
      return { terminal: false, error: `pod cannot be run: ${runnable.message}` };
    }
    checkpoint(ctl);

    if (isStaticPod(pod)) {
      // Mirror pods are status-manager's (cluster mode); the step is kept for the trace's shape.
      await this.#step('mirrorPod', ctx, () => undefined);
    }

    let volumes: MountedVolumes;
    let podDir: string;
    try {
      ({ volumes, podDir } = await this.#step('makePodDataDirs+waitForAttachAndMount', ctx, async () => {
        guard.assertHeld();
        return abortable(
          o.volumes.mount({ type: 'kubelet.volume.MountRequest.v1', pod, fence: guard.fence() }, o.volumeTimeoutMs),
          ctl.signal,
        );
      }));
    } catch (e) {
      if (isAbort(e) || hasErrorCode(e, 'LeaseLost')) throw e;
      const msg = `Unable to attach or mount volumes: ${errorMessage(e)}`;
      await this.#event(guard, pod, 'Warning', 'FailedMount', msg);
      return { terminal: false, error: msg };
    }
    checkpoint(ctl);

    const pullSecrets = await this.#step('getPullSecretsForPod', ctx, () => (pod.spec.imagePullSecrets ?? []).map((s) => s.name).filter((n) => n !== ''));

    let reply;
    try {
      reply = await this.#step('runtime.SyncPod', ctx, async () => {
        guard.assertHeld();
        checkpoint(ctl);
        // Like the kubelet (runtime SyncPod gets a context without cancel), a kill does not abandon
        // a runtime sync half way: only a stop (lease lost) stops waiting for it.
        return abortable(
          o.runtime.syncPod(
            {
              type: 'kubelet.runtime.SyncPodRequest.v1',
              pod,
              podStatus: ctx.runtimeStatus,
              ...probesForRuntime(this.#probes.get(ctx.uid)),
              volumes,
              pullSecrets,
              podDir,
              fence: guard.fence(),
            },
            o.runtimeSyncTimeoutMs,
          ),
          ctl.stopSignal,
        );
      });
    } catch (e) {
      if (isAbort(e) || hasErrorCode(e, 'LeaseLost')) throw e;
      return { terminal: false, error: `runtime SyncPod failed: ${errorMessage(e)}` };
    }
    rec = { ...rec, reasons: updateReasons(rec.reasons, reply.results) };
    if (rec.startedObserved !== true) rec = mergePullWindow(rec, reply);
    setRecord(rec);
    const after = this.#generate(pod, reply.podStatus, rec, status, false);
    rec = this.#observeRunning(ctx, rec, after);
    setRecord(rec);
    await this.#sendStatus(ctx, after, true);
    if (isTerminalPhase(after.phase)) return { terminal: true, runtimeStatus: reply.podStatus };
    const err = runtimeSyncError(reply.results);
    const backoffUntil = earliestBackoffExpiry(reply.results);
    return {
      terminal: false,
      runtimeStatus: reply.podStatus,
      ...(err !== undefined ? { error: err } : {}),
      ...(backoffUntil !== undefined ? { backoffUntil } : {}),
    };
  }

  // ---------------------------------------------------------------------------------------------
  // terminating: SyncTerminatingPod
  // ---------------------------------------------------------------------------------------------

  async #runSyncTerminatingPod(ctx: SyncCtx, record: WorkerRecord): Promise<SyncReturn> {
    const o = this.#o;
    const start = o.clock.now();
    const { parent, links } = this.#parentOf(ctx);
    let spanCtx: Context = ROOT_CONTEXT;
    const outcome = await withSpan(o.tracer, 'syncTerminatingPod', { parent, links, attributes: podAttributes(ctx.pod) }, async (span) => {
      spanCtx = context.active();
      span.setAttribute('k8s.pod.termination_grace_period_seconds', record.gracePeriod ?? 0);
      const r = await this.#syncTerminatingPod(ctx, record);
      if (r.error !== undefined) failSpan(span, r.error);
      return r;
    });
    o.metrics.observeWorkerDuration('kill', (o.clock.now() - start) / 1000);
    if (outcome.error !== undefined) {
      const delay = requeueDelay({ error: outcome.error }, this.#random);
      o.logger.warn('syncTerminatingPod failed, requeued', { uid: ctx.uid, err: outcome.error, retryInMs: Math.round(delay) });
      await this.#persist(ctx, requeued(record, o.clock.now() + Math.round(delay), spanCtx));
      return {};
    }
    await this.#persist(ctx, withoutRequeue(toTerminated(record, o.clock.now())));
    this.#handOver(ctx, outcome.runtimeStatus, spanCtx);
    return { again: true };
  }

  async #syncTerminatingPod(ctx: SyncCtx, rec: WorkerRecord): Promise<StateSyncOutcome> {
    const { pod, guard } = ctx;
    const status = this.#generate(pod, ctx.runtimeStatus, rec, ctx.oldStatus, false);
    await this.#sendStatus(ctx, status, true);
    let stopped: RuntimePodStatus;
    try {
      const killed = (await this.#killPod(ctx, rec.gracePeriod)).podStatus;
      // The torn-down sandbox reports no IPs; the completed pod keeps the ones it had (GenericPLEG.getPodIPs).
      stopped = { ...killed, ips: podIPsAfterTeardown(ctx.runtimeStatus, killed) };
    } catch (e) {
      if (isAbort(e) || hasErrorCode(e, 'LeaseLost')) throw e;
      const msg = `error killing pod: ${errorMessage(e)}`;
      await this.#event(guard, pod, 'Warning', 'FailedKillPod', msg);
      return { terminal: false, error: msg };
    }
    const running = stopped.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => `${this.#o.runtimeName}://${c.id}`);
    if (running.length > 0) {
      return { terminal: false, error: `detected running containers after a successful KillPod, CRI violation: [${running.join(' ')}]` };
    }
    const final = this.#generate(pod, stopped, rec, status, true);
    await this.#sendStatus(ctx, final, true);
    return { terminal: true, runtimeStatus: stopped };
  }

  async #killPod(ctx: SyncCtx, gracePeriod: number | undefined): Promise<{ podStatus: RuntimePodStatus }> {
    const o = this.#o;
    const { pod, guard, ctl } = ctx;
    guard.assertHeld();
    const graceMs = (gracePeriod ?? pod.spec.terminationGracePeriodSeconds ?? 30) * 1000;
    return this.#step('killPod', ctx, () =>
      abortable(
        o.runtime.killPod(
          {
            type: 'kubelet.runtime.KillPodRequest.v1',
            pod,
            runningPod: { uid: ctx.uid, name: pod.metadata.name, namespace: pod.metadata.namespace },
            ...(gracePeriod !== undefined ? { gracePeriodOverride: gracePeriod } : {}),
            fence: guard.fence(),
          },
          graceMs + 30_000,
        ),
        ctl.stopSignal,
      ),
    );
  }

  // ---------------------------------------------------------------------------------------------
  // terminated: SyncTerminatedPod
  // ---------------------------------------------------------------------------------------------

  async #runSyncTerminatedPod(ctx: SyncCtx, record: WorkerRecord): Promise<SyncReturn> {
    const o = this.#o;
    const start = o.clock.now();
    const { parent, links } = this.#parentOf(ctx);
    let spanCtx: Context = ROOT_CONTEXT;
    const error = await withSpan(o.tracer, 'syncTerminatedPod', { parent, links, attributes: podAttributes(ctx.pod) }, async (span) => {
      spanCtx = context.active();
      const e = await this.#syncTerminatedPod(ctx, record);
      if (e !== undefined) failSpan(span, e);
      return e;
    });
    o.metrics.observeWorkerDuration('terminated', (o.clock.now() - start) / 1000);
    if (error !== undefined) {
      const delay = requeueDelay({ error }, this.#random);
      o.logger.warn('syncTerminatedPod failed, requeued', { uid: ctx.uid, err: error, retryInMs: Math.round(delay) });
      await this.#persist(ctx, requeued(record, o.clock.now() + Math.round(delay), spanCtx));
      return {};
    }
    const finished: WorkerRecord = withoutRequeue({ ...record, finished: true });
    if (ctx.desired === null) {
      await this.#forget(ctx.guard, ctx.uid, finished, ctx.kill, ctx.pod);
      return {};
    }
    await this.#persist(ctx, finished);
    return {};
  }

  async #syncTerminatedPod(ctx: SyncCtx, rec: WorkerRecord): Promise<string | undefined> {
    const o = this.#o;
    const { pod, guard, ctl } = ctx;
    const status = this.#generate(pod, ctx.runtimeStatus, rec, ctx.oldStatus, true);
    await this.#sendStatus(ctx, status, false);
    try {
      await this.#step('waitForUnmount', ctx, async () => {
        guard.assertHeld();
        return abortable(
          o.volumes.unmount(
            { type: 'kubelet.volume.UnmountRequest.v1', uid: ctx.uid, removeContent: rec.deleted === true || rec.evicted === true, fence: guard.fence() },
            o.volumeTimeoutMs,
          ),
          ctl.stopSignal,
        );
      });
    } catch (e) {
      if (isAbort(e) || hasErrorCode(e, 'LeaseLost')) throw e;
      return `error unmounting volumes: ${errorMessage(e)}`;
    }
    await this.#send(guard, {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind: 'terminated',
      uid: ctx.uid,
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      pod,
      status,
      couldHaveRunningContainers: false,
      at: new Date(o.clock.now()).toISOString(),
      trace: injectContext(),
    });
    return undefined;
  }

  // ---------------------------------------------------------------------------------------------
  // orphans and forgetting
  // ---------------------------------------------------------------------------------------------

  /** SyncTerminatingRuntimePod: an orphaned runtime pod is killed with a 1 s grace; no status. */
  async #syncTerminatingRuntimePod(
    guard: PartitionGuard,
    ctl: SyncControl,
    uid: string,
    record: WorkerRecord | undefined,
    kill: Versioned<KillRequest>,
  ): Promise<SyncReturn> {
    const o = this.#o;
    const running = kill.value.runningPod!;
    const start = o.clock.now();
    const parent = kill.value.trace !== undefined ? extractContext(kill.value.trace) : (ctl.trigger ?? ROOT_CONTEXT);
    let spanCtx: Context = ROOT_CONTEXT;
    const error = await withSpan(
      o.tracer,
      'syncTerminatingRuntimePod',
      { parent, attributes: { 'k8s.pod.uid': uid, 'k8s.pod.name': running.name, 'k8s.namespace.name': running.namespace } },
      async (span) => {
        spanCtx = context.active();
        try {
          guard.assertHeld();
          await abortable(
            o.runtime.killPod({ type: 'kubelet.runtime.KillPodRequest.v1', runningPod: running, gracePeriodOverride: 1, fence: guard.fence() }, 31_000),
            ctl.stopSignal,
          );
          return undefined;
        } catch (e) {
          if (isAbort(e) || hasErrorCode(e, 'LeaseLost')) throw e;
          const msg = `error killing pod: ${errorMessage(e)}`;
          failSpan(span, msg);
          return msg;
        }
      },
    );
    o.metrics.observeWorkerDuration('kill', (o.clock.now() - start) / 1000);
    if (error !== undefined) {
      const delay = requeueDelay({ error }, this.#random);
      o.logger.warn('killing orphaned runtime pod failed, requeued', { uid, err: error, retryInMs: Math.round(delay) });
      const rec: WorkerRecord = requeued(
        {
          ...(record ?? { type: 'kubelet.podworker.WorkerRecord.v1', uid, name: running.name, namespace: running.namespace, state: 'terminating', finished: false, reasons: {} }),
          state: 'terminating',
          gracePeriod: 1,
          epoch: guard.epoch,
        },
        o.clock.now() + Math.round(delay),
        spanCtx,
      );
      guard.assertHeld();
      await o.store.putWorker(guard.partition, { ...rec, lastSyncTime: o.clock.now(), syncedAt: new Date(o.clock.now()).toISOString() });
      return {};
    }
    guard.assertHeld();
    await this.#deleteKill(guard, uid, kill);
    if (record !== undefined) await o.store.deleteWorker(guard.partition, uid);
    return {};
  }

  /** The pod is finished and no longer desired: status-manager forgets it, then the kill and the record go. */
  async #forget(guard: PartitionGuard, uid: string, record: WorkerRecord | undefined, kill: Versioned<KillRequest> | null, pod: BoundPod | undefined): Promise<void> {
    const o = this.#o;
    this.#handoff.delete(uid);
    await this.#send(guard, {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind: 'removed',
      uid,
      name: pod?.metadata.name ?? record?.name ?? '',
      namespace: pod?.metadata.namespace ?? record?.namespace ?? '',
      ...(pod !== undefined ? { pod } : {}),
      couldHaveRunningContainers: false,
      at: new Date(o.clock.now()).toISOString(),
    });
    if (kill !== null) await this.#deleteKill(guard, uid, kill);
    guard.assertHeld();
    await o.store.deleteWorker(guard.partition, uid);
    o.logger.debug('pod worker forgotten', { uid });
  }

  async #deleteKill(guard: PartitionGuard, uid: string, kill: Versioned<KillRequest>): Promise<void> {
    const o = this.#o;
    guard.assertHeld();
    try {
      await o.store.deleteKill(guard.partition, uid, kill.revision);
    } catch (e) {
      if (!hasErrorCode(e, 'Conflict')) throw e;
      // sync-loop shortened the grace meanwhile (CAS): the kill is carried out all the same.
      const again = await o.store.getKill(guard.partition, uid);
      if (again !== null) {
        guard.assertHeld();
        await o.store.deleteKill(guard.partition, uid, again.revision);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // helpers
  // ---------------------------------------------------------------------------------------------

  #generate(pod: BoundPod, runtimeStatus: RuntimePodStatus, rec: WorkerRecord, oldStatus: PodStatus | undefined, podIsTerminal: boolean): PodStatus {
    return generateAPIPodStatus({
      pod,
      runtimeStatus,
      runtimeName: this.#o.runtimeName,
      reasons: rec.reasons,
      ...(oldStatus !== undefined ? { oldStatus } : {}),
      podIsTerminal,
      probes: this.#probes.get(pod.metadata.uid) ?? {},
      now: this.#o.clock.now(),
      ...(this.#o.hostIPs !== undefined ? { hostIPs: this.#o.hostIPs } : {}),
    });
  }

  /**
   * Observes, once per pod, its first Running (pod_start_duration_seconds, from config.seen, image
   * pulls included) and the first status with every regular container running
   * (pod_start_total_duration_seconds from the creation timestamp, else config.seen, and
   * pod_start_sli_duration_seconds: the same less the record's image-pull window), then forgets
   * the window. Models pod_startup_latency_tracker.go.
   */
  #observeRunning(ctx: SyncCtx, rec: WorkerRecord, status: PodStatus): WorkerRecord {
    const { metrics, clock } = this.#o;
    let out = rec;
    if (out.runningObserved !== true && status.phase === 'Running') {
      const seen = firstSeen(ctx.pod, ctx.desired?.value);
      if (seen !== undefined) metrics.observePodStart(Math.max(0, clock.now() - seen) / 1000);
      out = { ...out, runningObserved: true };
    }
    if (out.startedObserved !== true && allContainersStarted(ctx.pod, status)) {
      const created = parseTime(ctx.pod.metadata.creationTimestamp) ?? firstSeen(ctx.pod, ctx.desired?.value);
      if (created !== undefined) {
        const d = podStartDurations(created, clock.now(), out);
        metrics.observePodStartSli?.(d.sliSeconds, d.totalSeconds);
      }
      out = { ...out, startedObserved: true };
      delete out.imagePullStartedAt;
      delete out.imagePullFinishedAt;
    }
    return out;
  }

  async #sendStatus(ctx: SyncCtx, status: PodStatus, couldHaveRunningContainers: boolean): Promise<void> {
    await this.#send(ctx.guard, {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind: 'set',
      uid: ctx.uid,
      name: ctx.pod.metadata.name,
      namespace: ctx.pod.metadata.namespace,
      pod: ctx.pod,
      status,
      couldHaveRunningContainers,
      at: new Date(this.#o.clock.now()).toISOString(),
      trace: injectContext(),
    });
  }

  async #send(guard: PartitionGuard, update: PodStatusUpdate): Promise<void> {
    guard.assertHeld();
    await this.#o.status.send(update);
  }

  async #event(guard: PartitionGuard, pod: BoundPod, eventType: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const ev: KubeEvent = {
      type: 'kubelet.events.Event.v1',
      eventType,
      reason,
      message,
      involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
      source: { component: 'kubelet', host: this.#o.node },
      timestamp: new Date(this.#o.clock.now()).toISOString(),
    };
    guard.assertHeld();
    try {
      await this.#o.events.record(ev);
    } catch (e) {
      this.#o.logger.warn('recording event failed', { uid: pod.metadata.uid, reason, err: errorMessage(e) });
    }
  }

  async #persist(ctx: SyncCtx, rec: WorkerRecord): Promise<void> {
    const now = this.#o.clock.now();
    const out: WorkerRecord = {
      ...rec,
      lastSyncTime: now,
      syncedAt: new Date(now).toISOString(),
      epoch: ctx.guard.epoch,
    };
    if (ctx.episodeAt !== undefined) out.episodeAt = ctx.episodeAt;
    const rev = ctx.desired?.revision ?? rec.syncedRevision;
    if (rev !== undefined) out.syncedRevision = rev;
    ctx.guard.assertHeld();
    await this.#o.store.putWorker(ctx.guard.partition, out);
  }

  #handOver(ctx: SyncCtx, status: RuntimePodStatus | undefined, parent: Context): void {
    // A reply after a teardown has no IPs: keep the ones the sync started with, as the pleg cache
    // would (GenericPLEG.getPodIPs), so a completed pod still shows its IP.
    if (status !== undefined) this.#handoff.set(ctx.uid, { status: { ...status, ips: podIPsAfterTeardown(ctx.runtimeStatus, status) }, epoch: ctx.guard.epoch, parent });
  }

  /**
   * The span parent, by what the sync carries out: a new create/update → the desired record's
   * trace; termination starting on a kill → the kill's trace; the next step of a state transition
   * → the previous sync's span; a runtime episode new to this worker (a container died after its
   * start) → the episode's `ContainerDied` span, unless the poke already is in that trace; else the
   * poke. The poke is linked whenever it is not the parent.
   */
  #parentOf(ctx: SyncCtx): { parent: Context; links: Link[] } {
    const { decision, desired, kill, ctl } = ctx;
    let parent: Context | undefined;
    if (decision.newDesired && (decision.updateType === 'create' || decision.updateType === 'update') && desired?.value.trace !== undefined) {
      parent = extractContext(desired.value.trace);
    } else if (decision.enteredTerminating && kill?.value.trace !== undefined) {
      parent = extractContext(kill.value.trace);
    } else if (ctx.continues !== undefined) {
      parent = ctx.continues;
    } else if (ctx.newEpisode !== undefined && !sameTrace(ctx.newEpisode, ctl.trigger)) {
      parent = ctx.newEpisode;
    }
    const links: Link[] = [];
    if (parent === undefined) parent = ctl.trigger ?? ROOT_CONTEXT;
    else if (ctl.trigger !== undefined) {
      const sc = trace.getSpanContext(ctl.trigger);
      if (sc !== undefined && trace.isSpanContextValid(sc)) links.push({ context: sc });
    }
    return { parent, links };
  }

  /** One SyncPod step as a child span of the active sync span. */
  #step<T>(name: string, ctx: SyncCtx, fn: () => Promise<T> | T): Promise<T> {
    return withSpan(this.#o.tracer, name, { attributes: { 'k8s.pod.uid': ctx.uid } }, () => fn());
  }
}

/** True when both contexts name valid spans of the same trace. */
function sameTrace(a: Context, b: Context | undefined): boolean {
  const x = trace.getSpanContext(a);
  const y = b === undefined ? undefined : trace.getSpanContext(b);
  return x !== undefined && y !== undefined && trace.isSpanContextValid(x) && trace.isSpanContextValid(y) && x.traceId === y.traceId;
}

/**
 * `rec` due again at `at`; the due sync continues the span of `retryOf` (the sync of an unfinished
 * episode) when it is sampled, else sync-loop pokes it unsampled.
 */
function requeued(rec: WorkerRecord, at: number, retryOf: Context | undefined): WorkerRecord {
  const out: WorkerRecord = { ...rec, nextSyncAt: at };
  const carrier: TraceCarrier | undefined = retryOf === undefined ? undefined : sampledCarrier(retryOf);
  if (carrier !== undefined) out.nextSyncTrace = carrier;
  else delete out.nextSyncTrace;
  return out;
}

/** `rec` with no requeue pending. */
function withoutRequeue(rec: WorkerRecord): WorkerRecord {
  const out = { ...rec };
  delete out.nextSyncAt;
  delete out.nextSyncTrace;
  return out;
}

/** The carrier of a context's span when it is sampled (an unsampled one would only say "do not trace"). */
function sampledCarrier(ctx: Context): TraceCarrier | undefined {
  const sc = trace.getSpanContext(ctx);
  if (sc === undefined || !trace.isSpanContextValid(sc) || (sc.traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return injectContext(ctx);
}

/** config.seen (or, failing that, when the update entered sync-loop), ms since the epoch. */
function firstSeen(pod: BoundPod, desired: DesiredPod | undefined): number | undefined {
  return parseTime(pod.metadata.annotations?.[ConfigAnnotations.seen]) ?? parseTime(desired?.startTime);
}

/** Every regular container of the spec has a running state in `status` (hasPodStartedSLO). */
function allContainersStarted(pod: BoundPod, status: PodStatus): boolean {
  const running = new Set((status.containerStatuses ?? []).filter((c) => c.state?.running != null).map((c) => c.name));
  return pod.spec.containers.length > 0 && pod.spec.containers.every((c) => running.has(c.name));
}

function podAttributes(pod: BoundPod, updateType?: SyncPodType): Attributes {
  const a: Attributes = {
    'k8s.pod.uid': pod.metadata.uid,
    'k8s.pod': `${pod.metadata.namespace}/${pod.metadata.name}`,
    'k8s.pod.name': pod.metadata.name,
    'k8s.namespace.name': pod.metadata.namespace,
  };
  if (updateType !== undefined) a['k8s.pod.update_type'] = updateType;
  return a;
}

/**
 * The status of a pod canRunPod refused (1.21 soft admission): the reason and message, and
 * `Blocked` as the reason of every waiting container.
 */
export function blockedStatus(status: PodStatus, reason: string, message: string): PodStatus {
  const block = (list: ContainerStatus[] | undefined): ContainerStatus[] | undefined =>
    list?.map((cs) => (cs.state?.waiting !== undefined ? { ...cs, state: { ...cs.state, waiting: { ...cs.state.waiting, reason: 'Blocked' } } } : cs));
  const out: PodStatus = { ...status, reason, message };
  const init = block(status.initContainerStatuses);
  const regular = block(status.containerStatuses);
  if (init !== undefined) out.initContainerStatuses = init;
  if (regular !== undefined) out.containerStatuses = regular;
  return out;
}

function failSpan(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

function checkpoint(ctl: SyncControl): void {
  ctl.signal.throwIfAborted();
}

function isAbort(e: unknown): boolean {
  return hasErrorCode(e, 'SyncAborted');
}

/** Resolves or rejects like `p`, or rejects with the signal's reason as soon as `signal` aborts. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      p.catch(() => undefined);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
