/**
 * The consumer side every bus implementation shares: decode, the CONSUMER span, and the settle
 * policy (auto-ack; retryable failure → nak with backoff until `maxDeliver`; otherwise, and for a
 * poison message, dead-letter + term). Implementations only supply the raw deliveries.
 */
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { Link } from '@opentelemetry/api';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import type { BusLogger, ConsumeOptions, DeadLetterInput, Delivery } from './bus.js';
import type { BusMetrics } from './metrics.js';
import { decodeMessage } from './codec.js';
import { BusError } from './errors.js';
import { busTracer, contextFromHeaders, failSpan, linkFromContext, subjectTemplate } from './trace.js';

/** One delivery as the transport hands it over (a JetStream message, or the in-memory one). */
export interface RawDelivery {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  readonly seq: number;
  readonly deliveryCount: number;
  /** Messages the consumer still holds after this one. */
  readonly pending: number;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
  working(): void;
}

/** What the consume loop needs from its bus. */
export interface ConsumeDeps {
  readonly logger: BusLogger;
  readonly metrics: BusMetrics | undefined;
  deadLetter(d: DeadLetterInput): Promise<void>;
}

/** @see ConsumeOptions.ackWaitMs */
export const DEFAULT_ACK_WAIT_MS = 30_000;
/** @see ConsumeOptions.maxAckPending */
export const DEFAULT_MAX_ACK_PENDING = 1000;
/** @see ConsumeOptions.maxDeliver */
export const DEFAULT_MAX_DELIVER = 10;
/** @see ConsumeOptions.nakBackoffMs */
export const DEFAULT_NAK_BACKOFF_MS: readonly number[] = [1000, 2000, 5000, 10_000];

/**
 * Runs `handler` over `messages` with up to `opts.concurrency` in flight, until the iterable ends
 * (the transport closes it on abort); resolves after the in-flight handlers finished.
 */
export async function runConsumeLoop<T>(
  deps: ConsumeDeps,
  schema: z.ZodType<T>,
  opts: ConsumeOptions,
  messages: AsyncIterable<RawDelivery>,
  handler: (d: Delivery<T>) => Promise<void>,
  onActivity: () => void,
): Promise<void> {
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const running = new Set<Promise<void>>();
  for await (const m of messages) {
    onActivity();
    const p = handleDelivery(deps, schema, opts, m, handler).finally(() => running.delete(p));
    running.add(p);
    if (running.size >= concurrency) await Promise.race(running);
    if (opts.signal.aborted) break;
  }
  await Promise.allSettled(running);
}

/** Handles one delivery inside a CONSUMER span whose parent is the producer's context. */
export async function handleDelivery<T>(deps: ConsumeDeps, schema: z.ZodType<T>, opts: ConsumeOptions, m: RawDelivery, handler: (d: Delivery<T>) => Promise<void>): Promise<void> {
  deps.metrics?.delivered(opts.stream, opts.durable, m.deliveryCount, m.pending);
  const parent = contextFromHeaders(m.headers);
  const template = subjectTemplate(m.subject);
  const links: Link[] = [];
  if (m.deliveryCount > 1) {
    const l = linkFromContext(parent);
    if (l) links.push(l);
  }
  const span = busTracer().startSpan(
    `process ${template}`,
    {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': m.subject,
        'messaging.destination.template': template,
        'messaging.consumer.group.name': opts.durable,
        'messaging.message.body.size': m.data.byteLength,
        'messaging.nats.stream': opts.stream,
        'messaging.nats.stream_sequence': m.seq,
        'messaging.nats.delivery_count': m.deliveryCount,
      },
    },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  let settled = false;
  const settle = (): boolean => {
    if (settled) return false;
    settled = true;
    return true;
  };
  const deadLetter = (reason: string): Promise<void> =>
    deps.deadLetter({ subject: m.subject, stream: opts.stream, consumer: opts.durable, seq: m.seq, deliveries: m.deliveryCount, reason, data: m.data });
  try {
    const parsed = decodeMessage(schema, m.subject, m.data);
    if (!parsed.ok) {
      await deadLetter(parsed.reason);
      settle();
      m.term();
      span.setAttribute('messaging.operation.name', 'term');
      failSpan(span, new BusError('SchemaInvalid', parsed.reason));
      return;
    }
    const delivery: Delivery<T> = {
      data: parsed.value,
      subject: m.subject,
      headers: m.headers,
      streamSequence: m.seq,
      deliveryCount: m.deliveryCount,
      context: ctx,
      ack: () => settle() && m.ack(),
      nak: (delayMs?: number) => settle() && m.nak(delayMs),
      term: () => settle() && m.term(),
      working: () => m.working(),
      get settled() {
        return settled;
      },
    };
    try {
      await context.with(ctx, () => handler(delivery));
      if (!settled && opts.autoAck !== false) {
        settle();
        m.ack();
      }
    } catch (e) {
      failSpan(span, e);
      if (settled) {
        deps.logger.error('handler failed after settling its message', { subject: m.subject, error: errorMessage(e) });
        return;
      }
      const retryable = typeof e === 'object' && e !== null && (e as { retryable?: unknown }).retryable === true;
      const maxDeliver = opts.maxDeliver ?? DEFAULT_MAX_DELIVER;
      if (retryable && (maxDeliver < 0 || m.deliveryCount < maxDeliver)) {
        const backoff = opts.nakBackoffMs ?? DEFAULT_NAK_BACKOFF_MS;
        const delay = backoff[Math.min(m.deliveryCount - 1, backoff.length - 1)] ?? 1000;
        deps.logger.warn('handler failed, retrying', { subject: m.subject, delivery: m.deliveryCount, delayMs: delay, error: errorMessage(e) });
        settle();
        m.nak(delay);
      } else {
        await deadLetter(retryable ? `gave up after ${m.deliveryCount} deliveries: ${errorMessage(e)}` : errorMessage(e));
        settle();
        m.term();
      }
    }
  } finally {
    span.end();
  }
}
