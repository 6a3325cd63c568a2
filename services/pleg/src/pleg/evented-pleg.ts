/**
 * The evented PLEG: the runtime's container events (as cri-adapter reports them on
 * `sl.<node>.runtimeevents.*`) update the runtime cache and produce the lifecycle events, while the
 * generic relist keeps running as a safety net with a long period; when the event stream is down,
 * silent or lost messages, pleg relists every period again until it is back.
 *
 * Models pkg/kubelet/pleg/evented.go (Start, processCRIEvents, updateGlobalCache, Healthy, the
 * relist period and threshold it gives the generic PLEG, the fallback). Differences: the runtime's
 * stream is cri-adapter's (it retries the subscription and reports the stream's state); pleg falls
 * back at the first sign of trouble rather than after `eventedPlegMaxStreamRetries`, and comes
 * back once the stream is live again and a full relist has caught up with what it missed.
 *
 *              new stream / gap / down / silent
 *     ┌───────────────────────────────────────────────────────────┐
 *     ▼                                                           │
 *   generic (relist every RELIST_PERIOD_MS) ── stream live, a full relist started after it ──▶ evented
 *                                                                   (relist every EVENTED_RELIST_PERIOD_MS;
 *                                                                    the heartbeat moves the cache time)
 *
 * A stream is one subscription of cri-adapter's to the runtime (a new id after every reconnect or
 * restart); its messages are numbered, so a new id or a gap means events may have been missed and
 * only a full relist that started afterwards can make the cache whole again.
 */
import type { Context } from '@opentelemetry/api';
import type { RuntimeEventMessage } from '@splitlet/api';
import { formatGoDuration } from '@splitlet/kube';
import type { Clock, HealthStatus, TimerHandle } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { GenericPleg, RelistResult, RuntimeReport } from './generic-pleg.js';
import type { PlegMetrics } from './metrics.js';

/** Why pleg relists in full because events may have been missed. */
export type ResyncReason = 'new_stream' | 'gap' | 'down' | 'timeout';

/** What drives the PLEG now. */
export type PlegMode = 'generic' | 'evented';

/** Dependencies and settings of {@link EventedPleg}. */
export interface EventedPlegOptions {
  readonly pleg: Pick<GenericPleg, 'relist' | 'applyReports' | 'updateGlobalCache' | 'lastRelistTime'>;
  /** The relist loop: its period is set per mode; a poke asks for a relist of the pod soon (without one: a full relist). */
  readonly loop: { setPeriod(ms: number): void; poke(uid?: string): void };
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: PlegMetrics;
  /** genericPlegRelistPeriod / Threshold. */
  readonly relistPeriodMs: number;
  readonly relistThresholdMs: number;
  /** The relist period and health threshold while evented (evented.go: 300 s / 10 min). */
  readonly eventedRelistPeriodMs: number;
  readonly eventedRelistThresholdMs: number;
  /** Without a message of the live stream for this long, it counts as down. */
  readonly streamTimeoutMs: number;
  readonly signal: AbortSignal;
}

interface Stream {
  readonly id: string;
  lastSeq: number;
  /** When its last message arrived. */
  heardAt: number;
  /** Live until its down message or its silence. */
  live: boolean;
  /** Since when a full relist is needed before its events make the cache whole; undefined once one ran. */
  resyncFrom: number | undefined;
}

/** A queued report, or a heartbeat's global cache time. */
type Queued = RuntimeReport | { readonly kind: 'mark'; readonly at: number };

/** The evented PLEG. Feed it with {@link receive}; drive relists through {@link relist}. */
export class EventedPleg {
  readonly #o: EventedPlegOptions;
  #stream: Stream | undefined;
  #mode: PlegMode = 'generic';
  readonly #queue: Queued[] = [];
  #draining = false;
  #drained: Promise<void> = Promise.resolve();
  /** When a heartbeat's cache time was last applied: the event path's progress. */
  #lastHeartbeatAt: number | undefined;
  #timer: TimerHandle | undefined;

