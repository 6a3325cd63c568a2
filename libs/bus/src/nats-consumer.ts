/**
 * Durable pull consumers on NATS JetStream: creation (idempotent, safe across replicas) and the
 * message source the shared {@link runConsumeLoop} drains.
 */
import { nanos } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import type { ConsumerConfig, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import type { ConsumeOptions, Consumption, Delivery } from './bus.js';
import { DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_ACK_PENDING, DEFAULT_MAX_DELIVER, runConsumeLoop, type ConsumeDeps, type RawDelivery } from './consume-loop.js';
import { isJsApiError, JsApiCodes } from './js-api-codes.js';

/** Creates the durable pull consumer if missing (config of an existing one is left as is). */
export async function ensureNatsConsumer(jsm: JetStreamManager, opts: ConsumeOptions): Promise<void> {
  const cfg: Partial<ConsumerConfig> = {
    durable_name: opts.durable,
    filter_subject: opts.filterSubject,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(opts.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
    max_deliver: opts.maxDeliver ?? DEFAULT_MAX_DELIVER,
    max_ack_pending: opts.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
    deliver_policy: opts.deliverNew ? DeliverPolicy.New : DeliverPolicy.All,
  };
  try {
    await jsm.consumers.info(opts.stream, opts.durable);
  } catch (e) {
    if (!isJsApiError(e)) throw e;
    try {
      await jsm.consumers.add(opts.stream, cfg);
    } catch (e2) {
      // created concurrently by another replica
      if (!isJsApiError(e2, JsApiCodes.ConsumerNameInUse)) throw e2;
    }
  }
}

function rawDelivery(m: JsMsg): RawDelivery {
  return {
    subject: m.subject,
    data: m.data,
    headers: m.headers,
    seq: m.seq,
    deliveryCount: m.info.deliveryCount,
    pending: m.info.pending,
    ack: () => m.ack(),
    nak: (delayMs) => m.nak(delayMs),
    term: () => m.term(),
    working: () => m.working(),
  };
}

async function* raw(messages: AsyncIterable<JsMsg>): AsyncIterable<RawDelivery> {
  for await (const m of messages) yield rawDelivery(m);
}

/** Consumes `opts.durable` until `opts.signal` aborts (see `Bus.consume`). */
export async function consumeNats<T>(
  js: JetStreamClient,
  jsm: JetStreamManager,
  deps: ConsumeDeps,
  schema: z.ZodType<T>,
  opts: ConsumeOptions,
  handler: (d: Delivery<T>) => Promise<void>,
): Promise<Consumption> {
  await ensureNatsConsumer(jsm, opts);
  const consumer = await js.consumers.get(opts.stream, opts.durable);
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const messages = await consumer.consume({ max_messages: Math.max(100, concurrency * 2), expires: 10_000 });
  let last = Date.now();
  const onAbort = (): void => void messages.close().catch((e: unknown) => deps.logger.debug('closing a consumer failed', { durable: opts.durable, error: errorMessage(e) }));
  opts.signal.addEventListener('abort', onAbort, { once: true });
  void (async () => {
    for await (const s of messages.status()) {
      if (s.type === 'heartbeats_missed') deps.logger.warn('consumer heartbeats missed', { durable: opts.durable });
      else last = Date.now();
    }
  })().catch((e: unknown) => deps.logger.debug('consumer status stream ended', { durable: opts.durable, error: errorMessage(e) }));
  const done = runConsumeLoop(deps, schema, opts, raw(messages), handler, () => {
    last = Date.now();
  });
  return { done, lastActivity: () => last };
}
