/**
 * The sync loop: turns config updates, PLEG events, the work queue tick and housekeeping into
 * desired pods, kill requests and pokes for the pod workers.
 *
 * Models pkg/kubelet/kubelet.go (syncLoopIteration, HandlePodAdditions, HandlePodUpdates,
 * HandlePodRemoves, HandlePodReconcile, HandlePodSyncs, rejectPod, deletePod) and
 * pkg/kubelet/kubelet_pods.go (HandlePodCleanups).
 *
 * This file dispatches; the handlers are pod-additions.ts (ADD), pod-updates.ts (UPDATE, DELETE,
 * RECONCILE, REMOVE) and pod-cleanups.ts (housekeeping), over the shared state and writes of
 * sync-loop-context.ts.
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
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { DesiredPod, PodLifecycleEvent, PodUpdate, TraceCarrier } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { extractContext, unsampledContext } from '@splitlet/telemetry';
import { podContentToKeep, type PodStateForGC } from './container-gc.js';
import { ALL_APPLIED, AppliedUpdates } from './applied-updates.js';
import { Mutex } from './mutex.js';
import { PodAdditions } from './pod-additions.js';
import { PodCleanups } from './pod-cleanups.js';
import { PodManager } from './pod-manager.js';
import { PodUpdates } from './pod-updates.js';
import { SourcesReady } from './sources-ready.js';
import { SyncLoopContext, writeFailed } from './sync-loop-context.js';
import type { SyncLoopOptions } from './sync-loop-context.js';
import { untraced } from './untraced.js';

/** The sync loop of one node. Create it, `start()` it (rebuilds state from KV), then feed it. */
export class SyncLoop {
  // The loop's own state: read through desiredPod()/desiredPodCount, never changed from outside.
  private readonly podManager = new PodManager();
  readonly #o: SyncLoopOptions;
  #sourcesReady = new SourcesReady();
  /** The `nextSyncAt` already poked per pod (the work queue hands out each item once). */
  readonly #poked = new Map<string, number>();
  #applied = new AppliedUpdates();
  /** The runtime cache write (`PodLifecycleEvent.cacheRevision`) last poked per pod. */
  readonly #plegPoked = new Map<string, number>();
  readonly #lock = new Mutex();
  readonly #additions: PodAdditions;
  readonly #updates: PodUpdates;
  readonly #cleanups: PodCleanups;

  constructor(options: SyncLoopOptions) {
    this.#o = options;
    const ctx = new SyncLoopContext(options, this.podManager, () => this.#sourcesReady);
    this.#additions = new PodAdditions(ctx);
    this.#updates = new PodUpdates(ctx);
    this.#cleanups = new PodCleanups(ctx);
  }

  /** Rebuilds the pod manager from `sl_desired`, the seen sources and the applied updates from `sl_node`. */
  async start(): Promise<void> {
    const desired = await this.#o.desired.list();
    this.podManager.reset(desired);
    this.#applied = AppliedUpdates.fromDesired(desired, await this.#o.applied.load());
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
   * Updates are handled one at a time (also against housekeeping); one applied already (see
   * applied-updates.ts) is skipped, and before the first of a new publisher the earlier ones are
   * marked done (persisted).
   * @throws KubeletError `SyncLoopWriteFailed` (retryable) when a KV write or a publish failed.
   */
  handlePodUpdate(update: PodUpdate): Promise<void> {
    return this.#lock.run(async () => {
      const { origin } = update;
      if (origin !== undefined && this.#applied.isReplay(origin)) {
        const last = this.#applied.last(origin.publisher);
        this.#o.logger.warn('skipping a pod update applied already (delivered again by the bus)', {
          op: update.op,
          source: update.source,
          publisher: origin.publisher,
          seq: origin.seq,
          lastApplied: last === ALL_APPLIED ? 'all (a newer publisher has started since)' : last,
          pods: update.items.map((i) => i.pod.metadata.uid),
        });
        this.#o.metrics.replayedUpdates.inc();
        return;
      }
      const earlier = origin === undefined ? undefined : this.#applied.closeEarlier(origin.publisher);
      if (earlier !== undefined) {
        try {
          await this.#o.applied.save(earlier);
        } catch (e) {
          throw writeFailed('could not persist the updates applied from earlier config publishers', e);
        }
      }
      switch (update.op) {
        case 'ADD':
          await this.#additions.handle(update);
          break;
        case 'UPDATE':
        case 'DELETE':
          await this.#updates.handleUpdates(update);
          break;
        case 'REMOVE':
          await this.#updates.handleRemoves(update);
          break;
        case 'RECONCILE':
          await this.#updates.handleReconcile(update);
          break;
      }
      if (this.#sourcesReady.observe(update.source, update.sources)) {
        try {
          await this.#o.sources.save(this.#sourcesReady.snapshot());
        } catch (e) {
          throw writeFailed('could not persist the seen sources', e);
        }
      }
      if (origin !== undefined) this.#applied.record(origin);
    });
  }

  /**
   * syncLoopIteration's plegCh case: a lifecycle event of a desired pod is a sync (HandlePodSyncs).
   * Events of one runtime cache write (`cacheRevision`: a sandbox and its container started, seen in
   * one relist) get one poke: the sync it starts reads that entry whole. The kubelet's pod worker
   * folds them the same way when the second arrives while the first sync is pending.
   */
  async handlePlegEvent(event: PodLifecycleEvent): Promise<void> {
    if (event.event === 'ContainerRemoved') return;
    const { uid, cacheRevision } = event;
    const desired = this.podManager.get(uid);
    if (desired === undefined || desired.rejected !== undefined) return;
    if (cacheRevision !== undefined) {
      // On the event's `process` span: a trace shows which write an event came from, and why no poke followed it.
      const span = trace.getActiveSpan();
      span?.setAttribute('splitlet.pleg.cache_revision', cacheRevision);
      if (this.#plegPoked.get(uid) === cacheRevision) {
        span?.setAttribute('splitlet.pleg.folded', true);
        return;
      }
      this.#plegPoked.set(uid, cacheRevision);
    }
    try {
      await this.#o.work.poke(uid, 'sync');
    } catch (e) {
      // The event is delivered again (nak) and pokes then; its siblings skipped meanwhile count on that.
      if (cacheRevision !== undefined && this.#plegPoked.get(uid) === cacheRevision) this.#plegPoked.delete(uid);
      throw writeFailed(`could not poke pod ${uid}`, e);
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
      this.#o.logger.debug("SyncLoop (housekeeping, skipped): sources aren't ready yet");
      return Promise.resolve(false);
    }
    for (const uid of this.#plegPoked.keys()) if (!this.podManager.has(uid)) this.#plegPoked.delete(uid);
    return this.#lock.run(() => untraced(() => this.#cleanups.run()).then(() => true));
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
}
