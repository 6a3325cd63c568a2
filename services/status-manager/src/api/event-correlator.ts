/**
 * The event correlator of client-go's recorder: what the node's events become on the API server.
 *
 * - **Aggregation**: events that differ only in their message (same source, object, type, reason)
 *   are collected per 10 minutes; from the 10th distinct message on, the event posted instead is one
 *   aggregate, `(combined from similar events): <message>`, counted up from then on.
 * - **Deduplication**: an event identical to one already posted (source, object with fieldPath,
 *   type, reason, message) is not posted again: the existing Event gets `count + 1` and the new
 *   `lastTimestamp` (and message) through a strategic merge patch.
 * - **Spam filter**: per source and object (and type), a token bucket of 25 that refills one token
 *   every 5 minutes; an event without a token is dropped.
 *
 * Models k8s.io/client-go/tools/record/events_cache.go (EventCorrelator, EventAggregator with
 * EventAggregatorByReasonFunc/MessageFunc, eventLogger.eventObserve, EventSourceObjectSpamFilter,
 * the defaults maxLruCacheEntries 4096, 10 events in 600 s, burst 25 at 1/300 qps) and
 * flowcontrol's passive token bucket. Pure logic: the clock is injected, nothing is posted here.
 */

/** The core/v1 Event fields the correlator reads and writes. */
export interface CoreEvent {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  involvedObject: { kind: string; namespace: string; name: string; uid: string; apiVersion?: string; fieldPath?: string | undefined };
  reason: string;
  message: string;
  source: { component: string; host: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: string;
  reportingComponent?: string;
  reportingInstance?: string;
}

/** What to do with an event: drop it, create it, or patch the existing one (`patch` set). */
export type CorrelateResult = { readonly skip: true } | { readonly skip: false; readonly event: CoreEvent; readonly patch?: Record<string, unknown> };

/** Tunables (client-go's defaults). */
export interface CorrelatorOptions {
  readonly now?: () => number;
  /** @default 4096 */
  readonly maxEntries?: number;
  /** @default 10 */
  readonly aggregateMaxEvents?: number;
  /** @default 600 */
  readonly aggregateIntervalSeconds?: number;
  /** @default 25 */
  readonly spamBurst?: number;
  /** Tokens a second. @default 1/300 */
  readonly spamQps?: number;
}

/** A map that forgets its least recently used entry beyond `max` (golang-lru's Add/Get). */
class Lru<V> {
  readonly #m = new Map<string, V>();
  readonly #max: number;
  constructor(max: number) {
    this.#max = max;
  }
  get(k: string): V | undefined {
    const v = this.#m.get(k);
    if (v !== undefined) {
      this.#m.delete(k);
      this.#m.set(k, v);
    }
    return v;
  }
  add(k: string, v: V): void {
    this.#m.delete(k);
    this.#m.set(k, v);
    if (this.#m.size > this.#max) this.#m.delete(this.#m.keys().next().value as string);
  }
  get size(): number {
    return this.#m.size;
  }
}

const join = (parts: readonly (string | undefined)[]): string => parts.map((p) => p ?? '').join('\u0000');

/** Key of identical events (getEventKey). */
export function eventKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return join([e.source.component, e.source.host, o.kind, o.namespace, o.name, o.fieldPath, o.uid, o.apiVersion, e.type, e.reason, e.message]);
}

/** Key of the spam filter: source and object, not the reason (getSpamKey). */
export function spamKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return join([e.source.component, e.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion, e.type]);
}

/** Key of similar events, and the part that tells them apart (EventAggregatorByReasonFunc). */
export function aggregateKey(e: CoreEvent): { key: string; local: string } {
  const o = e.involvedObject;
  return {
    key: join([e.source.component, e.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion, e.type, e.reason, e.reportingComponent, e.reportingInstance]),
    local: e.message,
  };
}

/** The message of an aggregate event (EventAggregatorByReasonMessageFunc). */
export const combinedMessage = (message: string): string => `(combined from similar events): ${message}`;

/** RFC 3339 in seconds, as metav1.Time serializes. */
export function kubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

interface AggregateRecord {
  readonly locals: Set<string>;
  lastMs: number;
}

interface EventLog {
  readonly count: number;
  readonly firstTimestamp: string;
  readonly name: string;
  readonly resourceVersion: string | undefined;
}

interface Bucket {
  tokens: number;
  lastMs: number;
}

