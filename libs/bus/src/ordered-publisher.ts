/**
 * Fire-and-forget JetStream publishes that keep their order without waiting for each other's ack.
 *
 * A recorder that must never block its caller (the kubelet's EventRecorder) used to chain each
 * publish on the previous one's ack: one bus round trip per message, across every pod of the
 * process. In a burst of 1,000 pods a pod's last event then reached the bus 0.4 s (median) and up
 * to 1.7 s after the pod was Running, and the queue held the events' memory meanwhile. NATS delivers one connection's messages in
 * the order they were written, and a publish is written when it is called (the Bus contract checks
 * it: "publishes started together are stored in the order they were started"), so sending in call
 * order keeps the order in the stream; only the acks are awaited together, up to `window` at once.
 */
import { context } from '@opentelemetry/api';
import type { z } from 'zod';
import type { Bus } from './bus.js';

/** Options of {@link createOrderedPublisher}. */
export interface OrderedPublisherOptions<S extends z.ZodType> {
  readonly bus: Pick<Bus, 'publish'>;
  readonly schema: S;
  /** Publishes awaiting their ack at once; the rest wait, in order, to be sent. @default 64 */
  readonly window?: number;
  /** Messages waiting or in flight beyond this are dropped (`onDrop`). @default 10000 */
  readonly maxPending?: number;
  /** A publish that failed (it is not retried). */
  onError(err: unknown, subject: string, msg: z.input<S>): void;
  /** A message dropped because `maxPending` were waiting; `dropped` counts them since the start. */
  onDrop(dropped: number, subject: string, msg: z.input<S>): void;
}

/** See {@link createOrderedPublisher}. */
export interface OrderedPublisher<S extends z.ZodType> {
  /** Sends `msg` after every message handed over before it; never throws or blocks. */
  send(subject: string, msg: z.input<S>): void;
  /** Resolves when every message handed over so far was acknowledged or failed. */
  flush(): Promise<void>;
  /** Messages waiting to be sent or awaiting their ack. */
  readonly pending: number;
}

interface Waiting<M> {
  readonly subject: string;
  readonly msg: M;
  readonly ctx: ReturnType<typeof context.active>;
}

/**
 * Publishes each message in call order, with up to `window` awaiting their ack at once. Each
 * publish's producer span has the caller's trace context at `send`, also when it waits its turn.
 */
export function createOrderedPublisher<S extends z.ZodType>(o: OrderedPublisherOptions<S>): OrderedPublisher<S> {
  const window = o.window ?? 64;
  const maxPending = o.maxPending ?? 10_000;
  if (!(window >= 1)) throw new RangeError(`window must be ≥ 1, got ${window}`);
  const waiting: Waiting<z.input<S>>[] = [];
  let head = 0;
  let inFlight = 0;
  let dropped = 0;
  let idle: (() => void)[] = [];

  const pending = (): number => waiting.length - head + inFlight;
  const settle = (): void => {
    if (pending() > 0) return;
    const resolve = idle;
    idle = [];
    for (const r of resolve) r();
  };
  const pump = (): void => {
    while (inFlight < window && head < waiting.length) {
      const w = waiting[head]!;
      waiting[head++] = undefined as unknown as Waiting<z.input<S>>;
      inFlight++;
      let sent: Promise<unknown>;
      try {
        sent = o.bus.publish(o.schema, w.subject, w.msg, { ctx: w.ctx });
      } catch (e) {
        sent = Promise.reject(e);
      }
      sent
        .catch((e: unknown) => {
          try {
            o.onError(e, w.subject, w.msg);
          } catch {
            // a failing error handler must not stop the queue
          }
        })
        .finally(() => {
          inFlight--;
          pump();
          settle();
        });
    }
    if (head === waiting.length) {
      waiting.length = 0;
      head = 0;
    } else if (head > 1024 && head * 2 > waiting.length) {
      waiting.splice(0, head);
      head = 0;
    }
  };

  return {
    send(subject, msg) {
      if (pending() >= maxPending) {
        o.onDrop(++dropped, subject, msg);
        return;
      }
      waiting.push({ subject, msg, ctx: context.active() });
      pump();
    },
    flush() {
      if (pending() === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
    get pending() {
      return pending();
    },
  };
}
