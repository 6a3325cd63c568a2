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
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, trace, type Attributes, type Context, type Link, type Span, type Tracer } from '@opentelemetry/api';
import type { PodLifecycleEvent, RuntimeCacheEntry, RuntimePodStatus } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { formatGoDuration, podIPsAfterTeardown } from '@splitlet/kube';
import type { Clock, HealthStatus } from '@splitlet/service';
import { injectContext, podSpanAttributes, unsampledContext, type Logger } from '@splitlet/telemetry';
import type { DesiredPodReader, LifecycleEventSink, RuntimeCacheStore, RuntimeLister } from '../ports.js';
import { computePodEvents, type PlegEvent } from './generate-events.js';
import type { PlegMetrics } from './metrics.js';
import { recordEqual } from './record-equal.js';
import { diedRegularContainers, restartEpisode } from './restart-episodes.js';

/** A pod's runtime episode as kept in its cache entries (RuntimeCacheEntry.episode). */
type Episode = NonNullable<RuntimeCacheEntry['episode']>;

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
  #relistTime: number | undefined;

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
    for (const [uid, entry] of snapshot.entries) {
      this.#records.set(uid, entry.status);
      if (entry.episode !== undefined) this.#episodes.set(uid, entry.episode);
    }
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
  async relist(triggers: readonly Context[] = [], uids?: readonly string[]): Promise<RelistResult> {
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
   * The relist proper; `inSpan` when a poke's `relist` span is active; the trace ids of the sampled
   * pokes it serves; `uids` for a targeted relist.
   */
  async #relist(timestamp: number, inSpan: boolean, triggerTraceIds: ReadonlySet<string>, uids: readonly string[] | undefined): Promise<RelistResult> {
    const { metrics, logger } = this.#o;
    let pods: readonly RuntimePodStatus[];
    try {
      pods = inSpan ? await this.#o.lister.relist(uids) : await context.with(unsampledContext(), () => this.#o.lister.relist(uids));
    } catch (e) {
      metrics.relistErrors.inc();
      logger.error('GenericPLEG: Unable to retrieve pods', { err: errorMessage(e) });
      if (inSpan) trace.getActiveSpan()?.recordException(e instanceof Error ? e : errorMessage(e));
      return { ok: false, events: 0, changedPods: 0 };
    }
    if (uids === undefined) {
      this.#relistTime = timestamp;
      metrics.lastSeen.set(Math.floor(timestamp / 1000));
    }

    const current = new Map<string, RuntimePodStatus>();
    for (const p of pods) current.set(p.uid, p);
    const work: Array<{ uid: string; next: RuntimePodStatus | undefined; events: PlegEvent[] }> = [];
    for (const uid of uids ?? new Set([...this.#records.keys(), ...current.keys()])) {
      const before = this.#records.get(uid);
      const seen = current.get(uid);
      const next = seen === undefined ? undefined : { ...seen, ips: podIPsAfterTeardown(before, seen) };
      // An unchanged record has no events (they follow from its containers' and sandboxes' states).
      if (recordEqual(before, next)) continue;
      const events = computePodEvents(before, next);
      work.push({ uid, next, events });
    }
    if (work.length === 0) {
      if (uids === undefined) await this.#putMark(timestamp);
      return { ok: true, events: 0, changedPods: 0 };
    }
    const apply = async (): Promise<RelistResult> => {
      const published = await Promise.all(work.map((w) => this.#applyPod(w.uid, w.next, w.events, timestamp, triggerTraceIds)));
      if (uids === undefined) await this.#putMark(timestamp);
      return { ok: true, events: published.reduce((a, b) => a + b, 0), changedPods: work.length };
    };
    return inSpan ? apply() : this.#inSpan(timestamp, work.length, apply);
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
  async #applyPod(uid: string, next: RuntimePodStatus | undefined, events: readonly PlegEvent[], timestamp: number, triggerTraceIds: ReadonlySet<string>): Promise<number> {
    const begun = await this.#beginEpisode(uid, next, events, timestamp, triggerTraceIds);
    if (begun === undefined) return this.#writeAndPublish(uid, next, events, timestamp, this.#episodes.get(uid));
    try {
      return await context.with(trace.setSpan(ROOT_CONTEXT, begun.span), () => this.#writeAndPublish(uid, next, events, timestamp, begun.episode));
    } finally {
      begun.span.end();
    }
  }

  /**
   * The root span of a new episode when `events` report a regular container of a desired pod dead
   * after its start (see {@link restartEpisode}); `undefined` otherwise, or when the desired pod
   * cannot be read (the death is then traced in the relist's trace, with a warning).
   */
  async #beginEpisode(
    uid: string,
    next: RuntimePodStatus | undefined,
    events: readonly PlegEvent[],
    timestamp: number,
    triggerTraceIds: ReadonlySet<string>,
  ): Promise<{ span: Span; episode: Episode } | undefined> {
    const { tracer, desired, logger } = this.#o;
    if (tracer === undefined || desired === undefined) return undefined;
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
  async #writeAndPublish(uid: string, next: RuntimePodStatus | undefined, events: readonly PlegEvent[], timestamp: number, episode: Episode | undefined): Promise<number> {
    const { cache, logger, metrics } = this.#o;
    try {
      if (next === undefined) await cache.delete(uid);
      else await cache.put({ type: 'kubelet.pleg.RuntimeCacheEntry.v1', uid, timestamp, status: next, ...(episode !== undefined ? { episode } : {}) });
    } catch (e) {
      // Keep the old record so the next relist sees the change (and its events) again.
      logger.error('PLEG: Ignoring events for pod: could not update the runtime cache', { podUID: uid, err: errorMessage(e) });
      trace.getActiveSpan()?.recordException(e instanceof Error ? e : errorMessage(e));
      return 0;
    }
    if (next === undefined) {
      this.#records.delete(uid);
      this.#episodes.delete(uid);
    } else {
      this.#records.set(uid, next);
      if (episode !== undefined) this.#episodes.set(uid, episode);
    }
    let published = 0;
    const at = new Date(timestamp).toISOString();
    // Filter out events that are not reliable and no other components use yet (generic.go).
    for (const e of events) {
      if (e.event === 'ContainerChanged') continue;
      const msg: PodLifecycleEvent = { type: 'kubelet.pleg.PodLifecycleEvent.v1', uid: e.uid, event: e.event, data: e.data, at };
      if (e.containerName !== undefined) msg.containerName = e.containerName;
      try {
        await this.#o.events.publish(msg);
        published++;
      } catch (err) {
        metrics.discardEvents.inc();
        logger.error('could not publish a PLEG event, discarding it', { podUID: uid, event: e.event, containerID: e.data, err: errorMessage(err) });
      }
    }
    return published;
  }

  async #putMark(timestamp: number): Promise<void> {
    try {
      await this.#o.cache.putMark({ type: 'kubelet.pleg.RelistMark.v1', timestamp });
    } catch (e) {
      this.#o.logger.error('could not update the runtime cache time', { err: errorMessage(e) });
    }
  }

  async #inSpan<T>(startTime: number, pods: number, fn: () => Promise<T>): Promise<T> {
    const tracer = this.#o.tracer;
    if (tracer === undefined) return fn();
    const span = tracer.startSpan('relist', { startTime, attributes: { 'splitlet.pleg.trigger': 'period', 'splitlet.pleg.changed_pods': pods } }, ROOT_CONTEXT);
    try {
      return await context.with(trace.setSpan(ROOT_CONTEXT, span), fn);
    } finally {
      span.end();
    }
  }
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
