/**
 * Publishes the domain's events on `sl.<node>.events.<uid>` (stream SL_EVENTS): a pod's events of
 * one operation together, as one `KubeEventList` (a lone event as a `KubeEvent`).
 *
 * Models the kubelet's EventRecorder (client-go record.EventRecorder with source {component
 * kubelet, host <node>}): recording never blocks or fails the caller.
 */
import { context } from '@opentelemetry/api';
import { KubeEventMessage, MAX_EVENTS_PER_LIST, Subjects, kubeEventsOf, type KubeEvent } from '@splitlet/api';
import { createOrderedPublisher, type Bus } from '@splitlet/bus';
import type { Clock, TimerHandle } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { EventRecorder, PodEvent } from '../ports.js';

/**
 * How long a pod's first held event waits at most for the rest of its operation's: an image pull's
 * `Pulling` or a long kill's `Killing` is on the bus within a second.
 */
export const EVENT_LINGER_MS = 1000;

/** Options of {@link createEventPublisher}. */
export interface EventPublisherOptions {
  readonly bus: Pick<Bus, 'publish'>;
  readonly node: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Events held or waiting to be published beyond this are dropped with a warning. @default 10000 */
  readonly maxPending?: number;
  /** @default {@link EVENT_LINGER_MS} */
  readonly lingerMs?: number;
}

/** An {@link EventRecorder} over the bus, plus `flush()` for shutdown. */
export interface EventPublisher extends EventRecorder {
  /** Publishes pod `uid`'s held events now (its operation ended). */
  flushPod(uid: string): void;
  /** Publishes every held event and resolves when every recorded event has been published (or failed). */
  flush(): Promise<void>;
}

/** A pod's events held for its operation's end. */
interface Held {
  readonly items: KubeEvent[];
  /** The trace context of the first `record`: the message's producer span is its child. */
  readonly ctx: ReturnType<typeof context.active>;
  readonly timer: TimerHandle;
}

/**
 * Builds KubeEvents (`source: {component: 'kubelet', host: <node>}`, `involvedObject` kind Pod with
 * the field path, the time of `record`) and holds a pod's events until its operation ends
 * (`flushPod`, which RuntimeOperations calls for every pod operation) or `lingerMs` after the first
 * (an image pull's `Pulling` is not held for the pull), then publishes them as one message. A
 * pod's start used to cost four messages (its sandbox's DNS warning, Pulled, Created, Started), each
 * one a publish, its ack, a delivery and the consumer's ack. Messages go out in the order they were
 * made, up to 64 awaiting their ack at once (`createOrderedPublisher` of @splitlet/bus), so a pod's
 * events keep their order. A failed publish is logged, not retried.
 */
export function createEventPublisher(options: EventPublisherOptions): EventPublisher {
  const maxPending = options.maxPending ?? 10_000;
  const lingerMs = options.lingerMs ?? EVENT_LINGER_MS;
  let dropped = 0;
  /** Counts `n` dropped events; warns at the first and at every thousandth. */
  const drop = (n: number): void => {
    const before = dropped;
    dropped += n;
    if (before === 0 || Math.floor(dropped / 1000) > Math.floor(before / 1000)) options.logger.warn('dropping events: too many waiting to be published', { dropped, maxPending });
  };
  const publisher = createOrderedPublisher({
    bus: options.bus,
    schema: KubeEventMessage,
    maxPending,
    onError: (e, _subject, msg) => {
      const items = kubeEventsOf(msg);
      const first = items[0];
      options.logger.warn(items.length === 1 ? 'could not publish an event' : `could not publish ${items.length} events`, {
        reason: items.map((x) => x.reason).join(', '),
        ...(first !== undefined ? { pod: `${first.involvedObject.namespace}/${first.involvedObject.name}` } : {}),
        err: e,
      });
    },
    onDrop: (_n, _subject, msg) => drop(kubeEventsOf(msg).length),
  });
  const held = new Map<string, Held>();
  let heldCount = 0;

  const publish = (uid: string): void => {
    const h = held.get(uid);
    if (h === undefined) return;
    held.delete(uid);
    options.clock.clearTimeout(h.timer);
    heldCount -= h.items.length;
    const msg: KubeEventMessage = h.items.length === 1 ? h.items[0]! : { type: 'kubelet.events.EventList.v1', items: h.items };
    context.with(h.ctx, () => publisher.send(Subjects.events(options.node, uid), msg));
  };

  return {
    record(ev: PodEvent): void {
      if (heldCount + publisher.pending >= maxPending) {
        drop(1);
        return;
      }
      const uid = ev.pod.uid;
      const event: KubeEvent = {
        type: 'kubelet.events.Event.v1',
        eventType: ev.eventType,
        reason: ev.reason,
        message: ev.message,
        involvedObject: {
          kind: 'Pod',
          name: ev.pod.name,
          namespace: ev.pod.namespace,
          uid,
          ...(ev.fieldPath !== undefined ? { fieldPath: ev.fieldPath } : {}),
        },
        source: { component: 'kubelet', host: options.node },
        timestamp: new Date(options.clock.now()).toISOString(),
      };
      let h = held.get(uid);
      if (h === undefined) {
        h = { items: [], ctx: context.active(), timer: options.clock.setTimeout(() => publish(uid), lingerMs) };
        held.set(uid, h);
      }
      h.items.push(event);
      heldCount++;
      if (h.items.length >= MAX_EVENTS_PER_LIST) publish(uid);
    },
    flushPod: publish,
    flush: () => {
      for (const uid of [...held.keys()]) publish(uid);
      return publisher.flush();
    },
  };
}
