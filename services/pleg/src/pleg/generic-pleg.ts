/**
 * The generic PLEG: relist the runtime, diff against the previous relist, publish lifecycle events
 * and keep the runtime pod cache.
 *
 * Models pkg/kubelet/pleg/generic.go (GenericPLEG.Relist, updateCache, getPodIPs, Healthy).
 *
 * One relist, in order:
 *
 *     t0 = now ─ request relist ─┬─ failed: log, count, stop (the mark keeps its old time)
 *                                └─ ok: relistTime = t0
 *          for each pod seen now or before, with events or a changed status:
 *              put RuntimeCacheEntry{timestamp: t0} (or delete it when the pod is gone)
 *              then publish its events (ContainerChanged is filtered, as the kubelet does)
 *          put RelistMark{timestamp: t0}  (after every pod entry: GetNewerThan relies on it)
 *
 * A relist targeted at some pods (the UIDs of cri-adapter's pokes) reads and compares only those
 * and writes no RelistMark; the periodic full relist stays the safety net.
 *
 * The evented PLEG's reports (the runtime's container events and what cri-adapter's operations read,
 * see {@link RuntimeReport}) are applied the same way as a targeted relist's pods — diff, cache
 * entry, events — by {@link GenericPleg.applyReports}; relists, reports and the global cache time
 * are applied one at a time. Each pod remembers when its record was last observed by a relist
 * (`baseAt`) and by a report (`msgAt`): a relist that started before a report it is applied after
 * leaves that pod alone, and a report older than the relist applied before it is dropped, so the
 * two paths never take a pod's record back in time. Entry timestamps never go back either.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, trace, type Attributes, type Context, type Link, type Span, type Tracer } from '@opentelemetry/api';
import { RUNTIME_CLOCK_SKEW_MS, type PodLifecycleEvent, type RuntimeCacheEntry, type RuntimePodStatus } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { formatGoDuration, podIPsAfterTeardown } from '@splitlet/kube';
import type { Clock, HealthStatus } from '@splitlet/service';
import { injectContext, podSpanAttributes, unsampledContext, type Logger } from '@splitlet/telemetry';
import { EventsPartlyPublished, type DesiredPodReader, type LifecycleEventSink, type RuntimeCacheStore, type RuntimeLister } from '../ports.js';
import { computePodEvents, type PlegEvent } from './generate-events.js';
import type { PlegMetrics } from './metrics.js';
import { recordEqual } from './record-equal.js';
import { diedRegularContainers, restartEpisode } from './restart-episodes.js';
import { withSandboxPart } from './sandbox-part.js';

/** A pod's runtime episode as kept in its cache entries (RuntimeCacheEntry.episode). */
type Episode = NonNullable<RuntimeCacheEntry['episode']>;

/** One pod's change, ready to be written and published. */
interface PodWork {
  readonly uid: string;
  /** The new record; `undefined`: the pod is gone (its entry is deleted). */
  readonly next: RuntimePodStatus | undefined;
  readonly events: readonly PlegEvent[];
  /** The entry's timestamp. */
  readonly stamp: number;
  /** The pod's observation times once written (`stamp` is set from the field above). */
  readonly times: PodTimes;
  /** When the pod was seen gone, if `next` is undefined. */
  readonly removedAt: number;
}

/** Dependencies and settings of {@link GenericPleg}. */
export interface GenericPlegOptions {
  readonly lister: RuntimeLister;
  readonly cache: RuntimeCacheStore;
  readonly events: LifecycleEventSink;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: PlegMetrics;
  /** Unhealthy when the last successful relist is older than this (genericPlegRelistThreshold). */
  readonly relistThresholdMs: number;
  /** Spans a relist that changed something. @default no spans */
  readonly tracer?: Tracer;
  /**
   * The desired pods, to start a new trace (a `ContainerDied` root span linked to the pod's
   * creation trace) when a regular container of a desired pod died after its start. Needs `tracer`.
   * @default deaths are traced in the relist's trace
   */
  readonly desired?: DesiredPodReader;
}

/**
 * One report from cri-adapter's evented PLEG path, as pleg applies it to a pod's record:
 * - `part`: one sandbox of the pod and its containers as the runtime's newest event showed them at
 *   `observedAt` (none left: the sandbox was deleted); the rest of the pod's record stays;
 * - `operation`: the whole pod as a SyncPod/KillPod read it from `observedAt` on, and the entry
 *   `timestamp` it must get (later than the operation's reply).
 * `trigger`: the trace context it came in (the operation's), when any.
 */
