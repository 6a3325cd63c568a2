/**
 * The bus step every node process's composition root takes inside `runService`'s `start`: connect
 * (abandoned when shutdown begins first), register the closers in the order shutdown needs, and
 * mirror finished spans to `SL_SPANS` when `PUBLISH_SPANS` is on.
 */
import { connectBus, IDENTITIES, writtenBuckets, type Bus, type Identity, type NatsBus } from '@splitlet/bus';
import { errorMessage } from '@splitlet/api';
import { createBusMetrics, createSpanRecordProcessor, type Logger, type Telemetry } from '@splitlet/telemetry';
import type { Registry } from 'prom-client';
import { DELETE_MARKER_COMPACTION, natsServers, type NodeProcessSettings } from './node-process-env.js';
import type { Closer } from './run-service.js';

/** What {@link connectNodeBus} needs. */
export interface ConnectNodeBusOptions {
  /** The process name (NATS connection name, dead-letter origin, span `service`). */
  readonly service: string;
  readonly settings: Pick<NodeProcessSettings, 'NATS_URL' | 'NODE_NAME' | 'PUBLISH_SPANS'> &
    Partial<Pick<NodeProcessSettings, 'NATS_USER' | 'NATS_PASSWORD' | 'DELETE_MARKER_COMPACTION_INTERVAL_MS' | 'DELETE_MARKER_MIN_AGE_MS' | 'STREAM_MAX_AGE'>>;
  readonly logger: Logger;
  /** Where the bus metrics (consumer pending, redeliveries, dead letters, request latency) go. */
  readonly registry: Registry;
  readonly telemetry: Pick<Telemetry, 'addSpanProcessor' | 'shutdown'>;
  /** `start`'s signal: a shutdown while NATS is unreachable ends the wait for it. */
  readonly signal: AbortSignal;
  /** `start`'s `onClose`. */
  readonly onClose: (closer: Closer) => void;
}

/**
 * Connects the process's bus. Closers are registered telemetry first, bus second, so at shutdown
 * (reverse order) the span records still waiting for their batch are published and acknowledged
 * before the bus closes, and the telemetry flush (OTLP) comes last.
 */
export async function connectNodeBus(o: ConnectNodeBusOptions): Promise<Bus> {
  const { service, settings, logger, telemetry } = o;
  o.onClose({ name: 'telemetry', close: () => telemetry.shutdown() });
  const bus = await connectBus({
    servers: natsServers(settings.NATS_URL),
    process: service,
    node: settings.NODE_NAME,
    logger,
    metrics: createBusMetrics(o.registry),
    signal: o.signal,
    ...(settings.STREAM_MAX_AGE !== undefined ? { streamMaxAges: settings.STREAM_MAX_AGE } : {}),
    ...(settings.NATS_USER !== undefined ? { user: settings.NATS_USER, pass: settings.NATS_PASSWORD ?? '' } : {}),
  });
  const compaction = startDeleteMarkerCompaction(bus, service, logger, {
    everyMs: settings.DELETE_MARKER_COMPACTION_INTERVAL_MS ?? DELETE_MARKER_COMPACTION.everyMs,
    olderThanMs: settings.DELETE_MARKER_MIN_AGE_MS ?? DELETE_MARKER_COMPACTION.olderThanMs,
  });
  const spanSink = settings.PUBLISH_SPANS
    ? createSpanRecordProcessor({ service, sink: (records) => bus.publishSpans(records), onError: (e) => logger.debug('could not publish span records', { err: e }) })
    : undefined;
  o.onClose({
    name: 'bus',
    close: async () => {
      clearInterval(compaction);
      await spanSink?.forceFlush();
      await bus.close();
    },
  });
  if (spanSink !== undefined) telemetry.addSpanProcessor(spanSink);
  return bus;
}

/**
 * Every `every.everyMs` (10 min), removes the delete markers older than `every.olderThanMs` (30 min)
 * from the buckets this process writes (`writtenBuckets` of its identity), so pod churn does not grow
 * the buckets without bound (docs/architecture.md, "Limits of the bus"). Failures are logged and
 * retried at the next round.
 */
function startDeleteMarkerCompaction(bus: NatsBus, service: string, logger: Logger, every: { everyMs: number; olderThanMs: number }): NodeJS.Timeout | undefined {
  if (!(IDENTITIES as readonly string[]).includes(service)) return undefined;
  const buckets = writtenBuckets(service as Identity);
  if (buckets.length === 0) return undefined;
  const t = setInterval(() => {
    void (async () => {
      for (const b of buckets) {
        if (bus.isClosed()) return;
        try {
          const n = await bus.compactDeleteMarkers(b, every.olderThanMs);
          if (n > 0) logger.info('removed old delete markers', { bucket: b, removed: n });
        } catch (e) {
          logger.warn('could not remove old delete markers', { bucket: b, err: errorMessage(e) });
        }
      }
    })();
  }, every.everyMs);
  t.unref();
  return t;
}
