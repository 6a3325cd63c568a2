/**
 * The status manager: a versioned pod status cache persisted in `sl_status`.
 *
 * Models pkg/kubelet/status/status_manager.go (manager.podStatuses, SetPodStatus, TerminatePod,
 * RemoveOrphanedStatuses) in standalone mode, where the record is what would be reported.
 *
 * Concurrency: updates of one pod are applied one at a time, in the order `handle` is called;
 * different pods proceed in parallel. Idempotent: a replayed update equal to the cache is skipped.
 */
import type { PodStatusRecord, PodStatusUpdate } from '@splitlet/api';
import { KubeletError, errorMessage } from '@splitlet/api';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { StatusStore } from '../ports.js';
import type { StatusMetrics } from './metrics.js';
import { applyStatusUpdate, type StatusDecision } from './status-merge.js';

/** Dependencies of {@link StatusManager}. */
export interface StatusManagerOptions {
  readonly store: StatusStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: StatusMetrics;
  /** Called after a record was written (`record`) or deleted (`undefined`), e.g. to report it to the API server. */
  readonly onChange?: (uid: string, record: PodStatusRecord | undefined) => void;
}

/** What happened to one update. */
export type StatusOutcome = 'written' | 'deleted' | 'unchanged' | 'stale' | 'illegal-transition' | 'unknown-pod';

/** How long a removed pod's UID is remembered to drop its late updates. */
export const REMOVED_MEMORY_MS = 15 * 60_000;

/** The status manager. Create it, `load()` the cache, then feed it updates. */
export class StatusManager {
  readonly #o: StatusManagerOptions;
  readonly #cache = new Map<string, PodStatusRecord>();
  readonly #chains = new Map<string, Promise<unknown>>();
  /**
   * Pods `removed` in the last {@link REMOVED_MEMORY_MS} (uid → when). An update for one arriving
   * later is stale (a redelivery, or a sync that ended after the worker forgot the pod) and must not
   * bring the record back: the kubelet's status manager drops the status of a pod its pod manager no
   * longer has. UIDs are never reused, so remembering them is safe.
   */
  readonly #removed = new Map<string, number>();
  /**
   * Per pod, the order of the last `set`/`terminated` applied (the pod worker's lease epoch and
   * time). An update older than it was overtaken by newer ones — a redelivery after a failed write's
   * nak, or one a killed predecessor left unacknowledged — and must not take the record back; the
   * kubelet's status manager never sees an older status after a newer one (one process, in order).
   */
  readonly #applied = new Map<string, { readonly epoch: number; readonly at: number }>();
  /**
   * Pods whose latest update said they were removed from their source (`podRemoved`) and whose
   * status is still kept while their worker terminates them: not reported to the API server. In
   * memory: after a restart the next update of the pod says it again.
   */
  readonly #podRemoved = new Set<string>();

  constructor(options: StatusManagerOptions) {
    this.#o = options;
  }

  /** Rebuilds the cache from the store. */
  async load(): Promise<void> {
    const records = await this.#o.store.load();
    this.#cache.clear();
    for (const r of records) this.#cache.set(r.uid, r);
    this.#o.logger.info('loaded the pod status cache', { pods: this.#cache.size });
  }

  /** The cached record of a pod. */
  get(uid: string): PodStatusRecord | undefined {
    return this.#cache.get(uid);
  }

  /** Every cached record. */
  records(): IterableIterator<PodStatusRecord> {
    return this.#cache.values();
  }

  /**
   * True when the pod's latest update said its source removed it (PodStatusUpdate.podRemoved): its
   * status stays cached until the worker forgets it, but is reported to the API server no more.
   */
  podRemoved(uid: string): boolean {
    return this.#podRemoved.has(uid);
  }

  /** How many pods have a cached status. */
  get size(): number {
    return this.#cache.size;
  }

  /**
   * Applies one update after the previous updates of the same pod.
   * @throws KubeletError `InvalidStatusUpdate` (not retryable) for an update that cannot be applied
   *   (a `set` without status or pod); `StatusWriteFailed` (retryable) when the store failed — the
   *   cache is then unchanged, so a redelivery applies the update again.
   */
  handle(update: PodStatusUpdate): Promise<StatusOutcome> {
    const previous = this.#chains.get(update.uid) ?? Promise.resolve();
    const run = previous.then(
      () => this.#apply(update),
      () => this.#apply(update),
    );
    this.#chains.set(update.uid, run);
    void run.then(
      () => this.#forget(update.uid, run),
      () => this.#forget(update.uid, run),
    );
    return run;
  }

