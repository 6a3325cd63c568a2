/**
 * Delivers PodUpdates to stream `SL_CONFIG` on `sl.<node>.config.<source>` and events to
 * `sl.<node>.events.<key>`.
 */
import { KubeEvent, PodUpdate, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { EventRecorder, UpdatePublisher } from '../ports.js';

/** An {@link UpdatePublisher} over JetStream (validated, trace context in headers, awaits the ack). */
export function busUpdatePublisher(bus: Bus, node: string): UpdatePublisher {
  return {
    publish: async (update, ctx, msgID) => {
      await bus.publish(PodUpdate, Subjects.config(node, update.source), update, { ctx, msgID });
    },
  };
}

/** An {@link EventRecorder} over JetStream. */
export function busEventRecorder(bus: Bus, node: string): EventRecorder {
  return {
    record: async (event, subjectKey) => {
      await bus.publish(KubeEvent, Subjects.events(node, subjectKey), event);
    },
  };
}