/** client-go's EventCorrelator. One per recorder (per process). */
export class EventCorrelator {
  readonly #now: () => number;
  readonly #maxEvents: number;
  readonly #intervalMs: number;
  readonly #burst: number;
  readonly #qps: number;
  readonly #aggregates: Lru<AggregateRecord>;
  readonly #observed: Lru<EventLog>;
  readonly #spam: Lru<Bucket>;

  constructor(o: CorrelatorOptions = {}) {
    const max = o.maxEntries ?? 4096;
    this.#now = o.now ?? Date.now;
    this.#maxEvents = o.aggregateMaxEvents ?? 10;
    this.#intervalMs = (o.aggregateIntervalSeconds ?? 600) * 1000;
    this.#burst = o.spamBurst ?? 25;
    this.#qps = o.spamQps ?? 1 / 300;
    this.#aggregates = new Lru(max);
    this.#observed = new Lru(max);
    this.#spam = new Lru(max);
  }

  /** Aggregates, counts and filters `e` (EventCorrelate). */
  correlate(e: CoreEvent): CorrelateResult {
    const { event: aggregated, key } = this.#aggregate(e);
    const observed = this.#observe(aggregated, key);
    if (this.#filtered(observed.event)) return { skip: true };
    return observed.patch === undefined ? { skip: false, event: observed.event } : { skip: false, event: observed.event, patch: observed.patch };
  }

  /** Records the Event as the server stored it (its name and resourceVersion), as UpdateState does. */
  updateState(stored: CoreEvent): void {
    this.#observed.add(eventKey(stored), {
      count: stored.count,
      firstTimestamp: stored.firstTimestamp,
      name: stored.metadata.name,
      resourceVersion: stored.metadata.resourceVersion,
    });
  }

  #aggregate(e: CoreEvent): { event: CoreEvent; key: string } {
    const now = this.#now();
    const { key, local } = aggregateKey(e);
    let record = this.#aggregates.get(key);
    if (record === undefined || now - record.lastMs > this.#intervalMs) record = { locals: new Set(), lastMs: 0 };
    record.locals.add(local);
    record.lastMs = now;
    this.#aggregates.add(key, record);
    if (record.locals.size < this.#maxEvents) return { event: e, key: eventKey(e) };
    // Over the threshold: keep the set at its size, and post (or count up) the aggregate instead.
    const any = record.locals.values().next().value as string;
    record.locals.delete(any);
    const ts = kubeTime(now);
    const aggregate: CoreEvent = {
      metadata: { name: `${e.involvedObject.name}.${(BigInt(now) * 1_000_000n).toString(16)}`, namespace: e.metadata.namespace },
      involvedObject: e.involvedObject,
      reason: e.reason,
      message: combinedMessage(e.message),
      source: e.source,
      firstTimestamp: ts,
      lastTimestamp: ts,
      count: 1,
      type: e.type,
    };
    return { event: aggregate, key };
  }

  #observe(e: CoreEvent, key: string): { event: CoreEvent; patch?: Record<string, unknown> } {
    const last = this.#observed.get(key);
    let event = e;
    let patch: Record<string, unknown> | undefined;
    if (last !== undefined && last.count > 0) {
      const metadata: CoreEvent['metadata'] = { ...e.metadata, name: last.name };
      if (last.resourceVersion !== undefined) metadata.resourceVersion = last.resourceVersion;
      else delete metadata.resourceVersion;
      event = { ...e, metadata, firstTimestamp: last.firstTimestamp, count: last.count + 1 };
      // The two-way merge patch from {count: 0, lastTimestamp: epoch, message: ''} to the event.
      patch = { count: event.count, lastTimestamp: event.lastTimestamp, message: event.message };
    }
    this.#observed.add(key, { count: event.count, firstTimestamp: event.firstTimestamp, name: event.metadata.name, resourceVersion: event.metadata.resourceVersion });
    return patch === undefined ? { event } : { event, patch };
  }

  /** True when the source has no token left for this object (EventSourceObjectSpamFilter.Filter). */
  #filtered(e: CoreEvent): boolean {
    const now = this.#now();
    const k = spamKey(e);
    const b = this.#spam.get(k) ?? { tokens: this.#burst, lastMs: now };
    b.tokens = Math.min(this.#burst, b.tokens + ((now - b.lastMs) / 1000) * this.#qps);
    b.lastMs = now;
    const ok = b.tokens >= 1;
    if (ok) b.tokens -= 1;
    this.#spam.add(k, b);
    return !ok;
  }
}