  #forget(uid: string, run: Promise<unknown>): void {
    if (this.#chains.get(uid) === run) this.#chains.delete(uid);
  }

  async #apply(update: PodStatusUpdate): Promise<StatusOutcome> {
    const { clock, logger, metrics, store } = this.#o;
    if (update.kind !== 'removed' && this.#removed.has(update.uid)) {
      logger.warn('status update for a removed pod ignored', { podUID: update.uid, pod: `${update.namespace}/${update.name}`, kind: update.kind });
      metrics.updates.inc({ kind: update.kind, outcome: 'unknown-pod' });
      return 'unknown-pod';
    }
    // Before the change is announced (onChange): a removed pod's status is not reported.
    if (update.kind !== 'removed' && update.podRemoved === true) this.#podRemoved.add(update.uid);
    else this.#podRemoved.delete(update.uid);
    if (this.#overtaken(update)) {
      logger.debug('Ignoring a status update older than the one applied', { podUID: update.uid, pod: `${update.namespace}/${update.name}`, kind: update.kind, at: update.at });
      metrics.updates.inc({ kind: update.kind, outcome: 'stale' });
      return 'stale';
    }
    const cached = this.#cache.get(update.uid);
    let decision: StatusDecision;
    try {
      decision = applyStatusUpdate(cached, update, clock.now());
    } catch (e) {
      throw new KubeletError('InvalidStatusUpdate', errorMessage(e), { retryable: false, cause: e });
    }
    const fields = { podUID: update.uid, pod: `${update.namespace}/${update.name}`, kind: update.kind };
    let outcome: StatusOutcome;
    try {
      switch (decision.kind) {
        case 'skip':
          outcome = decision.reason;
          if (decision.reason === 'illegal-transition') logger.error('Status update on pod aborted', { ...fields, err: decision.detail });
          else if (decision.reason === 'unknown-pod') logger.warn('status update for an unknown pod ignored', { ...fields, detail: decision.detail });
          else logger.debug('Ignoring same status for pod', fields);
          break;
        case 'delete':
          await store.delete(update.uid);
          this.#cache.delete(update.uid);
          outcome = 'deleted';
          this.#o.onChange?.(update.uid, undefined);
          logger.debug('Removing pod from status map', fields);
          break;
        case 'write':
          await store.put(decision.record);
          this.#cache.set(update.uid, decision.record);
          outcome = 'written';
          this.#o.onChange?.(update.uid, decision.record);
          this.#observeSync(update.at);
          logger.debug('status written', { ...fields, version: decision.record.version, phase: decision.record.status.phase, finished: decision.record.finished });
          break;
      }
    } catch (e) {
      throw new KubeletError('StatusWriteFailed', `could not write the status of pod ${update.uid}: ${errorMessage(e)}`, { retryable: true, cause: e });
    }
    if (update.kind === 'removed') {
      this.#remember(update.uid);
      this.#applied.delete(update.uid);
    } else this.#noteApplied(update);
    metrics.updates.inc({ kind: update.kind, outcome });
    return outcome;
  }

  /** Whether `update` is older than the last update of its pod applied (both from pod workers). */
  #overtaken(update: PodStatusUpdate): boolean {
    if (update.kind === 'removed' || update.epoch === undefined) return false;
    const last = this.#applied.get(update.uid);
    if (last === undefined) return false;
    if (update.epoch !== last.epoch) return update.epoch < last.epoch;
    const at = Date.parse(update.at);
    return !Number.isNaN(at) && at < last.at;
  }

  #noteApplied(update: PodStatusUpdate): void {
    const at = Date.parse(update.at);
    if (update.epoch === undefined || Number.isNaN(at)) return;
    this.#applied.set(update.uid, { epoch: update.epoch, at });
  }

  #remember(uid: string): void {
    const now = this.#o.clock.now();
    this.#removed.set(uid, now);
    for (const [u, at] of this.#removed) {
      if (now - at <= REMOVED_MEMORY_MS) break; // insertion order: the rest is newer
      this.#removed.delete(u);
    }
  }

  #observeSync(at: string): void {
    const t = Date.parse(at);
    if (Number.isNaN(t)) return;
    this.#o.metrics.syncDuration.observe(Math.max(0, this.#o.clock.now() - t) / 1000);
  }
}
