/**
 * Lifecycle events onto stream `SL_PLEG`, subject `sl.<node>.pleg.<uid>`: one cache write's events
 * of a pod in one message (a `PodLifecycleEventList`; a lone event as a `PodLifecycleEvent`).
 */
import { MAX_PLEG_EVENTS_PER_LIST, PlegMessage, Subjects, type PodLifecycleEvent } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { EventsPartlyPublished, type LifecycleEventSink } from '../ports.js';

/** A {@link LifecycleEventSink} that publishes (validated) on the pod's PLEG subject. */
export function createBusEventSink(bus: Pick<Bus, 'publish'>, node: string): LifecycleEventSink {
  return {
    async publish(events: readonly PodLifecycleEvent[]): Promise<void> {
      for (let i = 0; i < events.length; i += MAX_PLEG_EVENTS_PER_LIST) {
        const items = events.slice(i, i + MAX_PLEG_EVENTS_PER_LIST);
        const msg: PlegMessage = items.length === 1 ? items[0]! : { type: 'kubelet.pleg.PodLifecycleEventList.v1', items };
        try {
          await bus.publish(PlegMessage, Subjects.pleg(node, items[0]!.uid), msg);
        } catch (e) {
          // The lists before this one are on the stream: the caller counts only the rest as discarded.
          if (i > 0) throw new EventsPartlyPublished(i, events.length, e);
          throw e;
        }
      }
    },
  };
}
