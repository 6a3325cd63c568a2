/**
 * The steps every pod sync is built from, bound to the syncer's options: spans (the sync's own and
 * one per step), status generation and updates, events, the KillPod request, worker-record
 * writes, and the hand-over of a fresh runtime status to the pod's next sync. Each write and side
 * effect checks the partition lease first.
 *
 * Models the helpers pkg/kubelet/kubelet.go's sync functions share (generateAPIPodStatus calls,
 * statusManager.SetPodStatus, recorder.Eventf, killPod) and pod_workers.go's completeWork.
 */
import { ROOT_CONTEXT, SpanStatusCode, context } from '@opentelemetry/api';
import type { Attributes, Context, Span } from '@opentelemetry/api';
import type { BoundPod, DesiredPod, KillRequest, PodStatus, PodStatusUpdate, ProbeResultsByType, RuntimePodStatus, WorkerRecord } from '@splitlet/api';
import { errorMessage, hasErrorCode } from '@splitlet/api';
import { KubeletPeriods, generateAPIPodStatus, podIPsAfterTeardown, requeueDelay } from '@splitlet/kube';
import { injectContext, withSpan } from '@splitlet/telemetry';
import type { Versioned } from '../ports.js';
import type { PartitionGuard } from '../partitions/partition-guard.js';
import { abortable } from './abortable.js';
import { podEvent } from './pod-event.js';
import type { RecordMemory } from './record-memory.js';
import { SyncMemory } from './settled-sync.js';
import type { PodSyncerOptions, SyncCtx } from './sync-context.js';
import { syncSpanParent } from './sync-span-parent.js';
import { requeued } from './worker-requeue.js';

/** A runtime status handed from one sync of a pod to the next, with the span that handed it over. */
export interface RuntimeHandoff {
  readonly status: RuntimePodStatus;
  readonly epoch: number;
  readonly parent: Context | undefined;
}

/**
 * The shared sync steps. One per {@link PodSyncer}; stateless except the hand-over table and the
 * per-epoch {@link SyncMemory} of each partition guard.
 */
export class SyncEffects {
  readonly o: PodSyncerOptions;
  readonly random: () => number;
  /** syncFrequency. */
  readonly resyncMs: number;
  /**
   * Runtime status from cri-adapter's last reply, used by the immediately following sync of the
   * pod, and the span of the sync that handed it over (the next sync continues its trace).
   */
  readonly handoff = new Map<string, RuntimeHandoff>();
  /** What this instance remembers per partition lease epoch (dropped with the guard when the partition stops). */
  readonly #memories = new WeakMap<PartitionGuard, SyncMemory>();

  constructor(options: PodSyncerOptions) {
    this.o = options;
    this.random = options.random ?? Math.random;
    this.resyncMs = options.resyncMs ?? KubeletPeriods.resyncIntervalMs;
  }

  /**
   * Runs `body` in the sync's span `name` (parented by {@link syncSpanParent}); an outcome with an
   * error marks the span failed. Returns the outcome and the span's context.
   */
  async inSyncSpan<T extends { readonly error?: string | undefined }>(
    name: string,
    ctx: SyncCtx,
    attributes: Attributes,
    body: (span: Span) => Promise<T>,
  ): Promise<{ outcome: T; spanCtx: Context }> {
    const { parent, links } = syncSpanParent(ctx);
    let spanCtx: Context = ROOT_CONTEXT;
    const outcome = await withSpan(this.o.tracer, name, { parent, links, attributes }, async (span) => {
      spanCtx = context.active();
      const r = await body(span);
      if (r.error !== undefined) failSpan(span, r.error);
      return r;
    });
    return { outcome, spanCtx };
  }

  /** One sync step as a child span of the active sync span. */
  step<T>(name: string, ctx: SyncCtx, fn: () => Promise<T> | T): Promise<T> {
    return withSpan(this.o.tracer, name, { attributes: { 'k8s.pod.uid': ctx.uid } }, () => fn());
  }

  generate(
    pod: BoundPod,
    runtimeStatus: RuntimePodStatus,
    rec: WorkerRecord,
    oldStatus: PodStatus | undefined,
    podIsTerminal: boolean,
    probes: ProbeResultsByType | undefined,
  ): PodStatus {
    return generateAPIPodStatus({
      pod,
      runtimeStatus,
      runtimeName: this.o.runtimeName,
      reasons: rec.reasons,
      ...(oldStatus !== undefined ? { oldStatus } : {}),
      podIsTerminal,
      probes: probes ?? {},
      now: this.o.clock.now(),
      ...(this.o.hostIPs !== undefined ? { hostIPs: this.o.hostIPs } : {}),
    });
  }