export type RuntimeReport =
  | {
      readonly kind: 'part';
      readonly uid: string;
      readonly sandboxId: string;
      readonly status: RuntimePodStatus;
      readonly observedAt: number;
      readonly trigger?: Context | undefined;
    }
  | {
      readonly kind: 'operation';
      readonly uid: string;
      readonly status: RuntimePodStatus;
      readonly observedAt: number;
      readonly timestamp: number;
      readonly trigger?: Context | undefined;
    };

/** What pleg knows about when a pod's record was observed. */
interface PodTimes {
  /** The pod's cache entry timestamp (never goes back). */
  stamp: number;
  /** The start of the last relist whose view of the pod was applied. */
  baseAt: number;
  /** The newest `observedAt` of the reports applied. */
  msgAt: number;
}

/** The outcome of applying reports. */
export interface ApplyResult {
  /** Events published. */
  readonly events: number;
  /** Pods whose cache entry was written or deleted. */
  readonly changedPods: number;
  /** Reports dropped as older than a relist applied before them. */
  readonly stale: number;
  /**
   * Pods with a report observed within RUNTIME_CLOCK_SKEW_MS of the relist (or operation's read)
   * before it: its order against that read is unknown, so the pod should be relisted.
   */
  readonly uncertain: readonly string[];
}

/** The outcome of one relist. */
export interface RelistResult {
  readonly ok: boolean;
  /** Events published. */
  readonly events: number;
  /** Pods whose cache entry was written or deleted. */
  readonly changedPods: number;
}

/**
 * The generic PLEG. Not reentrant: the caller (the relist loop) never runs two relists at once.
 */
export class GenericPleg {
  readonly #o: GenericPlegOptions;
  /** podRecords: the pods as of the last relist (and as last written to the cache). */
  readonly #records = new Map<string, RuntimePodStatus>();
  /** Each pod's latest runtime episode, carried into its later cache entries. */
  readonly #episodes = new Map<string, Episode>();
  /** When each pod's record was observed (see the file comment). */
  readonly #times = new Map<string, PodTimes>();
  /** Pods whose record a relist or report removed, with that observation's time (until a full relist covers it). */
  readonly #removedAt = new Map<string, number>();
  #relistTime: number | undefined;
  /** The last relist mark written (the global cache time only moves forward). */
  #markAt = 0;
  /** The start of the last successful full relist: a pod it did not see is older than that. */
  #lastFullAt: number | undefined;
  /** Relists, reports and mark updates run one at a time, in call order. */
  #serial: Promise<unknown> = Promise.resolve();
  /** When the first failed relist was tried, while none has succeeded. */
  #waitingSince: number | undefined;
  /** Whether a relist has succeeded since this instance started. */
  #answered = false;
  /** Whether the wait for the runtime's first answer was logged. */
  #toldWaiting = false;

  constructor(options: GenericPlegOptions) {
    this.#o = options;
  }

  /**
   * Starts from the cache the previous pleg wrote, so a restart does not replay events for pods
   * whose state did not change meanwhile.
   */
  async loadCache(): Promise<void> {
    const snapshot = await this.#o.cache.load();
    this.#records.clear();
    this.#episodes.clear();
    this.#times.clear();
    this.#removedAt.clear();
    for (const [uid, entry] of snapshot.entries) {
      this.#records.set(uid, entry.status);
      this.#times.set(uid, { stamp: entry.timestamp, baseAt: entry.timestamp, msgAt: 0 });
      if (entry.episode !== undefined) this.#episodes.set(uid, entry.episode);
    }
    this.#markAt = snapshot.mark?.timestamp ?? 0;
    this.#o.logger.info('loaded the runtime cache', { pods: this.#records.size, relistMark: snapshot.mark?.timestamp });
  }

  /** The pods as of the last relist (for tests and diagnostics). */
  get pods(): ReadonlyMap<string, RuntimePodStatus> {
    return this.#records;
  }

  /** Time (ms) of the last successful relist, if any. */
  get lastRelistTime(): number | undefined {
    return this.#relistTime;
  }

