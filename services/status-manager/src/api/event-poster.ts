/**
 * Posts the node's events (stream `SL_EVENTS`: one event, or a list of one pod's, posted in order) to
 * the API server as core/v1 Events (cluster mode).
 *
 * Models client-go's event recorder sink as the kubelet uses it (tools/record/event.go
 * recordToSink / recordEvent / makeEvent): the Event is named `<involvedObject.name>.<UnixNano in
 * hex>` in the object's namespace, with count 1 and first/last timestamp = the event's time; then
 * the {@link EventCorrelator} decides: a repeat of an Event already posted is a strategic merge
 * PATCH of its `count`, `lastTimestamp` and `message` (a 404 creates it again), similar events are
 * aggregated, and a source spamming one object is rate-limited (dropped, with a debug line).
 * A 4xx answer (e.g. the namespace is gone) drops the event with a warning; other failures are
 * retried by the bus (nak with backoff), reusing the correlation of the first delivery so a retry
 * does not count the event twice.
 */
import { KubeEventMessage, KubeletError, kubeEventsOf, type KubeEvent } from '@splitlet/api';
import { CONSUMERS, type Bus, type Consumption } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';
import { EventCorrelator, kubeTime, type CoreEvent, type CorrelateResult } from './event-correlator.js';
import { STRATEGIC_MERGE_PATCH, kubeError, type KubeRest } from './kube-rest.js';

/** Options of {@link postEventsToApi}. */
export interface EventPosterOptions {
  readonly node: string;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** @default a correlator with client-go's defaults */
  readonly correlator?: EventCorrelator;
}

/** The core/v1 Event client-go's makeEvent builds for a bus event (`seq` keeps two of one millisecond apart). */
export function makeCoreEvent(e: KubeEvent, seq: bigint): CoreEvent {
  const parsed = Date.parse(e.timestamp);
  const at = Number.isNaN(parsed) ? Date.now() : parsed;
  const ts = kubeTime(at);
  // UnixNano in hex; the low digits keep two events of one millisecond apart.
  const nanos = BigInt(at) * 1_000_000n + (seq % 1_000_000n);
  const namespace = e.involvedObject.namespace === '' ? 'default' : e.involvedObject.namespace;
  return {
    metadata: { name: `${e.involvedObject.name}.${nanos.toString(16)}`, namespace },
    involvedObject: { apiVersion: 'v1', ...e.involvedObject },
    reason: e.reason,
    message: e.message,
    source: e.source,
    firstTimestamp: ts,
    lastTimestamp: ts,
    count: 1,
    type: e.eventType,
    reportingComponent: e.source.component,
    reportingInstance: e.source.host,
  };
}

/** Starts posting; resolves once the consumer is bound. */
export function postEventsToApi(bus: Pick<Bus, 'consume'>, api: KubeRest, o: EventPosterOptions): Promise<Consumption> {
  let seq = 0n;
  const correlator = o.correlator ?? new EventCorrelator();
  /**
   * Deliveries being retried, by stream sequence: how many of the message's events were posted (or
   * dropped) and the correlation of the one that failed, reused so a retry counts nothing twice.
   */
  const pending = new Map<number, { done: number; failed: CorrelateResult }>();
  const remember = (sequence: number, done: number, failed: CorrelateResult): void => {
    pending.set(sequence, { done, failed });
    if (pending.size > 10_000) pending.delete(pending.keys().next().value as number);
  };

  /** Posts one event; throws (retryable) when it should be tried again with `result`. */
  const post = async (e: KubeEvent, result: CorrelateResult): Promise<void> => {
    if (result.skip) {
      o.logger.debug('event dropped by the spam filter', { reason: e.reason, object: `${e.involvedObject.namespace}/${e.involvedObject.name}` });
      return;
    }
    const event = result.event;
    const ns = encodeURIComponent(event.metadata.namespace);
    let res =
      result.patch === undefined
        ? undefined
        : await api.request('PATCH', `/api/v1/namespaces/${ns}/events/${encodeURIComponent(event.metadata.name)}`, result.patch, STRATEGIC_MERGE_PATCH);
    // A patch of an Event that is gone (deleted, expired) creates it again.
    if (res === undefined || res.status === 404) {
      const { resourceVersion: _rv, ...metadata } = event.metadata;
      res = await api.request('POST', `/api/v1/namespaces/${ns}/events`, { apiVersion: 'v1', kind: 'Event', ...event, metadata });
    }
    if (res.status === 201 || res.status === 200) {
      correlator.updateState(res.body as CoreEvent);
      return;
    }
    if (res.status === 409) return;
    const err = kubeError(`Server rejected event '${event.involvedObject.name}' (${event.reason})`, res);
    if (res.status >= 400 && res.status < 500) {
      o.logger.warn('Server rejected event (will not retry!)', { reason: event.reason, object: `${event.metadata.namespace}/${event.involvedObject.name}`, err: err.message });
      return;
    }
    throw new KubeletError('EventPostFailed', err.message, { retryable: true, cause: err });
  };

  return bus.consume(KubeEventMessage, { ...CONSUMERS.statusManagerEvents(o.node), signal: o.signal }, async (d) => {
    const events = kubeEventsOf(d.data);
    const retry = pending.get(d.streamSequence);
    // A list's events in order; a retry resumes at the one that failed (the API server was
    // unreachable, or answered 5xx: the bus redelivers).
    for (let i = retry?.done ?? 0; i < events.length; i++) {
      const e = events[i]!;
      const result = retry !== undefined && i === retry.done ? retry.failed : correlator.correlate(makeCoreEvent(e, seq++));
      try {
        await post(e, result);
      } catch (err) {
        remember(d.streamSequence, i, result);
        throw err;
      }
    }
    pending.delete(d.streamSequence);
  });
}
