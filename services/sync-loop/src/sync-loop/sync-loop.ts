/**
 * The sync loop: turns config updates, PLEG events, the work queue tick and housekeeping into
 * desired pods, kill requests and pokes for the pod workers.
 *
 * Models pkg/kubelet/kubelet.go (syncLoopIteration, HandlePodAdditions, HandlePodUpdates,
 * HandlePodRemoves, HandlePodReconcile, HandlePodSyncs, rejectPod, deletePod) and
 * pkg/kubelet/kubelet_pods.go (HandlePodCleanups).
 *
 * Each handled pod follows the same shape — decide in memory, write KV, then poke, then commit to
 * the pod manager — so a failed write leaves the pod manager as if the update never came, and the
 * redelivered update is decided again:
 *
 *     ADD      ─ admission ─┬─ admitted: put DesiredPod{create} ─▶ poke create
 *                           └─ rejected: put DesiredPod{rejected} ─▶ status Failed ─▶ Warning event
 *     UPDATE / DELETE ──────── put DesiredPod{update} ─▶ poke update
 *     REMOVE ─ delete desired ─ (all sources seen?) ─ create KillRequest (grace only shrinks) ─▶ poke kill
 *     RECONCILE ────────────── put desired (no poke)
 *     PLEG event (not ContainerRemoved) of a desired pod ─▶ poke sync
 *     tick: WorkerRecord.nextSyncAt due ─▶ poke sync (once per value)
 *     housekeeping (all sources seen): kill undesired workers and orphaned runtime pods,
 *       restart unknown desired pods, volume cleanup, gauges
 *     container GC (its own period, see container-gc.ts) reads podStateForGC
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { BoundPod, DesiredPod, KillRequest, KubeEvent, PodLifecycleEvent, PodStatus, PodUpdate, PodUpdateItem, RunningPodRef, TraceCarrier } from '@splitlet/api';
import { KubeletError, errorMessage } from '@splitlet/api';
import { ConfigAnnotations, canAdmitPod, formatGoDuration, isMirrorPod, isStaticPod, parseTime, rejectedPodStatus, type AdmissionNode } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import { extractContext, injectContext, unsampledContext, type Logger } from '@splitlet/telemetry';
import type { ClusterViews, DesiredStore, EventRecorder, KillStore, SourcesStore, StatusSink, VolumeCleaner, WorkPoker } from '../ports.js';
import { admissionRejectionLabel, isActivePod, isTerminalPhase } from './admission.js';
import { podContentToKeep, type PodStateForGC } from './container-gc.js';
import { planHousekeeping } from './housekeeping.js';
import { shortenedKill } from './kill-grace.js';
import type { SyncLoopMetrics } from './metrics.js';
import { Mutex } from './mutex.js';
import { PodManager } from './pod-manager.js';
import { SourcesReady } from './sources-ready.js';
import { untraced } from './untraced.js';

/** `housekeepingWarningDuration`: a slower housekeeping pass is logged as an error. */
const HOUSEKEEPING_WARNING_MS = 1000;
/** How often a repeated volume-cleanup failure is logged again. */
const VOLUME_ERROR_LOG_EVERY_MS = 60_000;

/** Dependencies of {@link SyncLoop}. */
export interface SyncLoopOptions {
  readonly node: string;
  /** The node as admission sees it now (its capacity is published by the node-local side). */
  readonly admissionNode: () => AdmissionNode;
  readonly desired: DesiredStore;
  readonly kills: KillStore;
  readonly work: WorkPoker;
  readonly status: StatusSink;
  readonly events: EventRecorder;
  readonly volumes: VolumeCleaner;
  readonly sources: SourcesStore;
  readonly views: ClusterViews;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics: SyncLoopMetrics;
  /** See `HousekeepingInput.restartAfterMs`. @default 10000 */
  readonly restartAfterMs?: number;
}

/** A write failed; the update is retried (nak with backoff). */
function writeFailed(what: string, e: unknown): KubeletError {
  return new KubeletError('SyncLoopWriteFailed', `${what}: ${errorMessage(e)}`, { retryable: true, cause: e });
}