  /**
   * Runs one relist. Never throws: failures are logged, counted and reported in the result.
   *
   * Tracing (with a tracer): a relist that serves pokes carrying a trace context (`triggers`, from
   * the relist loop) runs in a `relist` span, child of the first poke's context and linked to the
   * others, so the runtime request, the cache writes and the `send sl.{node}.pleg.{uid}` of the
   * pods it found changed are part of the trace that changed the runtime. A periodic relist makes
   * its runtime request unsampled (no trace here or in cri-adapter) and gets a root `relist` span
   * only when it found a change.
   *
   * Except a pod whose regular container died after its start ({@link restartEpisode}): its cache
   * write and events go into a new trace, a root `ContainerDied` span linked to the pod's creation
   * trace and to the relist that saw it; its cache entries carry that trace as the pod's episode.
   *
   * With `uids` (the pods cri-adapter's pokes named), the relist is targeted: only those pods are
   * read from the runtime and compared, and the relist mark is not written (the other pods were
   * not looked at); health and the interval metric count full relists only.
   */
  relist(triggers: readonly Context[] = [], uids?: readonly string[]): Promise<RelistResult> {
    return this.#exclusive(() => this.#relistTraced(triggers, uids));
  }

  /** Runs `fn` after every relist, report batch and mark update called before it. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#serial.then(fn, fn);
    this.#serial = run.catch(() => undefined);
    return run;
  }

  async #relistTraced(triggers: readonly Context[], uids: readonly string[] | undefined): Promise<RelistResult> {
    const { clock, metrics } = this.#o;
    if (uids === undefined && this.#relistTime !== undefined) metrics.relistInterval.observe((clock.now() - this.#relistTime) / 1000);
    const timestamp = clock.now();
    try {
      const traced = this.#o.tracer === undefined ? undefined : tracedParent(triggers);
      const triggerTraceIds = new Set<string>();
      for (const t of triggers) {
        const sc = trace.getSpanContext(t);
        if (sc !== undefined && trace.isSpanContextValid(sc) && (sc.traceFlags & TraceFlags.SAMPLED) !== 0) triggerTraceIds.add(sc.traceId);
      }
      if (traced === undefined || this.#o.tracer === undefined) return await this.#relist(timestamp, false, triggerTraceIds, uids);
      const span = this.#o.tracer.startSpan(
        'relist',
        {
          startTime: timestamp,
          links: traced.links,
          attributes: { 'splitlet.pleg.trigger': 'poke', 'splitlet.pleg.pokes': triggers.length, ...(uids !== undefined ? { 'splitlet.pleg.targeted_pods': uids.length } : {}) },
        },
        traced.parent,
      );
      try {
        const r = await context.with(trace.setSpan(traced.parent, span), () => this.#relist(timestamp, true, triggerTraceIds, uids));
        span.setAttributes({ 'splitlet.pleg.changed_pods': r.changedPods, 'splitlet.pleg.events': r.events });
        if (!r.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: 'GenericPLEG: Unable to retrieve pods' });
        return r;
      } finally {
        span.end();
      }
    } finally {
      metrics.relistDuration.observe((clock.now() - timestamp) / 1000);
    }
  }

  /**
   * Logs a failed relist. Until the runtime first answered, and for at most the relist threshold
   * after the first try, a failure is the node starting (pleg's first relist can come before
   * cri-adapter subscribed): it is logged once, at info, not as an error each second. After that
   * every failure is an error, as in the kubelet.
   */
  #logFailure(timestamp: number, e: unknown): void {
    const { logger, relistThresholdMs } = this.#o;
    if (!this.#answered) {
      this.#waitingSince ??= timestamp;
      if (timestamp - this.#waitingSince < relistThresholdMs) {
        if (!this.#toldWaiting) logger.info('GenericPLEG: waiting for the runtime to answer its first relist', { err: errorMessage(e), thresholdMs: relistThresholdMs });
        this.#toldWaiting = true;
        return;
      }
    }
    logger.error('GenericPLEG: Unable to retrieve pods', { err: errorMessage(e) });
  }

