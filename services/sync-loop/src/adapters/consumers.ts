/**
 * sync-loop's consumers: `SL_CONFIG` (durable `sync-loop-config-<node>`, concurrency 1: order
 * matters) and `SL_PLEG` (durable `sync-loop-pleg-<node>`). The bus validates each message
 * (invalid → dead letter); a retryable handler failure is nak'ed with backoff.
 */
import { PlegMessage, PodUpdate, plegEventsOf } from '@splitlet/api';
import { CONSUMERS, type Consumption, type Bus } from '@splitlet/bus';
import type { SyncLoop } from '../sync-loop/sync-loop.js';

/** Consumes PodUpdates in order into the sync loop. */
export function consumeConfig(bus: Pick<Bus, 'consume'>, loop: SyncLoop, node: string, signal: AbortSignal): Promise<Consumption> {
  return bus.consume(PodUpdate, { ...CONSUMERS.syncLoopConfig(node), concurrency: 1, signal }, (d) => loop.handlePodUpdate(d.data));
}

/** Consumes PLEG events (new ones only when the consumer is first created; a list's in order) into the sync loop. */
export function consumePleg(bus: Pick<Bus, 'consume'>, loop: SyncLoop, node: string, signal: AbortSignal): Promise<Consumption> {
  return bus.consume(PlegMessage, { ...CONSUMERS.syncLoopPleg(node), concurrency: 16, signal }, async (d) => {
    for (const e of plegEventsOf(d.data)) await loop.handlePlegEvent(e);
  });
}