function podRef(pod: BoundPod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

function podAttributes(pod: BoundPod, updateType: string): Record<string, string> {
  return {
    'k8s.pod.uid': pod.metadata.uid,
    'k8s.pod': podRef(pod),
    'k8s.pod.name': pod.metadata.name,
    'k8s.namespace.name': pod.metadata.namespace,
    'k8s.pod.update_type': updateType,
  };
}

/** Creation time for HandlePodAdditions' sort: creationTimestamp, else config.seen. */
function creationTime(pod: BoundPod): number {
  return parseTime(pod.metadata.creationTimestamp) ?? parseTime(pod.metadata.annotations?.[ConfigAnnotations.seen]) ?? Number.NEGATIVE_INFINITY;
}

/** rejectPod's status; without a QoS class when the pod's resources cannot even be parsed. */
function rejectionStatus(pod: BoundPod, r: { reason: string; message: string }): PodStatus {
  try {
    return rejectedPodStatus(pod, r.reason, r.message);
  } catch {
    // getPodQos could not parse a quantity (the reason the pod was rejected): report it without QoS.
    return { phase: 'Failed', reason: r.reason, message: `Pod was rejected: ${r.message}` };
  }
}

/** Settles every promise, then rethrows the first failure. */
async function allOrFirstError(ps: readonly Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(ps);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** The sync loop of one node. Create it, `start()` it (rebuilds state from KV), then feed it. */
export class SyncLoop {
  // The loop's own state: read through desiredPod()/desiredPodCount, never changed from outside.
  private readonly podManager = new PodManager();
  readonly #o: SyncLoopOptions;
  #sourcesReady = new SourcesReady();
  /** Pods removed from config, remembered while their worker may still be terminating them. */
  readonly #removed = new Map<string, BoundPod>();
  /** The `nextSyncAt` already poked per pod (the work queue hands out each item once). */
  readonly #poked = new Map<string, number>();
  readonly #lock = new Mutex();
  #lastVolumeError: { message: string; at: number } | undefined;

  constructor(options: SyncLoopOptions) {
    this.#o = options;
  }

  /** Rebuilds the pod manager from `sl_desired` and the seen sources from `sl_node`. */
  async start(): Promise<void> {
    this.podManager.reset(await this.#o.desired.list());
    this.#sourcesReady = new SourcesReady(await this.#o.sources.load());
    this.#o.logger.info('sync loop state loaded', {
      desiredPods: this.podManager.size,
      sources: this.#sourcesReady.snapshot(),
      allSourcesReady: this.#sourcesReady.allReady(),
    });
  }

  /** The pod manager's desired pod `uid` (as admitted or rejected), if known. */
  desiredPod(uid: string): DesiredPod | undefined {
    return this.podManager.get(uid);
  }

  /** How many pods the pod manager knows. */
  get desiredPodCount(): number {
    return this.podManager.size;
  }

  /** The seen-sources state (sourcesReady). */
  get sourcesReady(): SourcesReady {
    return this.#sourcesReady;
  }

  /**
   * syncLoopIteration's configCh case: dispatches by operation, then marks the source seen.
   * Updates are handled one at a time (also against housekeeping).
   * @throws KubeletError `SyncLoopWriteFailed` (retryable) when a KV write or a publish failed.
   */
  handlePodUpdate(update: PodUpdate): Promise<void> {
    return this.#lock.run(async () => {
      switch (update.op) {
        case 'ADD':
          await this.#handlePodAdditions(update);
          break;
        case 'UPDATE':
        case 'DELETE':
          await this.#handlePodUpdates(update);
          break;
        case 'REMOVE':
          await this.#handlePodRemoves(update);
          break;
        case 'RECONCILE':
          await this.#handlePodReconcile(update);
          break;
      }
      if (this.#sourcesReady.observe(update.source, update.sources)) {
        try {
          await this.#o.sources.save(this.#sourcesReady.snapshot());
        } catch (e) {
          throw writeFailed('could not persist the seen sources', e);
        }
      }
    });
  }

  /** syncLoopIteration's plegCh case: a lifecycle event of a desired pod is a sync (HandlePodSyncs). */
  async handlePlegEvent(event: PodLifecycleEvent): Promise<void> {
    if (event.event === 'ContainerRemoved') return;
    const desired = this.podManager.get(event.uid);
    if (desired === undefined || desired.rejected !== undefined) return;
    try {
      await this.#o.work.poke(event.uid, 'sync');
    } catch (e) {
      throw writeFailed(`could not poke pod ${event.uid}`, e);
    }
  }

  /**
   * syncLoopIteration's syncCh case: pokes every worker whose `nextSyncAt` is due, once per value.
   * A poke continues the worker's `nextSyncTrace` (a retry of an unfinished episode); otherwise it
   * carries an unsampled context, so the periodic resync records no span here or downstream.
   * Never throws (a failed poke is retried on the next tick).
   */
  async tick(): Promise<number> {
    const now = this.#o.clock.now();
    const due: Array<{ uid: string; at: number; trace: TraceCarrier | undefined }> = [];
    const known = new Set<string>();
    for (const w of this.#o.views.workers.values()) {
      known.add(w.uid);
      if (w.nextSyncAt === undefined || w.nextSyncAt > now || w.finished) continue;
      if (this.#poked.get(w.uid) === w.nextSyncAt) continue;
      if (this.podManager.get(w.uid)?.rejected !== undefined) continue;
      due.push({ uid: w.uid, at: w.nextSyncAt, trace: w.nextSyncTrace });
    }
    for (const uid of this.#poked.keys()) if (!known.has(uid)) this.#poked.delete(uid);
    if (due.length === 0) return 0;
    await Promise.all(
      due.map(async ({ uid, at, trace: carrier }) => {
        this.#poked.set(uid, at);
        const ctx = carrier === undefined ? unsampledContext(ROOT_CONTEXT) : extractContext(carrier, unsampledContext(ROOT_CONTEXT));
        try {
          await this.#o.work.poke(uid, 'sync', ctx);
        } catch (e) {
          this.#poked.delete(uid);
          this.#o.logger.warn('could not poke a due pod; retrying on the next tick', { podUID: uid, err: errorMessage(e) });
        }
      }),
    );
    return due.length;
  }

  /**
   * syncLoopIteration's housekeepingCh case: HandlePodCleanups, skipped until every source was seen.
   * Never throws: each failed action is logged and retried on the next pass.
   */
  housekeeping(): Promise<boolean> {
    if (!this.#sourcesReady.allReady()) {
      this.#o.logger.debug('SyncLoop (housekeeping, skipped): sources aren\'t ready yet');
      return Promise.resolve(false);
    }
    return this.#lock.run(() => untraced(() => this.#handlePodCleanups()).then(() => true));
  }

  /**
   * What container GC reads of the sync loop — the kubelet's sourcesReady and its pod workers as
   * podStateProvider: whether every source was seen, and the pods whose content must stay. Read
   * under the loop's lock, between two updates, so a pod being added is never half known.
   */
  podStateForGC(): Promise<PodStateForGC> {
    return this.#lock.run(async () => ({
      allSourcesReady: this.#sourcesReady.allReady(),
      keep: podContentToKeep({ desired: this.podManager.values(), workers: this.#o.views.workers.values(), kills: this.#o.views.kills.values() }),
    }));
  }

  // -------------------------------------------------------------------------------------------
  // HandlePodAdditions
  // -------------------------------------------------------------------------------------------

  async #handlePodAdditions(update: PodUpdate): Promise<void> {
    const { clock, logger } = this.#o;
    const items = update.items
      .map((item, i) => ({ item, i, t: creationTime(item.pod) }))
      .sort((a, b) => (a.t === b.t ? a.i - b.i : a.t < b.t ? -1 : 1))
      .map((x) => x.item);
    if (items.length > 0) logger.info('SyncLoop ADD', { source: update.source, pods: items.map((i) => podRef(i.pod)) });
    const startTime = new Date(clock.now()).toISOString();
    // Decisions are sequential (each admission sees the pods admitted before it); writes overlap.
    const decided = new Map<string, DesiredPod>();
    const writes: Promise<void>[] = [];
    for (const item of items) {
      if (isMirrorPod(item.pod)) {
        writes.push(this.#handleMirrorPod(item.pod));
        continue;
      }
      writes.push(this.#admitPod(item, decided, startTime));
    }
    await allOrFirstError(writes);
  }

  /** Admission of one pod in span `admitPod`; the decision is made before this returns its promise. */
  #admitPod(item: PodUpdateItem, decided: Map<string, DesiredPod>, startTime: string): Promise<void> {
    const pod = item.pod;
    const uid = pod.metadata.uid;
    const { span, ctx } = this.#startPodSpan('admitPod', item, 'create');
    const previous = decided.get(uid) ?? this.podManager.get(uid);

    let desired: DesiredPod;
    let rejection: { reason: string; message: string } | undefined;
    if (previous?.rejected !== undefined) {
      // A replayed ADD of a pod already rejected: nothing to do again.
      span.setAttributes({ 'splitlet.admission.admitted': false, 'splitlet.admission.reason': previous.rejected.reason, 'splitlet.admission.replay': true });
      span.end();
      return Promise.resolve();
    }
    const base: DesiredPod = { type: 'kubelet.podworker.DesiredPod.v1', pod, updateType: 'create', startTime };
    if (item.trace !== undefined) base.trace = item.trace;
    const creationTrace = previous?.creationTrace ?? item.trace;
    if (creationTrace !== undefined) base.creationTrace = creationTrace;

    if (previous !== undefined || pod.metadata.deletionTimestamp != null || isTerminalPhase(pod.status?.phase)) {
      // Known already, or termination requested, or terminal: no admission (HandlePodAdditions).
      desired = base;
      span.setAttribute('splitlet.admission.admitted', true);
    } else {
      const result = this.#canAdmitPod(uid, pod, decided);
      if (result.admit) {
        desired = base;
        span.setAttribute('splitlet.admission.admitted', true);
      } else {
        rejection = { reason: result.reason, message: result.message };
        desired = { ...base, rejected: rejection };
        span.setAttributes({ 'splitlet.admission.admitted': false, 'splitlet.admission.reason': result.reason, 'splitlet.admission.message': result.message });
      }
    }
    decided.set(uid, desired);

    return this.#inSpan(span, ctx, async () => {
      if (rejection === undefined) {
        await this.#putDesired(desired);
        await this.#poke(uid, 'create');
      } else {
        await this.#rejectPod(desired, rejection);
      }
      this.podManager.set(desired);
      this.#removed.delete(uid);
    });
  }

  /** canAdmitPod; a pod admission cannot evaluate (e.g. an unparsable quantity) is rejected, not the whole update. */
  #canAdmitPod(uid: string, pod: BoundPod, decided: ReadonlyMap<string, DesiredPod>): ReturnType<typeof canAdmitPod> {
    try {
      return canAdmitPod(this.#o.admissionNode(), this.#activePods(uid, decided), pod);
    } catch (e) {
      return { admit: false, reason: 'UnexpectedAdmissionError', message: `Failed to admit pod: ${errorMessage(e)}` };
    }
  }

  /** The admitted, active pods admission weighs `uid` against (filterOutInactivePods minus the pod itself). */
  #activePods(uid: string, decided: ReadonlyMap<string, DesiredPod>): BoundPod[] {
    const byUid = new Map<string, DesiredPod>();
    for (const d of this.podManager.values()) byUid.set(d.pod.metadata.uid, d);
    for (const [k, d] of decided) byUid.set(k, d);
    byUid.delete(uid);
    const out: BoundPod[] = [];
    for (const [k, d] of byUid) if (isActivePod(d, this.#o.views.workers.get(k))) out.push(d.pod);
    return out;
  }

  /** rejectPod: status Failed "Pod was rejected: …", a Warning event, the rejection metric. */
  async #rejectPod(desired: DesiredPod, r: { reason: string; message: string }): Promise<void> {
    const { node, clock, logger, metrics } = this.#o;
    const pod = desired.pod;
    const now = new Date(clock.now()).toISOString();
    await this.#putDesired(desired);
    try {
      const update: Parameters<StatusSink['publish']>[0] = {
        type: 'kubelet.status.PodStatusUpdate.v1',
        kind: 'set',
        uid: pod.metadata.uid,
        name: pod.metadata.name,
        namespace: pod.metadata.namespace,
        pod,
        status: rejectionStatus(pod, r),
        couldHaveRunningContainers: false,
        at: now,
      };
      const carrier = injectContext();
      if (Object.keys(carrier).length > 0) update.trace = carrier;
      await this.#o.status.publish(update);
      const event: KubeEvent = {
        type: 'kubelet.events.Event.v1',
        eventType: 'Warning',
        reason: r.reason,
        message: r.message,
        involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
        source: { component: 'kubelet', host: node },
        timestamp: now,
      };
      await this.#o.events.record(event);
    } catch (e) {
      throw writeFailed(`could not report the rejection of pod ${podRef(pod)}`, e);
    }
    metrics.admissionRejections.inc({ reason: admissionRejectionLabel(r.reason) });
    logger.warn('Pod rejected', { pod: podRef(pod), podUID: pod.metadata.uid, reason: r.reason, message: r.message });
  }

  /** handleMirrorPod: a mirror pod's change is an update of its static pod. */
  async #handleMirrorPod(mirror: BoundPod): Promise<void> {
    const staticPod = this.podManager.staticPodByFullName(mirror.metadata.name, mirror.metadata.namespace);
    if (staticPod === undefined || staticPod.rejected !== undefined) return;
    await this.#poke(staticPod.pod.metadata.uid, 'update');
  }

  // -------------------------------------------------------------------------------------------
  // HandlePodUpdates (UPDATE and graceful DELETE), HandlePodReconcile
  // -------------------------------------------------------------------------------------------

  async #handlePodUpdates(update: PodUpdate): Promise<void> {
    if (update.items.length > 0) this.#o.logger.info(`SyncLoop ${update.op}`, { source: update.source, pods: update.items.map((i) => podRef(i.pod)) });
    const startTime = new Date(this.#o.clock.now()).toISOString();
    await allOrFirstError(
      update.items.map((item) => {
        if (isMirrorPod(item.pod)) return this.#handleMirrorPod(item.pod);
        const uid = item.pod.metadata.uid;
        const previous = this.podManager.get(uid);
        const desired: DesiredPod = { type: 'kubelet.podworker.DesiredPod.v1', pod: item.pod, updateType: 'update', startTime };
        if (item.trace !== undefined) desired.trace = item.trace;
        const creationTrace = previous?.creationTrace ?? item.trace;
        if (creationTrace !== undefined) desired.creationTrace = creationTrace;
        if (previous?.rejected !== undefined) desired.rejected = previous.rejected;
        const { span, ctx } = this.#startPodSpan('updatePod', item, 'update');
        return this.#inSpan(span, ctx, async () => {
          await this.#putDesired(desired);
          if (desired.rejected === undefined) await this.#poke(uid, 'update');
          this.podManager.set(desired);
          this.#removed.delete(uid);
        });
      }),
    );
  }

  async #handlePodReconcile(update: PodUpdate): Promise<void> {
    const startTime = new Date(this.#o.clock.now()).toISOString();
    await allOrFirstError(
      update.items.map(async (item) => {
        if (isMirrorPod(item.pod)) return;
        const previous = this.podManager.get(item.pod.metadata.uid);
        let desired: DesiredPod;
        if (previous !== undefined) desired = { ...previous, pod: item.pod };
        else {
          desired = { type: 'kubelet.podworker.DesiredPod.v1', pod: item.pod, updateType: 'update', startTime };
          if (item.trace !== undefined) {
            desired.trace = item.trace;
            desired.creationTrace = item.trace;
          }
        }
        await this.#putDesired(desired);
        this.podManager.set(desired);
      }),
    );
  }

  // -------------------------------------------------------------------------------------------
  // HandlePodRemoves / deletePod
  // -------------------------------------------------------------------------------------------

  async #handlePodRemoves(update: PodUpdate): Promise<void> {
    const { logger, clock } = this.#o;
    if (update.items.length > 0) logger.info('SyncLoop REMOVE', { source: update.source, pods: update.items.map((i) => podRef(i.pod)) });
    const requestedAt = new Date(clock.now()).toISOString();
    await allOrFirstError(
      update.items.map((item) => {
        if (isMirrorPod(item.pod)) return this.#handleMirrorPod(item.pod);
        const pod = item.pod;
        const uid = pod.metadata.uid;
        const { span, ctx } = this.#startPodSpan('updatePod', item, 'kill');
        return this.#inSpan(span, ctx, async () => {
          try {
            await this.#o.desired.delete(uid);
          } catch (e) {
            throw writeFailed(`could not delete the desired pod ${podRef(pod)}`, e);
          }
          this.podManager.delete(uid);
          this.#removed.set(uid, pod);
          if (!this.#sourcesReady.allReady()) {
            // Housekeeping kills the pod's worker once every source was seen (SyncKnownPods).
            logger.error('Failed to delete pod', { pod: podRef(pod), podUID: uid, err: "skipping delete because sources aren't ready yet" });
            span.setAttribute('splitlet.kill.deferred', true);
            return;
          }
          const request: KillRequest = { type: 'kubelet.podworker.KillRequest.v1', uid, reason: 'removed', pod, requestedAt };
          if (item.trace !== undefined) request.trace = item.trace;
          await this.#requestKill(request);
          await this.#poke(uid, 'kill');
        });
      }),
    );
  }

  /**
   * Creates the kill request; when one is pending, only shortens its grace (compare-and-swap).
   * Returns what happened.
   */
  async #requestKill(request: KillRequest): Promise<'created' | 'pending' | 'shortened'> {
    const { kills } = this.#o;
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        if (await kills.create(request)) return 'created';
        const pending = await kills.get(request.uid);
        if (pending === undefined) continue; // carried out and removed meanwhile: create again
        const shorter = shortenedKill(pending.value, request);
        if (shorter === undefined) return 'pending';
        if (await kills.update(shorter, pending.revision)) {
          this.#o.logger.info('shortened the grace period of a pending kill', { podUID: request.uid, gracePeriodSeconds: shorter.gracePeriodOverride });
          return 'shortened';
        }
      }
    } catch (e) {
      throw writeFailed(`could not request the kill of pod ${request.uid}`, e);
    }
    throw new KubeletError('SyncLoopWriteFailed', `the kill request of pod ${request.uid} kept changing; retrying`, { retryable: true });
  }

  // -------------------------------------------------------------------------------------------
  // HandlePodCleanups
  // -------------------------------------------------------------------------------------------

  async #handlePodCleanups(): Promise<void> {
    const { clock, logger, metrics, views } = this.#o;
    const start = clock.now();
    const plan = planHousekeeping({
      desired: this.podManager.values(),
      workers: views.workers.values(),
      runtime: views.runtime.values(),
      kills: views.kills,
      removedPods: this.#removed,
      now: start,
      ...(this.#o.restartAfterMs === undefined ? {} : { restartAfterMs: this.#o.restartAfterMs }),
    });
    const requestedAt = new Date(start).toISOString();

    const actions: Promise<void>[] = [];
    for (const k of plan.killRemoved) {
      const request: KillRequest = { type: 'kubelet.podworker.KillRequest.v1', uid: k.uid, reason: 'removed', runningPod: k.runningPod, requestedAt };
      if (k.pod !== undefined) request.pod = k.pod;
      actions.push(this.#housekeepingKill(request, 'Killing the worker of a pod that is no longer desired'));
    }
    for (const runningPod of plan.killOrphaned) {
      const request: KillRequest = {
        type: 'kubelet.podworker.KillRequest.v1',
        uid: runningPod.uid,
        reason: 'orphaned',
        runningPod,
        gracePeriodOverride: 1,
        requestedAt,
      };
      actions.push(this.#housekeepingKill(request, 'Clean up containers for orphaned pod we had not seen before'));
    }
    if (plan.killOrphaned.length > 0) metrics.orphanedRuntimePods.inc(plan.killOrphaned.length);
    for (const d of plan.restart) {
      actions.push(
        (async () => {
          logger.info('Pod will be restarted because it is in the desired set and not known to the pod workers', { pod: podRef(d.pod), podUID: d.pod.metadata.uid });
          try {
            await this.#o.work.poke(d.pod.metadata.uid, 'create', extractContext(d.trace, ROOT_CONTEXT));
            metrics.restartedPods.inc({ static: isStaticPod(d.pod) ? 'true' : '' });
          } catch (e) {
            logger.warn('could not restart a pod unknown to the workers', { podUID: d.pod.metadata.uid, err: errorMessage(e) });
          }
        })(),
      );
    }
    actions.push(this.#cleanupOrphanedPodDirs(plan.keep));
    await Promise.all(actions);

    metrics.desiredPods.set({ static: '' }, plan.desiredPods.regular);
    metrics.desiredPods.set({ static: 'true' }, plan.desiredPods.static);
    metrics.activePods.set({ static: '' }, plan.activePods.regular);
    metrics.activePods.set({ static: 'true' }, plan.activePods.static);
    for (const [key, n] of plan.workingPods) {
      const [lifecycle, config, isStatic] = key.split('|') as [string, string, string];
      metrics.workingPods.set({ lifecycle, config, static: isStatic }, n);
    }
    // Forget removed pods once nothing refers to them any more.
    for (const uid of this.#removed.keys()) {
      if (views.workers.get(uid) === undefined && views.kills.get(uid) === undefined && views.runtime.get(uid) === undefined) this.#removed.delete(uid);
    }

    const took = clock.now() - start;
    metrics.housekeepingDuration.observe(took / 1000);
    if (took > HOUSEKEEPING_WARNING_MS) {
      logger.error('Housekeeping took longer than expected', { expected: formatGoDuration(HOUSEKEEPING_WARNING_MS), actual: formatGoDuration(took) });
    }
  }

  /** A housekeeping kill: its own trace (a new episode), a kill request, a poke. Logs failures. */
  async #housekeepingKill(request: KillRequest, message: string): Promise<void> {
    const ref: RunningPodRef | undefined = request.runningPod;
    const span = this.#o.tracer.startSpan(
      'killPod',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'k8s.pod.uid': request.uid,
          ...(ref === undefined ? {} : { 'k8s.pod.name': ref.name, 'k8s.namespace.name': ref.namespace }),
          'k8s.pod.update_type': 'kill',
          'splitlet.kill.reason': request.reason,
        },
      },
      ROOT_CONTEXT,
    );
    const ctx = trace.setSpan(ROOT_CONTEXT, span);
    try {
      await context.with(ctx, async () => {
        this.#o.logger.info(message, { podUID: request.uid, pod: ref === undefined ? undefined : `${ref.namespace}/${ref.name}`, reason: request.reason });
        const carrier = injectContext();
        if (Object.keys(carrier).length > 0) request.trace = carrier;
        const outcome = await this.#requestKill(request);
        span.setAttribute('splitlet.kill.outcome', outcome);
        await this.#o.work.poke(request.uid, 'kill');
      });
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      this.#o.logger.warn('housekeeping could not request a kill; retrying on the next pass', { podUID: request.uid, err: errorMessage(e) });
    } finally {
      span.end();
    }
  }

  /** cleanupOrphanedPodDirs through volume-manager. Failures are logged (rate-limited), never fatal. */
  async #cleanupOrphanedPodDirs(keep: readonly string[]): Promise<void> {
    const { logger, clock } = this.#o;
    try {
      const removed = await this.#o.volumes.cleanup(keep);
      if (removed.length > 0) logger.info('Cleaned up orphaned pod directories', { podUIDs: removed });
      this.#lastVolumeError = undefined;
    } catch (e) {
      const message = errorMessage(e);
      const now = clock.now();
      const last = this.#lastVolumeError;
      if (last === undefined || last.message !== message || now - last.at >= VOLUME_ERROR_LOG_EVERY_MS) {
        logger.error('Failed cleaning up orphaned pod directories', { err: message });
        this.#lastVolumeError = { message, at: now };
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Writes and spans
  // -------------------------------------------------------------------------------------------

  async #putDesired(desired: DesiredPod): Promise<void> {
    try {
      await this.#o.desired.put(desired);
    } catch (e) {
      throw writeFailed(`could not write the desired pod ${podRef(desired.pod)}`, e);
    }
  }

  async #poke(uid: string, kind: 'create' | 'update' | 'sync' | 'kill'): Promise<void> {
    try {
      await this.#o.work.poke(uid, kind);
    } catch (e) {
      throw writeFailed(`could not poke pod ${uid} (${kind})`, e);
    }
  }

  /**
   * A span for one pod of an update, child of the pod's trace (the item's carrier), linked to the
   * message's consumer span (the active one).
   */
  #startPodSpan(name: string, item: PodUpdateItem, updateType: string): { span: Span; ctx: Context } {
    const consumer = trace.getSpanContext(context.active());
    const parent = item.trace === undefined ? context.active() : extractContext(item.trace, ROOT_CONTEXT);
    const span = this.#o.tracer.startSpan(
      name,
      {
        kind: SpanKind.INTERNAL,
        attributes: podAttributes(item.pod, updateType),
        ...(consumer !== undefined && item.trace !== undefined ? { links: [{ context: consumer }] } : {}),
      },
      parent,
    );
    return { span, ctx: trace.setSpan(parent, span) };
  }

  async #inSpan(span: Span, ctx: Context, fn: () => Promise<void>): Promise<void> {
    try {
      await context.with(ctx, fn);
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(e) });
      throw e;
    } finally {
      span.end();
    }
  }
}
