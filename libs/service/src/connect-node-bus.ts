/**
 * The bus step every node process's composition root takes inside `runService`'s `start`: connect
 * (abandoned when shutdown begins first), register the closers in the order shutdown needs, and
 * mirror finished spans to `SL_SPANS` when `PUBLISH_SPANS` is on.
 */
import { connectBus, type Bus } from '@splitlet/bus';
import { createBusMetrics, createSpanRecordProcessor, type Logger, type Telemetry } from '@splitlet/telemetry';
import type { Registry } from 'prom-client';
import { natsServers, type NodeProcessSettings } from './node-process-env.js';
import type { Closer } from './run-service.js';

/** What {@link connectNodeBus} needs. */
export interface ConnectNodeBusOptions {
  /** The process name (NATS connection name, dead-letter origin, span `service`). */
  readonly service: string;
  readonly settings: Pick<NodeProcessSettings, 'NATS_URL' | 'NODE_NAME' | 'PUBLISH_SPANS'>;
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
  });
  const spanSink = settings.PUBLISH_SPANS
    ? createSpanRecordProcessor({ service, sink: (records) => bus.publishSpans(records), onError: (e) => logger.debug('could not publish span records', { err: e }) })
    : undefined;
  o.onClose({
    name: 'bus',
    close: async () => {
      await spanSink?.forceFlush();
      await bus.close();
    },
  });
  if (spanSink !== undefined) telemetry.addSpanProcessor(spanSink);
  return bus;
}
