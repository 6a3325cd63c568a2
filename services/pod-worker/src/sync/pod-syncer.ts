/**
 * One sync of one pod: read KV, decide, run SyncPod / SyncTerminatingPod / SyncTerminatedPod as a
 * transaction script with one span per step, write the worker record. This file reads and
 * dispatches; each sync lives in its own file (sync-pod.ts, sync-terminating-pod.ts,
 * sync-terminated-pod.ts, sync-terminating-runtime-pod.ts) over the shared steps of
 * sync-effects.ts; trace parenting is sync-span-parent.ts, requeues worker-requeue.ts, start
 * latency pod-startup-latency.ts.
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
 * - A settled pod (settled-sync.ts: nothing its last full SyncPod in this lease epoch read has
 *   changed) skips the volume mount and the runtime SyncPod, and sends its status only when
 *   status-manager does not already hold it. The worker record is read from KV once per epoch,
 *   then from what this instance wrote (it is the record's only writer while it holds the lease).
 */
import type { BoundPod, WorkerRecord } from '@splitlet/api';
import { extractContext } from '@splitlet/telemetry';
import type { PartitionGuard } from '../partitions/partition-guard.js';
import type { NamedRevisions } from '../ports.js';
import type { SyncControl, SyncFunction, SyncReturn } from '../pod-workers/pod-workers.js';
import { emptyRuntimeStatus } from '../runtime-cache/runtime-status-cache.js';
import { abortable } from './abortable.js';
import { hasProbes } from './probe-results.js';
import type { PodSyncerOptions, SyncCtx } from './sync-context.js';
import { SyncEffects } from './sync-effects.js';
import { settledDecision } from './settled-sync.js';
import { runSyncPod } from './sync-pod.js';
import { runSyncTerminatedPod } from './sync-terminated-pod.js';
import { runSyncTerminatingPod } from './sync-terminating-pod.js';
import { runSyncTerminatingRuntimePod } from './sync-terminating-runtime-pod.js';
import { classify, nextWorkerState } from './worker-decisions.js';

/** The tracer scope the kubelet uses for its pod sync spans. */
export const KUBELET_TRACER = 'k8s.io/kubernetes/pkg/kubelet';

/** The runtime status a sync is based on, and what it says about the sync's trace. */
interface RuntimeView {
  readonly status: SyncCtx['runtimeStatus'];
  readonly statusAt: SyncCtx['runtimeStatusAt'];
  readonly continues: SyncCtx['continues'];
  readonly newEpisode: SyncCtx['newEpisode'];
  readonly episodeAt: SyncCtx['episodeAt'];
}

/** The pod syncer: stateless across pods except a hand-over of fresh runtime statuses between consecutive syncs of a pod. */
export class PodSyncer {
  readonly #fx: SyncEffects;

  constructor(options: PodSyncerOptions) {
    this.#fx = new SyncEffects(options);
  }

  /** The {@link SyncFunction} for one partition's pod workers. */
  forPartition(guard: PartitionGuard): SyncFunction {
    return (uid, ctl) => this.sync(guard, uid, ctl);
  }

  /** sync-loop poked the pod, naming the revisions of its records (`WorkPoke.desiredRevision`, `killRevision`); before the pod workers get the poke. */
  poked(guard: PartitionGuard, uid: string, named: NamedRevisions): void {
    const memory = this.#fx.memory(guard);
    memory.desired.poked(uid, named.desired);
    memory.kill.poked(uid, named.kill);
  }

