/**
 * The kubelet's pod workers for one partition: at most one sync in flight per pod UID, updates
 * coalesced while a sync runs, a kill that cancels a running non-kill sync, no head-of-line
 * blocking between pods.
 *
 * Models pkg/kubelet/pod_workers.go (podWorkers.UpdatePod / podWorkerLoop / completeWork), with the
 * payload moved to KV: a poke carries no state, the sync reads the latest desired record, kill
 * request and worker record itself, so only "something changed" has to be remembered here.
 *
 * Per UID (one line per poke P, one box per sync S):
 *
 *   poke P1 ─┐              poke P2  poke P3 (coalesced)
 *            ▼                 │       │
 *   idle ──► [ S1 ··························· ] ──► ack P1 ──► [ S2 ·········· ] ──► ack P2,P3 ──► idle
 *            covers P1         pending=true                      covers P2,P3
 *
 *   kill poke K while a non-kill sync runs:
 *            [ S1 ·····✗ ]  (aborted at its next await; not an error; P1 stays held)
 *                       └──► [ S2 (reads sl_kill: terminating) ····· ] ──► ack P1,K
 *
 *   partition lost (lease renew failed): every in-flight sync is aborted at once, nothing more
 *   starts, held deliveries are nak'ed for the next owner (which resyncs the partition from KV).
 *
 * Invariant 1 ("at most one sync in flight per UID"): inside this object a UID has at most one
 * worker loop (`scheduled`), and the loop runs one sync at a time. Across processes it holds because
 * only the partition's lease owner runs syncs, and a lost lease aborts every sync before the lease
 * can expire and be acquired by another instance (bucket TTL 10 s > renew period 3 s).
 */
import { TraceFlags, trace, type Context } from '@opentelemetry/api';
import type { SyncPodType } from '@splitlet/api';
import { errorMessage, hasErrorCode } from '@splitlet/api';
import type { Clock, Log, PokeDelivery, TimerHandle } from '../ports.js';
import type { SyncLimiter } from './sync-limiter.js';

/** Why a sync was aborted: a kill arrived (`kill`), or the partition is stopping (`stop`). */
export class SyncAborted extends Error {
  override readonly name = 'SyncAborted';
  readonly code = 'SyncAborted';
  readonly kind: 'kill' | 'stop';
  constructor(kind: 'kill' | 'stop') {
    super(kind === 'kill' ? 'sync aborted: a kill request arrived' : 'sync aborted: the partition is stopping');
    this.kind = kind;
  }
}

/** True when `e` is (or was caused by) a {@link SyncAborted}. */
export function isSyncAborted(e: unknown, kind?: 'kill' | 'stop'): e is SyncAborted {
  return e instanceof SyncAborted && (kind === undefined || e.kind === kind);
}

/** What a sync gets from its worker. */
export interface SyncControl {
  /** Aborts when a kill arrives (while the sync is not itself a termination) or the partition stops. */
  readonly signal: AbortSignal;
  /** Aborts only when the partition stops (lease lost, release, shutdown): stop awaiting anything. */
  readonly stopSignal: AbortSignal;
  /**
   * The context of the newest sampled poke this sync covers, else of the newest poke (parent for
   * its span when no record names one): an unsampled periodic poke coalesced with a traced one does
   * not hide the traced one.
   */
  readonly trigger: Context | undefined;
  /** The kind of the newest poke this sync covers. */
  readonly triggerKind: SyncPodType | undefined;
  /** The sync is carrying out a termination: later kill pokes no longer abort it. */
  markTerminating(): void;
}

/** What a sync tells its worker. */
export interface SyncReturn {
  /** Sync this UID again right away (a worker state transition: sync → terminating → terminated). */
  readonly again?: boolean;
  /**
   * Sync this UID again after this long unless a poke comes first: the periodic resync of a settled
   * pod, whose sync wrote no worker record for sync-loop to schedule it by (settled-sync.ts).
   */
  readonly resyncAfterMs?: number;
}

/** The sync itself (the podSyncer). Handled errors are returned as data; a throw is an unexpected failure. */
export type SyncFunction = (uid: string, ctl: SyncControl) => Promise<SyncReturn | undefined>;

/** Test and log hook: every sync start and end, with the instance running it. */
export type SyncEventHook = (uid: string, event: 'start' | 'end', instance: string) => void;