  constructor(options: EventedPlegOptions) {
    this.#o = options;
    options.metrics.evented.set(0);
    options.signal.addEventListener('abort', () => this.#stopTimer(), { once: true });
  }

  /** What drives the PLEG now. */
  get mode(): PlegMode {
    return this.#mode;
  }

  /**
   * One relist (the relist loop's), then: a full relist that started after the stream needed a
   * resync makes the stream's events whole again (evented mode when it is live).
   */
  async relist(triggers: readonly Context[], uids: readonly string[] | undefined): Promise<RelistResult> {
    const r = await this.#o.pleg.relist(triggers, uids);
    const s = this.#stream;
    const t0 = this.#o.pleg.lastRelistTime;
    if (uids === undefined && r.ok && s !== undefined && s.resyncFrom !== undefined && t0 !== undefined && t0 >= s.resyncFrom) {
      s.resyncFrom = undefined;
      this.#updateMode();
    }
    return r;
  }

  /**
   * One message of cri-adapter's event stream, in arrival order, with the trace context it came in.
   * A new stream or a gap in the numbering asks for a full relist; reports are queued and applied in
   * order; a heartbeat of a whole stream moves the global cache time after the reports before it.
   */
  receive(msg: RuntimeEventMessage, trigger?: Context): void {
    const now = this.#o.clock.now();
    let s = this.#stream;
    if (s === undefined || s.id !== msg.stream) {
      if (s !== undefined && s.live) this.#o.logger.info('a new runtime event stream replaces the previous one', { stream: msg.stream, previous: s.id });
      s = this.#stream = { id: msg.stream, lastSeq: msg.seq, heardAt: now, live: true, resyncFrom: undefined };
      this.#resync('new_stream', now, { stream: msg.stream });
    } else {
      if (msg.seq !== s.lastSeq + 1) this.#resync('gap', now, { stream: s.id, expected: s.lastSeq + 1, got: msg.seq });
      s.lastSeq = msg.seq;
      s.heardAt = now;
    }
    if (msg.type === 'kubelet.runtime.EventStreamState.v1' && msg.state === 'down') {
      s.live = false;
      this.#resync('down', now, { stream: s.id, reason: msg.reason });
      return;
    }
    if (!s.live) {
      // Silent for a while, but nothing is missing: its events drive the PLEG again.
      s.live = true;
      this.#updateMode();
    }
    this.#startTimer();
    switch (msg.type) {
      case 'kubelet.runtime.EventStreamState.v1':
        if (s.resyncFrom === undefined) this.#enqueue({ kind: 'mark', at: msg.at });
        return;
      case 'kubelet.runtime.ContainerEvents.v1':
        this.#enqueue({ kind: 'part', uid: msg.uid, sandboxId: msg.sandboxId, status: msg.status, observedAt: msg.observedAt, trigger });
        return;
      case 'kubelet.runtime.PodOperated.v1':
        this.#enqueue({ kind: 'operation', uid: msg.uid, status: msg.status, observedAt: msg.observedAt, timestamp: msg.timestamp, trigger });
        return;
    }
  }

  /** Resolves once every message received so far has been applied. */
  async idle(): Promise<void> {
    while (this.#draining) await this.#drained;
  }

  /**
   * Healthy while pleg was last seen active — a full relist, or (events flowing) a heartbeat of the
   * stream applied — within the mode's threshold (3 min generic, 10 min evented).
   *
   * Models GenericPLEG.Healthy with the thresholds EventedPLEG gives it.
   */
  healthy(): HealthStatus {
    const relisted = this.#o.pleg.lastRelistTime;
    const candidates = [relisted, this.#lastHeartbeatAt].filter((t): t is number => t !== undefined);
    if (candidates.length === 0) return { ok: false, reason: 'pleg has yet to be successful' };
    const last = Math.max(...candidates);
    this.#o.metrics.lastSeen.set(Math.floor(last / 1000));
    const threshold = this.#mode === 'evented' ? this.#o.eventedRelistThresholdMs : this.#o.relistThresholdMs;
    const elapsed = this.#o.clock.now() - last;
    if (elapsed > threshold) return { ok: false, reason: `pleg was last seen active ${formatGoDuration(elapsed)} ago; threshold is ${formatGoDuration(threshold)}` };
    return { ok: true };
  }

  /**
   * Events may have been missed (a new stream, a gap: the stream's events make the cache whole only
   * after a full relist that started from `now`), or are not coming (down, silent): relist in full
   * now, and every period until the stream is live and whole again.
   */
  #resync(reason: ResyncReason, now: number, fields: Record<string, unknown>): void {
    const s = this.#stream;
    if (s !== undefined && (reason === 'new_stream' || reason === 'gap')) s.resyncFrom ??= now;
    this.#o.metrics.eventResyncs.inc({ reason });
    if (reason === 'new_stream') this.#o.logger.info('a new runtime event stream: relisting every pod to catch up with what it did not carry', fields);
    else this.#o.logger.warn(`runtime events may be missing (${reason}); relisting every pod`, fields);
    this.#updateMode();
    this.#o.loop.poke();
  }

  /** Evented while the stream is live and whole; the relist period and the gauge follow. */
  #updateMode(): void {
    const s = this.#stream;
    const next: PlegMode = s !== undefined && s.live && s.resyncFrom === undefined ? 'evented' : 'generic';
    if (next === this.#mode) return;
    this.#mode = next;
    this.#o.metrics.evented.set(next === 'evented' ? 1 : 0);
    this.#o.loop.setPeriod(next === 'evented' ? this.#o.eventedRelistPeriodMs : this.#o.relistPeriodMs);
    if (next === 'evented') {
      this.#o.logger.info("the runtime's events drive the PLEG; relisting every evented period", { stream: s?.id, relistPeriodMs: this.#o.eventedRelistPeriodMs });
    } else {
      this.#o.logger.info('relisting every period until the runtime event stream is back', { relistPeriodMs: this.#o.relistPeriodMs });
    }
  }

  #enqueue(item: Queued): void {
    this.#queue.push(item);
    if (this.#draining) return;
    this.#draining = true;
    // Everything one read of the connection delivered goes into one batch.
    this.#drained = new Promise<void>((resolve) => queueMicrotask(resolve)).then(() => this.#drain());
  }

  async #drain(): Promise<void> {
    const { pleg, metrics, logger, clock } = this.#o;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0);
        const reports = batch.filter((q): q is RuntimeReport => q.kind !== 'mark');
        if (reports.length > 0) {
          const r = await pleg.applyReports(reports);
          if (r.stale > 0) metrics.staleReports.inc(r.stale);
          for (const uid of r.uncertain) this.#o.loop.poke(uid);
          const now = clock.now();
          for (const q of reports) if (q.kind === 'part') metrics.eventedLatency.observe(Math.max(0, now - q.observedAt) / 1000);
        }
        let mark: number | undefined;
        for (const q of batch) if (q.kind === 'mark') mark = Math.max(mark ?? 0, q.at);
        if (mark !== undefined && this.#stream?.resyncFrom === undefined) {
          await pleg.updateGlobalCache(mark);
          this.#lastHeartbeatAt = clock.now();
        }
      }
    } catch (e) {
      logger.error('applying runtime events failed', { err: e });
    } finally {
      this.#draining = false;
    }
  }

  /** Checks the live stream's silence until the signal aborts. */
  #startTimer(): void {
    if (this.#timer !== undefined || this.#o.signal.aborted) return;
    const check = Math.max(100, Math.floor(this.#o.streamTimeoutMs / 4));
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      const s = this.#stream;
      if (s === undefined || !s.live) return;
      const now = this.#o.clock.now();
      if (now - s.heardAt > this.#o.streamTimeoutMs) {
        s.live = false;
        this.#resync('timeout', now, { stream: s.id, silentMs: now - s.heardAt });
        return;
      }
      this.#startTimer();
    }, check);
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
