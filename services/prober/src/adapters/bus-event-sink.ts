/**
 * Publishes the prober's container events on `sl.<node>.events.<uid>` (stream `SL_EVENTS`) in the
 * order they were recorded (`createOrderedPublisher` of @splitlet/bus: the acks are awaited
 * together); a failed publish is logged, not retried.
 */
import { KubeEvent, Subjects } from '@splitlet/api';
import { createOrderedPublisher, type Bus } from '@splitlet/bus';
import type { Clock, Log, ProbeEventSink } from '../ports.js';

/** The event sink, plus `flush()` for shutdown. */
export function createBusEventSink(bus: Pick<Bus, 'publish'>, node: string, clock: Clock, logger: Log): ProbeEventSink & { flush(): Promise<void> } {
  const publisher = createOrderedPublisher({
    bus,
    schema: KubeEvent,
    onError: (e, _subject, msg) =>
      logger.warn('could not publish an event', { reason: msg.reason, podUID: msg.involvedObject.uid, err: e instanceof Error ? e.message : String(e) }),
    onDrop: (dropped) => {
      if (dropped === 1 || dropped % 1000 === 0) logger.warn('dropping events: too many waiting to be published', { dropped });
    },
  });
  return {
    record(ev) {
      const { pod } = ev;
      const index = (ev.init ? (pod.spec.initContainers ?? []) : pod.spec.containers).findIndex((c) => c.name === ev.containerName);
      const msg: KubeEvent = {
        type: 'kubelet.events.Event.v1',
        eventType: ev.eventType,
        reason: ev.reason,
        message: ev.message,
        involvedObject: {
          kind: 'Pod',
          name: pod.metadata.name,
          namespace: pod.metadata.namespace,
          uid: pod.metadata.uid,
          fieldPath: index >= 0 ? `spec.${ev.init ? 'initContainers' : 'containers'}{${ev.containerName}}` : `spec.containers{${ev.containerName}}`,
        },
        source: { component: 'kubelet', host: node },
        timestamp: new Date(clock.now()).toISOString(),
      };
      publisher.send(Subjects.events(node, pod.metadata.uid), msg);
    },
    flush: () => publisher.flush(),
  };
}