  /**
   * The relist proper; `inSpan` when a poke's `relist` span is active; the trace ids of the sampled
   * pokes it serves; `uids` for a targeted relist.
   */
  async #relist(timestamp: number, inSpan: boolean, triggerTraceIds: ReadonlySet<string>, uids: readonly string[] | undefined): Promise<RelistResult> {
    const { metrics } = this.#o;
    let pods: readonly RuntimePodStatus[];
    try {
      pods = inSpan ? await this.#o.lister.relist(uids) : await context.with(unsampledContext(), () => this.#o.lister.relist(uids));
    } catch (e) {
      metrics.relistErrors.inc();
      this.#logFailure(timestamp, e);
      if (inSpan) trace.getActiveSpan()?.recordException(e instanceof Error ? e : errorMessage(e));
      return { ok: false, events: 0, changedPods: 0 };
    }
    this.#answered = true;
    if (uids === undefined) {
      this.#relistTime = timestamp;
      metrics.lastSeen.set(Math.floor(timestamp / 1000));
    }

    const current = new Map<string, RuntimePodStatus>();
    for (const p of pods) current.set(p.uid, p);
    const work: PodWork[] = [];
    for (const uid of uids ?? new Set([...this.#records.keys(), ...current.keys()])) {
      // A report observed after this relist started was applied meanwhile: this view may be older.
      if ((this.#times.get(uid)?.msgAt ?? -Infinity) > timestamp || (this.#removedAt.get(uid) ?? -Infinity) > timestamp) continue;
      const before = this.#records.get(uid);
      const seen = current.get(uid);
      const next = seen === undefined ? undefined : { ...seen, ips: podIPsAfterTeardown(before, seen) };
      const times = this.#times.get(uid);
      if (times !== undefined) times.baseAt = timestamp;
      // An unchanged record has no events (they follow from its containers' and sandboxes' states).
      if (recordEqual(before, next)) continue;
      const events = computePodEvents(before, next);
      work.push({ uid, next, events, stamp: Math.max(times?.stamp ?? 0, timestamp), times: { stamp: 0, baseAt: timestamp, msgAt: times?.msgAt ?? 0 }, removedAt: timestamp });
    }
    if (uids === undefined) {
      // The full relist saw every pod: older removals need no remembering.
      for (const [uid, at] of this.#removedAt) if (at < timestamp) this.#removedAt.delete(uid);
      this.#lastFullAt = timestamp;
    }
    if (work.length === 0) {
      if (uids === undefined) await this.#putMark(timestamp);
      return { ok: true, events: 0, changedPods: 0 };
    }
    const apply = async (): Promise<RelistResult> => {
      const published = await Promise.all(work.map((w) => this.#applyPod(w, triggerTraceIds)));
      if (uids === undefined) await this.#putMark(timestamp);
      return { ok: true, events: published.reduce((a, b) => a + b, 0), changedPods: work.length };
    };
    return inSpan ? apply() : this.#inSpan('relist', timestamp, { 'splitlet.pleg.trigger': 'period', 'splitlet.pleg.changed_pods': work.length }, apply);
  }

  /**
   * Healthy while the last successful relist is at most the threshold old.
   * Models GenericPLEG.Healthy (also refreshes kubelet_pleg_last_seen_seconds).
   */
  healthy(): HealthStatus {
    if (this.#relistTime === undefined) return { ok: false, reason: 'pleg has yet to be successful' };
    this.#o.metrics.lastSeen.set(Math.floor(this.#relistTime / 1000));
    const elapsed = this.#o.clock.now() - this.#relistTime;
    if (elapsed > this.#o.relistThresholdMs) {
      return {
        ok: false,
        reason: `pleg was last seen active ${formatGoDuration(elapsed)} ago; threshold is ${formatGoDuration(this.#o.relistThresholdMs)}`,
      };
    }
    return { ok: true };
  }

  /**
   * Writes one pod's cache entry, then publishes its events — in a new `ContainerDied` trace when
   * the change begins an episode. Returns how many events were published.
   */
  async #applyPod(w: PodWork, triggerTraceIds: ReadonlySet<string>): Promise<number> {
    const begun = await this.#beginEpisode(w, triggerTraceIds);
    if (begun === undefined) return this.#writeAndPublish(w, this.#episodes.get(w.uid));
    try {
      return await context.with(trace.setSpan(ROOT_CONTEXT, begun.span), () => this.#writeAndPublish(w, begun.episode));
    } finally {
      begun.span.end();
    }
  }

  /**
   * The root span of a new episode when the work's events report a regular container of a desired
   * pod dead after its start (see {@link restartEpisode}); `undefined` otherwise, or when the desired
   * pod cannot be read (the death is then traced in the relist's trace, with a warning).
   */
  async #beginEpisode(w: PodWork, triggerTraceIds: ReadonlySet<string>): Promise<{ span: Span; episode: Episode } | undefined> {
    const { tracer, desired, logger } = this.#o;
    if (tracer === undefined || desired === undefined) return undefined;
    const { uid, next, events, stamp: timestamp } = w;
    const before = this.#records.get(uid);
    const died = diedRegularContainers(before, next, events);
    const first = died[0];
    if (first === undefined) return undefined;
    let decision;
    try {
      decision = restartEpisode(await desired.get(uid), triggerTraceIds);
    } catch (e) {
      logger.warn("could not read the desired pod; tracing its container's death in the relist's trace", { podUID: uid, err: errorMessage(e) });
      return undefined;
    }
    if (!decision.begins) {
      logger.debug('a container died; no new episode', { podUID: uid, containers: died.map((c) => c.name), why: decision.why });
      return undefined;
    }
    const links: Link[] = [];
    if (decision.creation !== undefined) links.push({ context: decision.creation, attributes: { 'splitlet.link': 'creation' } });
    const observer = trace.getSpanContext(context.active());
    if (observer !== undefined && trace.isSpanContextValid(observer) && (observer.traceFlags & TraceFlags.SAMPLED) !== 0) {
      links.push({ context: observer, attributes: { 'splitlet.link': 'observed by' } });
    }
    const pod = next ?? before;
    const attributes: Attributes = {
      ...podSpanAttributes({ uid, name: pod?.name ?? '', namespace: pod?.namespace ?? '' }),
      'k8s.container.name': first.name,
      'k8s.container.restart_count': first.restartCount,
      'container.id': first.id,
      'splitlet.pleg.died_containers': died.map((c) => c.name),
    };
    if (first.exitCode !== undefined) attributes['splitlet.container.exit_code'] = first.exitCode;
    if (first.reason !== undefined) attributes['splitlet.container.reason'] = first.reason;
    const span = tracer.startSpan('ContainerDied', { kind: SpanKind.INTERNAL, root: true, startTime: timestamp, links, attributes }, ROOT_CONTEXT);
    return { span, episode: { trace: injectContext(trace.setSpan(ROOT_CONTEXT, span)), at: timestamp } };
  }

  /** Writes one pod's cache entry (with its episode), then publishes its events. */
  async #writeAndPublish(w: PodWork, episode: Episode | undefined): Promise<number> {
    const { cache, logger, metrics } = this.#o;
    const { uid, next, events, stamp } = w;
    let revision: number | undefined;
    try {
      if (next === undefined) await cache.delete(uid);
      else revision = await cache.put({ type: 'kubelet.pleg.RuntimeCacheEntry.v1', uid, timestamp: stamp, status: next, ...(episode !== undefined ? { episode } : {}) });
    } catch (e) {
      // Keep the old record so the next relist sees the change (and its events) again.
      logger.error('PLEG: Ignoring events for pod: could not update the runtime cache', { podUID: uid, err: errorMessage(e) });
      trace.getActiveSpan()?.recordException(e instanceof Error ? e : errorMessage(e));
      return 0;
    }
    if (next === undefined) {
      this.#records.delete(uid);
      this.#episodes.delete(uid);
      this.#times.delete(uid);
      this.#removedAt.set(uid, w.removedAt);
    } else {
      this.#records.set(uid, next);
      this.#times.set(uid, { ...w.times, stamp });
      this.#removedAt.delete(uid);
      if (episode !== undefined) this.#episodes.set(uid, episode);
    }
    const at = new Date(stamp).toISOString();
    const msgs: PodLifecycleEvent[] = [];
    // Filter out events that are not reliable and no other components use yet (generic.go).
    for (const e of events) {
      if (e.event === 'ContainerChanged') continue;
      const msg: PodLifecycleEvent = { type: 'kubelet.pleg.PodLifecycleEvent.v1', uid: e.uid, event: e.event, data: e.data, at };
      if (e.containerName !== undefined) msg.containerName = e.containerName;
      if (revision !== undefined) msg.cacheRevision = revision;
      msgs.push(msg);
    }
    if (msgs.length === 0) return 0;
    // The write's events together: the one sync they start reads the entry whole (sync-loop pokes once per write).
    try {
      await this.#o.events.publish(msgs);
      return msgs.length;
    } catch (err) {
      const published = err instanceof EventsPartlyPublished ? err.published : 0;
      const lost = msgs.slice(published);
      metrics.discardEvents.inc(lost.length);
      logger.error(lost.length === 1 ? 'could not publish a PLEG event, discarding it' : `could not publish ${lost.length} PLEG events, discarding them`, {
        podUID: uid,
        event: lost.map((m) => m.event).join(', '),
        containerID: lost.map((m) => m.data).join(', '),
        err: errorMessage(err),
      });
      return published;
    }
  }

  /**
   * Applies reports from the runtime's event stream (see {@link RuntimeReport}), after any relist
   * or report batch in progress, as a targeted relist's results are applied: per pod, in order, onto
   * its record — a part replaces its sandbox and that sandbox's containers, an operation's status
   * the whole pod — dropping what is older than the relist applied before it; then, when the record
   * changed (or an operation's timestamp is newer than the entry's), the pod's entry is written with
   * the newest observation time and its lifecycle events are published. Never throws.
   *
   * Tracing: a pod whose reports came in a sampled trace context (the operation's that changed it)
   * is applied in a `runtime events` span, child of the first such context and linked to the
   * others; the other changed pods in one root `runtime events` span. A regular container's death
   * begins an episode as in a relist.
   *
   * Models EventedPLEG.processCRIEvents (cache.Set with the event's time, the pod's IPs kept after
   * teardown), with generic.go's diff for the events.
   */
  applyReports(reports: readonly RuntimeReport[]): Promise<ApplyResult> {
    return this.#exclusive(() => this.#applyReports(reports));
  }

  async #applyReports(reports: readonly RuntimeReport[]): Promise<ApplyResult> {
    const byPod = new Map<string, RuntimeReport[]>();
    for (const r of reports) {
      const list = byPod.get(r.uid);
      if (list === undefined) byPod.set(r.uid, [r]);
      else list.push(r);
    }
    let stale = 0;
    const uncertain = new Set<string>();
    const traced: Array<{ work: PodWork; triggers: Context[] }> = [];
    const untraced: PodWork[] = [];
    for (const [uid, list] of byPod) {
      const before = this.#records.get(uid);
      const prior = this.#times.get(uid);
      // What a report must not be older than: the relist (or an operation's read, which is a
      // relist of the pod) that last saw the pod, or (a pod pleg does not know) the one that saw it
      // gone or did not see it. An event that reaches pleg after the read of the operation that
      // caused it (the event stream lags behind the operation's replies) is older than that read.
      let floor = prior?.baseAt ?? Math.max(this.#removedAt.get(uid) ?? -Infinity, this.#lastFullAt ?? -Infinity);
      let next = before;
      let stamp = prior?.stamp ?? 0;
      let msgAt = prior?.msgAt ?? 0;
      let removedAt = this.#removedAt.get(uid) ?? 0;
      for (const r of list) {
        if (r.kind === 'operation') stamp = Math.max(stamp, r.timestamp);
        const applied = r.kind === 'part' ? withSandboxPart(next, r.uid, r.sandboxId, r.status) : r.status;
        // Too close to the read before it to tell which came first (different clocks), and it says
        // something else: the runtime is asked again.
        if (Math.abs(r.observedAt - floor) < RUNTIME_CLOCK_SKEW_MS && !sameObjects(applied, next)) uncertain.add(uid);
        if (r.observedAt < floor) {
          stale++;
          continue;
        }
        next = applied;
        if (r.kind === 'operation') floor = r.observedAt;
        msgAt = Math.max(msgAt, r.observedAt);
        stamp = Math.max(stamp, r.observedAt);
        if (next === undefined) removedAt = r.observedAt;
      }
      if (next !== undefined) next = { ...next, ips: podIPsAfterTeardown(before, next) };
      const times = { stamp: 0, baseAt: floor, msgAt };
      const unchanged = recordEqual(before, next);
      // Unchanged and no newer time to give its entry: nothing to write (only the times move on).
      if (unchanged && (next === undefined || stamp <= (prior?.stamp ?? 0))) {
        if (prior !== undefined) {
          prior.msgAt = msgAt;
          prior.baseAt = floor;
        }
        continue;
      }
      const work: PodWork = { uid, next, events: unchanged ? [] : computePodEvents(before, next), stamp, times, removedAt };
      const triggers = list.flatMap((r) => (r.trigger === undefined ? [] : [r.trigger]));
      if (tracedParent(triggers) !== undefined) traced.push({ work, triggers });
      else untraced.push(work);
    }
    const now = this.#o.clock.now();
    const results = await Promise.all([
      ...traced.map(({ work, triggers }) => this.#applyInTrace(work, triggers, now)),
      untraced.length === 0
        ? 0
        : this.#inSpan('runtime events', now, { 'splitlet.pleg.trigger': 'event', 'splitlet.pleg.changed_pods': untraced.length }, async () => {
            const published = await Promise.all(untraced.map((w) => this.#applyPod(w, new Set())));
            return published.reduce((a, b) => a + b, 0);
          }),
    ]);
    return { events: results.reduce((a, b) => a + b, 0), changedPods: traced.length + untraced.length, stale, uncertain: [...uncertain] };
  }

  /** One pod's work in a `runtime events` span of the trace its reports came in. */
  async #applyInTrace(w: PodWork, triggers: readonly Context[], startTime: number): Promise<number> {
    const traced = tracedParent(triggers);
    const tracer = this.#o.tracer;
    const triggerTraceIds = new Set(triggers.map((t) => trace.getSpanContext(t)?.traceId ?? '').filter((id) => id !== ''));
    if (tracer === undefined || traced === undefined) return this.#applyPod(w, triggerTraceIds);
    const span = tracer.startSpan(
      'runtime events',
      { startTime, links: traced.links, attributes: { 'splitlet.pleg.trigger': 'event', 'splitlet.pleg.reports': triggers.length, 'k8s.pod.uid': w.uid } },
      traced.parent,
    );
    try {
      const published = await context.with(trace.setSpan(traced.parent, span), () => this.#applyPod(w, triggerTraceIds));
      span.setAttributes({ 'splitlet.pleg.changed_pods': 1, 'splitlet.pleg.events': published });
      return published;
    } finally {
      span.end();
    }
  }

  /**
   * Moves the global cache time (the relist mark) to `timestamp` when that is later than the last
   * one: every pod's entry is valid as of it (cache.UpdateTime; evented.go's updateGlobalCache, here
   * at each heartbeat of the runtime event stream). Runs after the relists and reports before it.
   */
  updateGlobalCache(timestamp: number): Promise<void> {
    return this.#exclusive(() => this.#putMark(timestamp));
  }

  async #putMark(timestamp: number): Promise<void> {
    if (timestamp <= this.#markAt) return;
    try {
      await this.#o.cache.putMark({ type: 'kubelet.pleg.RelistMark.v1', timestamp });
      this.#markAt = timestamp;
    } catch (e) {
      this.#o.logger.error('could not update the runtime cache time', { err: errorMessage(e) });
    }
  }

  /** Runs `fn` in a new root span `name` (a change found without a trace to continue). */
  async #inSpan<T>(name: string, startTime: number, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
    const tracer = this.#o.tracer;
    if (tracer === undefined) return fn();
    const span = tracer.startSpan(name, { startTime, attributes }, ROOT_CONTEXT);
    try {
      return await context.with(trace.setSpan(ROOT_CONTEXT, span), fn);
    } finally {
      span.end();
    }
  }
}

/** Whether two records have the same sandboxes and containers (their IPs follow from those). */
function sameObjects(a: RuntimePodStatus | undefined, b: RuntimePodStatus | undefined): boolean {
  return recordEqual(a?.sandboxes, b?.sandboxes) && recordEqual(a?.containers, b?.containers);
}

/**
 * The parent of a poked relist's span — the first trigger naming a valid, sampled span — and links
 * to the other triggers' spans (each span once). `undefined` when no trigger is sampled: the relist
 * is then traced like a periodic one.
 */
export function tracedParent(triggers: readonly Context[]): { parent: Context; links: Link[] } | undefined {
  let parent: Context | undefined;
  const links: Link[] = [];
  const seen = new Set<string>();
  for (const t of triggers) {
    const sc = trace.getSpanContext(t);
    // An unsampled poke (periodic chatter elsewhere) neither parents nor links the relist.
    if (sc === undefined || !trace.isSpanContextValid(sc) || (sc.traceFlags & TraceFlags.SAMPLED) === 0) continue;
    if (seen.has(sc.spanId)) continue;
    seen.add(sc.spanId);
    if (parent === undefined) parent = t;
    else links.push({ context: sc, attributes: { 'splitlet.link': 'coalesced poke' } });
  }
  return parent === undefined ? undefined : { parent, links };
}
