/**
 * sync-loop's consumers: `SL_CONFIG` (durable `sync-loop-config-<node>`, concurrency 1: order
 * matters) and `SL_PLEG` (durable `sync-loop-pleg-<node>`). The bus validates each message
 * (invalid → dead letter); a retryable handler failure is nak'ed with backoff.
 */
import { Consumers, PodLifecycleEvent, PodUpdate, Streams, Subjects } from '@splitlet/api';
import type { Consumption, Bus } from '@splitlet/bus';
import type { SyncLoop } from '../sync-loop/sync-loop.js';

/** Consumes PodUpdates in order into the sync loop. */
export function consumeConfig(bus: Pick<Bus, 'consume'>, loop: SyncLoop, node: string, signal: AbortSignal): Promise<Consumption> {
  return bus.consume(
    PodUpdate,
    { stream: Streams.config, durable: Consumers.syncLoopConfig(node), filterSubject: Subjects.configAll(node), concurrency: 1, signal },
    (d) => loop.handlePodUpdate(d.data),
  );
}

/** Consumes PLEG events (new ones only when the consumer is first created) into the sync loop. */
export function consumePleg(bus: Pick<Bus, 'consume'>, loop: SyncLoop, node: string, signal: AbortSignal): Promise<Consumption> {
  return bus.consume(
    PodLifecycleEvent,
    { stream: Streams.pleg, durable: Consumers.syncLoopPleg(node), filterSubject: Subjects.plegAll(node), concurrency: 16, deliverNew: true, signal },
    (d) => loop.handlePlegEvent(d.data),
  );
}
