/**
 * Publishes the domain's events as `KubeEvent`s on `sl.<node>.events.<uid>` (stream SL_EVENTS).
 *
 * Models the kubelet's EventRecorder (client-go record.EventRecorder with source {component
 * kubelet, host <node>}): recording never blocks or fails the caller.
 */
import { KubeEvent, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
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
 * the field path) and publishes them one after another, so a pod's events keep their order. A
 * failed publish is logged, not retried.
 */
export function createEventPublisher(options: EventPublisherOptions): EventPublisher {
  const maxPending = options.maxPending ?? 10_000;
  let tail: Promise<void> = Promise.resolve();
  let pending = 0;
  let dropped = 0;
  return {
    record(ev: PodEvent): void {
      if (pending >= maxPending) {
        dropped++;
        if (dropped === 1 || dropped % 1000 === 0) options.logger.warn('dropping events: too many waiting to be published', { dropped, maxPending });
        return;
      }
      const msg: KubeEvent = {
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
      };
      pending++;
      tail = tail
        .then(() => options.bus.publish(KubeEvent, Subjects.events(options.node, ev.pod.uid), msg))
        .then(
          () => undefined,
          (e: unknown) => options.logger.warn('could not publish an event', { reason: ev.reason, pod: `${ev.pod.namespace}/${ev.pod.name}`, err: e }),
        )
        .finally(() => {
          pending--;
        });
    },
    flush: () => tail,
  };
}
