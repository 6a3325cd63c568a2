/**
 * Lifecycle events onto stream `SL_PLEG`, subject `sl.<node>.pleg.<uid>`.
 */
import { PodLifecycleEvent, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { LifecycleEventSink } from '../ports.js';

/** A {@link LifecycleEventSink} that publishes each event (validated) on the pod's PLEG subject. */
export function createBusEventSink(bus: Pick<Bus, 'publish'>, node: string): LifecycleEventSink {
  return {
    async publish(event: PodLifecycleEvent): Promise<void> {
      await bus.publish(PodLifecycleEvent, Subjects.pleg(node, event.uid), event);
    },
  };
}