  /** The memory of the partition `guard` holds, for its epoch. */
  memory(guard: PartitionGuard): SyncMemory {
    let m = this.#memories.get(guard);
    if (m === undefined) {
      m = new SyncMemory();
      this.#memories.set(guard, m);
    }
    return m;
  }

  /** statusManager.SetPodStatus. */
  async sendStatus(ctx: SyncCtx, status: PodStatus, couldHaveRunningContainers: boolean): Promise<void> {
    await this.send(ctx.guard, {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind: 'set',
      uid: ctx.uid,
      name: ctx.pod.metadata.name,
      namespace: ctx.pod.metadata.namespace,
      pod: ctx.pod,
      status,
      couldHaveRunningContainers,
      ...(ctx.desired === null ? { podRemoved: true } : {}),
      at: new Date(this.o.clock.now()).toISOString(),
      trace: injectContext(),
    });
    this.memory(ctx.guard).sent(ctx.uid, status);
  }

  async send(guard: PartitionGuard, update: PodStatusUpdate): Promise<void> {
    guard.assertHeld();
    this.memory(guard).sending(update.uid);
    await this.o.status.send({ ...update, epoch: guard.epoch });
  }

  /** Records a pod event; a failure to record is logged, never fails the sync. */
  async event(guard: PartitionGuard, pod: BoundPod, eventType: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const ev = podEvent(this.o.node, pod, eventType, reason, message, this.o.clock.now());
    guard.assertHeld();
    try {
      await this.o.events.record(ev);
    } catch (e) {
      this.o.logger.warn('recording event failed', { uid: pod.metadata.uid, reason, err: errorMessage(e) });
    }
  }

  /** KillPod through cri-adapter (grace from the override, else the pod's, else 30 s); waits until the partition stops. */
  async killPod(ctx: SyncCtx, gracePeriod: number | undefined): Promise<{ podStatus: RuntimePodStatus }> {
    const { pod, guard, ctl } = ctx;
    guard.assertHeld();
    const graceMs = (gracePeriod ?? pod.spec.terminationGracePeriodSeconds ?? 30) * 1000;
    return this.step('killPod', ctx, async () => {
      const reply = await abortable(
        this.o.runtime.killPod(
          {
            type: 'kubelet.runtime.KillPodRequest.v1',
            pod,
            runningPod: { uid: ctx.uid, name: pod.metadata.name, namespace: pod.metadata.namespace },
            podStatus: ctx.runtimeStatus,
            ...(gracePeriod !== undefined ? { gracePeriodOverride: gracePeriod } : {}),
            fence: guard.fence(),
          },
          graceMs + 30_000,
          ctl.stopSignal,
        ),
        ctl.stopSignal,
      );
      if (reply.timestamp !== undefined) ctx.runtimeCalls.at = reply.timestamp;
      return reply;
    });
  }

  /** Writes the worker record, stamped with this sync (time, epoch, runtime episode, desired revision); returns its revision. */
  persist(ctx: SyncCtx, rec: WorkerRecord): Promise<number> {
    return this.putWorker(ctx.guard, this.stamped(ctx, rec));
  }

  /** `rec` stamped with this sync, as {@link persist} writes it. */
  stamped(ctx: SyncCtx, rec: WorkerRecord): WorkerRecord {
    const now = this.o.clock.now();
    const out: WorkerRecord = {
      ...rec,
      lastSyncTime: now,
      syncedAt: new Date(now).toISOString(),
      epoch: ctx.guard.epoch,
    };
    if (ctx.episodeAt !== undefined) out.episodeAt = ctx.episodeAt;
    if (ctx.runtimeCalls.at !== undefined) out.runtimeSyncedAt = ctx.runtimeCalls.at;
    else delete out.runtimeSyncedAt;
    const rev = ctx.desired?.revision ?? rec.syncedRevision;
    if (rev !== undefined) out.syncedRevision = rev;
    return out;
  }

  /** Puts a worker record (the partition owner is its only writer) and remembers it for the epoch. */
  async putWorker(guard: PartitionGuard, rec: WorkerRecord): Promise<number> {
    const memory = this.memory(guard);
    guard.assertHeld();
    // Until the put is known done, what KV holds is unknown.
    memory.setWorker(rec.uid, undefined);
    const revision = await this.o.store.putWorker(guard.partition, rec);
    memory.setWorker(rec.uid, { value: rec, revision });
    return revision;
  }

  /** Deletes a worker record and remembers it gone for the epoch. */
  async deleteWorker(guard: PartitionGuard, uid: string): Promise<void> {
    const memory = this.memory(guard);
    guard.assertHeld();
    memory.setWorker(uid, undefined);
    await this.o.store.deleteWorker(guard.partition, uid);
    memory.setWorker(uid, null);
  }

