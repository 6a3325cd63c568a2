/**
 * Publishes the domain's events as `KubeEvent`s on `sl.<node>.events.<uid>` (stream SL_EVENTS).
 *
 * Models the kubelet's EventRecorder (client-go record.EventRecorder with source {component
 * kubelet, host <node>}): recording never blocks or fails the caller.
 */
import { KubeEvent, Subjects } from '@splitlet/api';
import { createOrderedPublisher, type Bus } from '@splitlet/bus';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { EventRecorder, PodEvent } from '../ports.js';

/** Options of {@link createEventPublisher}. */
export interface EventPublisherOptions {
  readonly bus: Pick<Bus, 'publish'>;
  readonly node: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Events waiting to be published beyond this are dropped with a warning. @default 10000 */
  readonly maxPending?: number;
}

/** An {@link EventRecorder} over the bus, plus `flush()` for shutdown. */
export interface EventPublisher extends EventRecorder {
  /** Resolves when every recorded event has been published (or failed). */
  flush(): Promise<void>;
}

/**
 * Builds KubeEvents (`source: {component: 'kubelet', host: <node>}`, `involvedObject` kind Pod with
 * the field path) and publishes them in the order they were recorded, up to 64 awaiting their ack
 * at once (`createOrderedPublisher` of @splitlet/bus), so a pod's events keep their order without
 * one bus round trip per event. A failed publish is logged, not retried.
 */
export function createEventPublisher(options: EventPublisherOptions): EventPublisher {
  const maxPending = options.maxPending ?? 10_000;
  const publisher = createOrderedPublisher({
    bus: options.bus,
    schema: KubeEvent,
    maxPending,
    onError: (e, _subject, msg) =>
      options.logger.warn('could not publish an event', { reason: msg.reason, pod: `${msg.involvedObject.namespace}/${msg.involvedObject.name}`, err: e }),
    onDrop: (dropped) => {
      if (dropped === 1 || dropped % 1000 === 0) options.logger.warn('dropping events: too many waiting to be published', { dropped, maxPending });
    },
  });
  return {
    record(ev: PodEvent): void {
      publisher.send(Subjects.events(options.node, ev.pod.uid), {
        type: 'kubelet.events.Event.v1',
        eventType: ev.eventType,
        reason: ev.reason,
        message: ev.message,
        involvedObject: {
          kind: 'Pod',
          name: ev.pod.name,
          namespace: ev.pod.namespace,
          uid: ev.pod.uid,
          ...(ev.fieldPath !== undefined ? { fieldPath: ev.fieldPath } : {}),
        },
        source: { component: 'kubelet', host: options.node },
        timestamp: new Date(options.clock.now()).toISOString(),
      });
    },
    flush: () => publisher.flush(),
  };
}
