/**
 * Consumes `SL_STATUS` (durable `status-manager-<node>`, filter `sl.<node>.status.*`) into the
 * status manager. The bus validates each message (invalid → dead letter), a retryable failure is
 * nak'ed with backoff, a non-retryable one dead-lettered.
 */
import { KubeletError, PodStatusUpdate } from '@splitlet/api';
import { CONSUMERS, type Consumption, type Bus } from '@splitlet/bus';
import type { StatusManager } from '../status/status-manager.js';

/** Options of {@link consumeStatusUpdates}. */
export interface StatusConsumerOptions {
  readonly node: string;
  /** Messages handled at once; per-pod order is kept by the manager. */
  readonly concurrency: number;
  readonly signal: AbortSignal;
}

/** Starts the consumer; resolves once it is bound. */
export function consumeStatusUpdates(bus: Pick<Bus, 'consume'>, manager: StatusManager, o: StatusConsumerOptions): Promise<Consumption> {
  return bus.consume(
    PodStatusUpdate,
    {
      ...CONSUMERS.statusManager(o.node),
      concurrency: o.concurrency,
      signal: o.signal,
    },
    async (d) => {
      const uidToken = d.subject.slice(d.subject.lastIndexOf('.') + 1);
      if (uidToken !== d.data.uid) {
        throw new KubeletError('InvalidStatusUpdate', `status update on ${d.subject} is for pod ${d.data.uid}, not ${uidToken}`, { retryable: false });
      }
      await manager.handle(d.data);
    },
  );
}