  /**
   * Syncs `uid` once. Handled failures (a failed mount, a runtime error, a failed kill) are
   * reported (events, status), requeued through the worker record and resolve normally; a throw
   * is unexpected (KV unavailable, lease lost, aborted).
   */
  async sync(guard: PartitionGuard, uid: string, ctl: SyncControl): Promise<SyncReturn> {
    const fx = this.#fx;
    const o = fx.o;
    const memory = fx.memory(guard);
    const [kill, desired, worker, apiRecord] = await abortable(
      Promise.all([fx.getKill(guard, uid), fx.getDesired(guard, uid), fx.getWorker(guard, uid), o.store.getApiStatus(uid)]),
      ctl.signal,
    );
    const record = worker?.value;
    const c = classify(record, desired, kill);
    if (c.action !== 'run') memory.forget(uid);
    switch (c.action) {
      case 'none':
        fx.handoff.delete(uid);
        o.logger.debug('nothing to sync', { uid, why: c.why });
        return {};
      case 'remove':
        ctl.markTerminating();
        await fx.forget(guard, uid, record, c.kill, c.kill.value.pod ?? undefined);
        return {};
      case 'terminateRuntimePod':
        ctl.markTerminating();
        return runSyncTerminatingRuntimePod(fx, guard, ctl, uid, record, c.kill);
      case 'run':
        break;
    }
    const pod = c.pod;
    // The prober's results, read only for pods with probes (no extra KV read for the others).
    const probes = hasProbes(pod) ? await abortable(o.probes?.get(uid) ?? Promise.resolve(undefined), ctl.signal) : undefined;
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
    if (decision.record.state !== 'sync') {
      ctl.markTerminating();
      memory.forget(uid);
    }
    const settled = settledDecision({
      memory,
      uid,
      pod,
      desiredRevision: desired?.revision,
      killed: kill !== null,
      worker,
      decision,
      runtimeStatus,
      probes,
    });
    if (!settled.settled && memory.settled.has(uid)) {
      // A full sync from here: what the pod settled on before is no longer known until it succeeds.
      memory.settled.delete(uid);
      o.logger.debug('sync not settled', { uid, why: settled.why });
    }
    const ctx: SyncCtx = {
      guard,
      ctl,
      uid,
      pod,
      desired,
      kill,
      oldStatus: apiRecord?.status,
      apiRecord: apiRecord ?? undefined,
      runtimeStatus,
      runtimeStatusAt: view.statusAt,
      settled: settled.settled,
      decision,
      continues: view.continues,
      newEpisode: view.newEpisode,
      episodeAt: view.episodeAt,
      probes,
      runtimeCalls: { at: undefined },
    };
    switch (decision.record.state) {
      case 'sync':
        return runSyncPod(fx, ctx, decision.record);
      case 'terminating':
        return runSyncTerminatingPod(fx, ctx, decision.record);
      case 'terminated':
        return runSyncTerminatedPod(fx, ctx, decision.record);
    }
  }

  /**
   * The runtime status to sync against: the one the previous sync handed over, else the cache's
   * (GetNewerThan the last sync), with its episode — new when newer than the one the worker record
   * last saw.
   */
  async #runtimeStatus(guard: PartitionGuard, uid: string, record: WorkerRecord | undefined, ctl: SyncControl, pod: BoundPod): Promise<RuntimeView> {
    const fx = this.#fx;
    const h = fx.handoff.get(uid);
    fx.handoff.delete(uid);
    let view: RuntimeView;
    if (h !== undefined && h.epoch === guard.epoch) {
      view = { status: h.status, statusAt: undefined, continues: h.parent, newEpisode: undefined, episodeAt: undefined };
    } else {
      // Newer than the last sync's runtime changes (the node's time cri-adapter replied with), else than the last sync.
      const cached = await fx.o.runtimeCache.getNewerThan(uid, record?.runtimeSyncedAt ?? record?.lastSyncTime ?? 0, ctl.signal);
      const ep = cached.episode;
      const isNew = ep !== undefined && (record?.episodeAt === undefined || ep.at > record.episodeAt);
      view = { status: cached.status, statusAt: cached.timestamp, continues: undefined, newEpisode: isNew ? extractContext(ep.trace) : undefined, episodeAt: ep?.at };
    }
    const status = view.status;
    if (status.name === '' && status.containers.length === 0 && status.sandboxes.length === 0) {
      return { ...view, status: emptyRuntimeStatus(uid, pod.metadata.name, pod.metadata.namespace) };
    }
    return view;
  }
}
