/**
 * Publishes the prober's container events on `sl.<node>.events.<uid>` (stream `SL_EVENTS`), one
 * after another so a pod's events keep their order; a failed publish is logged, not retried.
 */
import { KubeEvent, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { Clock, Log, ProbeEventSink } from '../ports.js';

/** The event sink, plus `flush()` for shutdown. */
export function createBusEventSink(bus: Pick<Bus, 'publish'>, node: string, clock: Clock, logger: Log): ProbeEventSink & { flush(): Promise<void> } {
  let tail: Promise<void> = Promise.resolve();
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
      tail = tail
        .then(() => bus.publish(KubeEvent, Subjects.events(node, pod.metadata.uid), msg))
        .then(
          () => undefined,
          (e: unknown) => logger.warn('could not publish an event', { reason: ev.reason, podUID: pod.metadata.uid, err: e instanceof Error ? e.message : String(e) }),
        );
    },
    flush: () => tail,
  };
}
