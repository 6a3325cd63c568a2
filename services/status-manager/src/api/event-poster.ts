/**
 * Posts the node's events (stream `SL_EVENTS`) to the API server as core/v1 Events (cluster mode).
 *
 * Models client-go's event recorder sink as the kubelet uses it (tools/record/event.go
 * recordToSink / makeEvent): the Event is named `<involvedObject.name>.<UnixNano in hex>` in the
 * object's namespace, with count 1 and first/last timestamp = the event's time. Not modelled: the
 * correlator's aggregation and spam filter (each event is posted once).
 * A 4xx answer (e.g. the namespace is gone) drops the event with a warning; other failures are
 * retried by the bus (nak with backoff).
 */
import { KubeEvent, KubeletError } from '@splitlet/api';
import { CONSUMERS, type Bus, type Consumption } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';
import { kubeError, type KubeRest } from './kube-rest.js';

/** Options of {@link postEventsToApi}. */
export interface EventPosterOptions {
  readonly node: string;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

/** Starts posting; resolves once the consumer is bound. */
export function postEventsToApi(bus: Pick<Bus, 'consume'>, api: KubeRest, o: EventPosterOptions): Promise<Consumption> {
  let seq = 0n;
  return bus.consume(KubeEvent, { ...CONSUMERS.statusManagerEvents(o.node), signal: o.signal }, async (d) => {
    const e = d.data;
    const at = Date.parse(e.timestamp);
    const ts = new Date(Number.isNaN(at) ? Date.now() : at).toISOString().replace(/\.\d+Z$/, 'Z');
    // UnixNano in hex; the low digits keep two events of one millisecond apart.
    const nanos = BigInt(Number.isNaN(at) ? Date.now() : at) * 1_000_000n + (seq++ % 1_000_000n);
    const namespace = e.involvedObject.namespace === '' ? 'default' : e.involvedObject.namespace;
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
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
    const res = await api.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, body);
    if (res.status === 201 || res.status === 200 || res.status === 409) return;
    const err = kubeError(`Server rejected event '${e.involvedObject.name}' (${e.reason})`, res);
    if (res.status >= 400 && res.status < 500) {
      o.logger.warn('Server rejected event (will not retry!)', { reason: e.reason, object: `${namespace}/${e.involvedObject.name}`, err: err.message });
      return;
    }
    throw new KubeletError('EventPostFailed', err.message, { retryable: true, cause: err });
  });
}