/** Options of {@link PodWorkers}. */
export interface PodWorkersOptions {
  readonly partition: number;
  readonly instance: string;
  readonly sync: SyncFunction;
  /** Shared by every partition of the process (MAX_CONCURRENT_SYNCS). */
  readonly limiter: SyncLimiter;
  readonly clock: Clock;
  readonly logger: Log;
  /** @default Math.random */
  readonly random?: () => number;
  readonly onSyncEvent?: SyncEventHook;
  /**
   * How often the held deliveries are looked at during long syncs (only while some are held): each one held (or last extended)
   * at least half this long gets `working()`, so its ack deadline is extended at most 1.5× this
   * apart — well within the consumer's ack wait (30 s) — and a delivery a sync covers within
   * half the interval is never extended. @default 10000
   */
  readonly workingIntervalMs?: number;
  /** Base delay before retrying after an unexpected sync failure (jittered by 0.5). @default 10000 */
  readonly errorRetryMs?: number;
}

interface UidState {
  inFlight: { abort: AbortController; isKill: boolean } | undefined;
  /** A worker loop exists for this UID (queued for a slot or syncing). */
  scheduled: boolean;
  /** Something changed since the running sync started: sync again. */
  pending: boolean;
  /** Pokes received and not yet covered by a started sync. */
  pendingDeliveries: PokeDelivery[];
  /** Pokes covered by the running (or an aborted) sync: acked when a covering sync completes. */
  ackable: PokeDelivery[];
  lastKind: SyncPodType | undefined;
}

/**
 * The pod workers of one partition. Create one when the partition's lease is acquired; call
 * {@link PodWorkers.stop} before the lease is released (or right after it was lost).
 * `poke` never blocks: the consumer handler only records and returns.
 */
export class PodWorkers {
  readonly partition: number;
  readonly #o: PodWorkersOptions;
  readonly #states = new Map<string, UidState>();
  readonly #loops = new Set<Promise<void>>();
  readonly #retryTimers = new Map<string, TimerHandle>();
  readonly #stopAc = new AbortController();
  readonly #random: () => number;
  #stopping = false;
  #stopPromise: Promise<void> | undefined;
  #workingTimer: TimerHandle | undefined;
  /** When each held delivery was received or last extended (`working()`), by the clock. */
  readonly #extendedAt = new WeakMap<PokeDelivery, number>();
  #syncsStarted = 0;

  constructor(options: PodWorkersOptions) {
    this.#o = options;
    this.partition = options.partition;
    this.#random = options.random ?? Math.random;
  }

  /** Syncs started so far (for tests and progress). */
  get syncsStarted(): number {
    return this.#syncsStarted;
  }