  /** The pod's desired record: from this epoch's memory when no poke since it was read says it changed ({@link RecordMemory}), else from KV. */
  getDesired(guard: PartitionGuard, uid: string): Promise<Versioned<DesiredPod> | null> {
    return this.#remembered(this.memory(guard).desired, uid, () => this.o.store.getDesired(guard.partition, uid));
  }

  /** The pod's kill request: from this epoch's memory when no poke since it was read says it changed, else from KV. */
  getKill(guard: PartitionGuard, uid: string): Promise<Versioned<KillRequest> | null> {
    return this.#remembered(this.memory(guard).kill, uid, () => this.o.store.getKill(guard.partition, uid));
  }

  async #remembered<T>(memory: RecordMemory<T>, uid: string, read: () => Promise<Versioned<T> | null>): Promise<Versioned<T> | null> {
    const now = this.o.clock.now();
    const known = memory.get(uid, now);
    if (known !== undefined) return known;
    const reading = memory.reading(uid);
    const value = await read();
    memory.read(uid, value, reading, now);
    return value;
  }

  /**
   * The pod's worker record: from this epoch's memory when this instance wrote or read it, else
   * from KV (then remembered). Only the partition owner writes it, so what it wrote is current.
   */
  async getWorker(guard: PartitionGuard, uid: string): Promise<Versioned<WorkerRecord> | null> {
    const memory = this.memory(guard);
    const known = memory.worker(uid);
    if (known !== undefined) return known;
    const read = await this.o.store.getWorker(guard.partition, uid);
    memory.setWorker(uid, read);
    return read;
  }

  /** A failed `what`: logs it and persists `record` due again after the error backoff, continuing `spanCtx`. */
  async requeueAfterError(ctx: SyncCtx, record: WorkerRecord, what: string, error: string, spanCtx: Context): Promise<void> {
    const delay = requeueDelay({ error }, this.random, this.resyncMs);
    this.o.logger.warn(`${what} failed, requeued`, { uid: ctx.uid, err: error, retryInMs: Math.round(delay) });
    await this.persist(ctx, requeued(record, this.o.clock.now() + Math.round(delay), spanCtx));
  }

  /** Hands the runtime status a step ended with to the pod's next sync (a worker state transition). */
  handOver(ctx: SyncCtx, status: RuntimePodStatus | undefined, parent: Context): void {
    // A reply after a teardown has no IPs: keep the ones the sync started with, as the pleg cache
    // would (GenericPLEG.getPodIPs), so a completed pod still shows its IP.
    if (status !== undefined) this.handoff.set(ctx.uid, { status: { ...status, ips: podIPsAfterTeardown(ctx.runtimeStatus, status) }, epoch: ctx.guard.epoch, parent });
  }

  /** The pod is finished and no longer desired: status-manager forgets it, then the kill and the record go. */
  async forget(guard: PartitionGuard, uid: string, record: WorkerRecord | undefined, kill: Versioned<KillRequest> | null, pod: BoundPod | undefined): Promise<void> {
    this.handoff.delete(uid);
    this.memory(guard).forget(uid);
    await this.send(guard, {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind: 'removed',
      uid,
      name: pod?.metadata.name ?? record?.name ?? '',
      namespace: pod?.metadata.namespace ?? record?.namespace ?? '',
      ...(pod !== undefined ? { pod } : {}),
      couldHaveRunningContainers: false,
      at: new Date(this.o.clock.now()).toISOString(),
    });
    if (kill !== null) await this.deleteKill(guard, uid, kill);
    await this.deleteWorker(guard, uid);
    this.o.logger.debug('pod worker forgotten', { uid });
  }

  /** Deletes the kill request carried out; when sync-loop shortened its grace meanwhile, the newer one. */
  async deleteKill(guard: PartitionGuard, uid: string, kill: Versioned<KillRequest>): Promise<void> {
    guard.assertHeld();
    // What this instance read of the request is about to be wrong: the next sync reads KV.
    this.memory(guard).kill.forget(uid);
    try {
      await this.o.store.deleteKill(guard.partition, uid, kill.revision);
    } catch (e) {
      if (!hasErrorCode(e, 'Conflict')) throw e;
      // sync-loop shortened the grace meanwhile (CAS): the kill is carried out all the same.
      const again = await this.o.store.getKill(guard.partition, uid);
      if (again !== null) {
        guard.assertHeld();
        await this.o.store.deleteKill(guard.partition, uid, again.revision);
      }
    }
  }
}

/** Marks `span` failed with `message`. */
export function failSpan(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
