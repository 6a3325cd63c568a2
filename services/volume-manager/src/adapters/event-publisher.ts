/**
 * Kubernetes events on `sl.<node>.events.<uid>` (stream `SL_EVENTS`).
 */
import { KubeEvent, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { EventRecorder } from '../ports.js';

/** An {@link EventRecorder} publishing to the node's events subject. */
export function busEventRecorder(bus: Bus, node: string): EventRecorder {
  return {
    record: async (event, uid) => {
      await bus.publish(KubeEvent, Subjects.events(node, uid), event);
    },
  };
}