  /** UIDs with a sync in flight right now. */
  get inFlight(): number {
    let n = 0;
    for (const s of this.#states.values()) if (s.inFlight) n++;
    return n;
  }

  /** UIDs with a worker loop (queued or syncing). */
  get busy(): number {
    let n = 0;
    for (const s of this.#states.values()) if (s.scheduled) n++;
    return n;
  }

  /** True once {@link PodWorkers.stop} was called. */
  get stopping(): boolean {
    return this.#stopping;
  }

  /**
   * Records a poke for `uid` (UpdatePod). Idle → a sync is scheduled; busy → pending (coalesced).
   * A `kill` poke aborts a running non-kill sync. The delivery is acked once a sync that started
   * after it completes. After `stop`, the delivery is nak'ed for the next owner.
   */
  poke(uid: string, kind: SyncPodType, delivery?: PokeDelivery): void {
    if (this.#stopping) {
      delivery?.nak(0);
      return;
    }
    let st = this.#states.get(uid);
    if (!st) {
      st = { inFlight: undefined, scheduled: false, pending: false, pendingDeliveries: [], ackable: [], lastKind: undefined };
      this.#states.set(uid, st);
    }
    if (delivery) {
      st.pendingDeliveries.push(delivery);
      this.#extendedAt.set(delivery, this.#o.clock.now());
      if (this.#workingTimer === undefined) this.#armWorkingTimer();
    }
    st.lastKind = kind;
    const timer = this.#retryTimers.get(uid);
    if (timer !== undefined) {
      this.#o.clock.clearTimeout(timer);
      this.#retryTimers.delete(uid);
    }
    if (st.scheduled) {
      st.pending = true;
      if (kind === 'kill' && st.inFlight && !st.inFlight.isKill) {
        this.#o.logger.debug('kill aborts running sync', { uid, partition: this.partition });
        st.inFlight.abort.abort(new SyncAborted('kill'));
      }
      return;
    }
    st.scheduled = true;
    const loop = this.#run(uid, st).finally(() => this.#loops.delete(loop));
    this.#loops.add(loop);
  }

  async #run(uid: string, st: UidState): Promise<void> {
    const o = this.#o;
    try {
      for (;;) {
        let release: () => void;
        try {
          release = await o.limiter.acquire(this.#stopAc.signal);
        } catch {
          return;
        }
        try {
          // A worker state transition (sync → terminating → terminated) runs the next state's sync
          // in the same slot, as the kubelet's pod worker goes on to it at once, instead of queueing
          // behind every other pod's sync; any other reason to sync again queues anew (fairness).
          let result: 'stopped' | 'done' | 'again';
          do {
            if (this.#stopping) return;
            st.pending = false;
            st.ackable.push(...st.pendingDeliveries);
            st.pendingDeliveries = [];
            result = await this.#syncOnce(uid, st);
            if (result === 'stopped') return;
          } while (result === 'again');
        } finally {
          release();
        }
        if (!st.pending || this.#stopping) return;
      }
    } catch (e) {
      // #syncOnce never throws; this is a programming error. Keep the loop bookkeeping sound.
      o.logger.error('pod worker loop failed', { uid, partition: this.partition, err: errorMessage(e) });
    } finally {
      st.scheduled = false;
      if (!this.#stopping && st.pendingDeliveries.length === 0 && st.ackable.length === 0 && !st.pending) {
        this.#states.delete(uid);
      }
    }
  }

  async #syncOnce(uid: string, st: UidState): Promise<'stopped' | 'done' | 'again'> {
    const o = this.#o;
    const ac = new AbortController();
    const onStop = (): void => ac.abort(new SyncAborted('stop'));
    this.#stopAc.signal.addEventListener('abort', onStop, { once: true });
    const inFlight = { abort: ac, isKill: false };
    st.inFlight = inFlight;
    const trigger = newestTrigger(st.ackable);
    const ctl: SyncControl = {
      signal: ac.signal,
      stopSignal: this.#stopAc.signal,
      trigger,
      triggerKind: st.lastKind,
      markTerminating: () => {
        inFlight.isKill = true;
      },
    };
    this.#syncsStarted++;
    o.logger.debug('sync start', { uid, partition: this.partition, instance: o.instance });
    o.onSyncEvent?.(uid, 'start', o.instance);
    let outcome: SyncReturn | undefined;
    let error: unknown;
    try {
      outcome = await o.sync(uid, ctl);
    } catch (e) {
      error = e;
    } finally {
      this.#stopAc.signal.removeEventListener('abort', onStop);
      st.inFlight = undefined;
      o.onSyncEvent?.(uid, 'end', o.instance);
      o.logger.debug('sync end', { uid, partition: this.partition, instance: o.instance });
    }
    const reason: unknown = ac.signal.aborted ? ac.signal.reason : undefined;
    if (isSyncAborted(reason, 'stop') || this.#stopAc.signal.aborted) return 'stopped';
    if (isSyncAborted(reason, 'kill')) {
      // Not an error: the kill sync runs next and acks what this one covered.
      st.pending = true;
      return 'done';
    }
    if (error !== undefined) {
      if (hasErrorCode(error, 'LeaseLost')) {
        // The partition manager stops us next; the held deliveries go back to the stream then.
        return 'stopped';
      }
      const delay = Math.round((o.errorRetryMs ?? 10_000) * (1 + 0.5 * this.#random()));
      o.logger.error('sync failed unexpectedly, will retry', { uid, partition: this.partition, err: errorMessage(error), retryInMs: delay });
      this.#ackAll(st.ackable);
      st.ackable = [];
      if (!st.pending) this.#scheduleRetry(uid, delay, trigger);
      return 'done';
    }
    this.#ackAll(st.ackable);
    st.ackable = [];
    if (outcome?.resyncAfterMs !== undefined && !st.pending && outcome.again !== true) this.#scheduleRetry(uid, outcome.resyncAfterMs, undefined);
    return outcome?.again === true ? 'again' : 'done';
  }

  #ackAll(ds: PokeDelivery[]): void {
    for (const d of ds) {
      try {
        d.ack();
      } catch (e) {
        this.#o.logger.warn('ack failed', { partition: this.partition, err: errorMessage(e) });
      }
    }
  }

  /** Syncs `uid` again after `delayMs`, in the failed sync's trace (`trigger`): a retry is the same episode's; a resync (no trigger) starts none. Any poke first cancels it. */
  #scheduleRetry(uid: string, delayMs: number, trigger: Context | undefined): void {
    const h = this.#o.clock.setTimeout(() => {
      this.#retryTimers.delete(uid);
      this.poke(uid, 'sync', trigger !== undefined ? localRetry(trigger) : undefined);
    }, delayMs);
    this.#retryTimers.set(uid, h);
  }

  /** Runs while deliveries are held: armed by the first one held, it stops at a pass that finds none (an idle partition has no timer). */
  #armWorkingTimer(): void {
    const every = this.#o.workingIntervalMs ?? 10_000;
    this.#workingTimer = this.#o.clock.setTimeout(() => {
      this.#workingTimer = undefined;
      if (this.#stopping) return;
      // A JetStream `+WPI` is a message: only deliveries whose deadline is getting old get one
      // (in a burst most are acked within the interval, and every pass used to extend them all).
      const now = this.#o.clock.now();
      const extend = (d: PokeDelivery): void => {
        if (now - (this.#extendedAt.get(d) ?? -Infinity) < every / 2) return;
        d.working();
        this.#extendedAt.set(d, now);
      };
      let held = false;
      for (const st of this.#states.values()) {
        for (const d of st.ackable) extend(d);
        for (const d of st.pendingDeliveries) extend(d);
        held ||= st.ackable.length > 0 || st.pendingDeliveries.length > 0;
      }
      if (held) this.#armWorkingTimer();
    }, every);
  }

  /**
   * Stops the workers. With `drain`, running syncs may finish (nothing new starts) for up to
   * `timeoutMs`; then, or at once without `drain`, every sync still running is aborted. Resolves
   * once every worker loop has returned; deliveries still held are nak'ed so the next owner gets
   * them. Idempotent.
   */
  stop(opts: { drain: boolean; timeoutMs: number }): Promise<void> {
    if (this.#stopPromise) return this.#stopPromise;
    this.#stopping = true;
    if (this.#workingTimer !== undefined) this.#o.clock.clearTimeout(this.#workingTimer);
    for (const h of this.#retryTimers.values()) this.#o.clock.clearTimeout(h);
    this.#retryTimers.clear();
    this.#stopPromise = (async () => {
      if (opts.drain && this.#loops.size > 0) {
        let timer: TimerHandle | undefined;
        await Promise.race([
          Promise.allSettled([...this.#loops]),
          new Promise<void>((resolve) => {
            timer = this.#o.clock.setTimeout(resolve, opts.timeoutMs);
          }),
        ]);
        if (timer !== undefined) this.#o.clock.clearTimeout(timer);
      }
      this.#stopAc.abort(new SyncAborted('stop'));
      while (this.#loops.size > 0) await Promise.allSettled([...this.#loops]);
      for (const st of this.#states.values()) {
        for (const d of [...st.ackable, ...st.pendingDeliveries]) {
          try {
            d.nak(0);
          } catch {
            // The connection is gone; the server redelivers after ack_wait.
          }
        }
      }
      this.#states.clear();
    })();
    return this.#stopPromise;
  }
}

/** The newest delivery's context that names a sampled span, else the newest context. */
/** The delivery of a local retry: nothing to acknowledge, the failed sync's trigger as its context. */
function localRetry(context: Context): PokeDelivery {
  return { ack: () => undefined, nak: () => undefined, working: () => undefined, context };
}

function newestTrigger(ds: readonly PokeDelivery[]): Context | undefined {
  let newest: Context | undefined;
  for (let i = ds.length - 1; i >= 0; i--) {
    const ctx = ds[i]?.context;
    if (ctx === undefined) continue;
    newest ??= ctx;
    const sc = trace.getSpanContext(ctx);
    if (sc !== undefined && trace.isSpanContextValid(sc) && (sc.traceFlags & TraceFlags.SAMPLED) !== 0) return ctx;
  }
  return newest;
}
