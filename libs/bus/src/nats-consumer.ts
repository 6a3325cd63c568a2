/**
 * Durable pull consumers on NATS JetStream: creation (idempotent, safe across replicas) and the
 * message source the shared {@link runConsumeLoop} drains.
 */
import { nanos } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, RetentionPolicy } from '@nats-io/jetstream';
import type { ConsumerConfig, ConsumerInfo, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import type { ConsumeOptions, Consumption, Delivery } from './bus.js';
import { DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_ACK_PENDING, DEFAULT_MAX_DELIVER, runConsumeLoop, type ConsumeDeps, type RawDelivery } from './consume-loop.js';
import { isJsApiError, JsApiCodes } from './js-api-codes.js';

/** The server-side config `opts` declares. */
function consumerConfig(opts: ConsumeOptions): Partial<ConsumerConfig> {
  return {
    durable_name: opts.durable,
    filter_subject: opts.filterSubject,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(opts.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
    max_deliver: opts.maxDeliver ?? DEFAULT_MAX_DELIVER,
    max_ack_pending: opts.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
    deliver_policy: opts.deliverNew ? DeliverPolicy.New : DeliverPolicy.All,
  };
}

/**
 * Creates the durable pull consumer if missing (config of an existing one is left as is). With
 * `opts.takeOver`, an existing consumer holding unsettled deliveries or pull requests (the new holder
 * has made none yet: they are a previous holder's, which the server would hand new messages that
 * nobody reads until their ack wait ran out — a pod-worker partition released to another instance
 * left one for up to its 10 s expiry), or declared with another ack wait, max deliver or max ack
 * pending, is deleted and created again from the message after its ack floor (on a work-queue
 * stream, from its first message: only unacknowledged ones are left): what the previous
 * holder left is delivered at once, and its pull requests and settles end with the old consumer.
 */
export async function ensureNatsConsumer(jsm: JetStreamManager, opts: ConsumeOptions): Promise<TakeOver | undefined> {
  const cfg = consumerConfig(opts);
  let info: ConsumerInfo | undefined;
  try {
    info = await jsm.consumers.info(opts.stream, opts.durable);
  } catch (e) {
    if (!isJsApiError(e)) throw e;
  }
  if (info !== undefined) {
    if (!opts.takeOver) return undefined;
    if (sameConfigOf(info, cfg) && info.num_ack_pending === 0 && info.num_waiting === 0) return undefined;
    await jsm.consumers.delete(opts.stream, opts.durable);
    // A work-queue stream keeps only what no consumer acknowledged yet, and takes no start
    // sequence (the server refuses one): from its first message is from the ack floor.
    const { config } = await jsm.streams.info(opts.stream);
    if (config.retention !== RetentionPolicy.Workqueue) {
      cfg.deliver_policy = DeliverPolicy.StartSequence;
      cfg.opt_start_seq = info.ack_floor.stream_seq + 1;
    }
  }
  try {
    await jsm.consumers.add(opts.stream, cfg);
  } catch (e2) {
    // created concurrently by another replica
    if (!isJsApiError(e2, JsApiCodes.ConsumerNameInUse)) throw e2;
  }
  return info === undefined
    ? undefined
    : { unsettled: info.num_ack_pending, waitingPulls: info.num_waiting, startSequence: info.ack_floor.stream_seq + 1, reconfigured: !sameConfigOf(info, cfg) };
}

/** What a takeover did. */
export interface TakeOver {
  /** Deliveries the previous holder left unsettled. */
  readonly unsettled: number;
  /** Pull requests a previous holder left waiting. */
  readonly waitingPulls: number;
  /** The stream sequence the new consumer starts at. */
  readonly startSequence: number;
  /** The consumer had been declared with another config. */
  readonly reconfigured: boolean;
}

function sameConfigOf(info: ConsumerInfo, cfg: Partial<ConsumerConfig>): boolean {
  const c = info.config;
  return c.ack_wait === cfg.ack_wait && c.max_deliver === cfg.max_deliver && c.max_ack_pending === cfg.max_ack_pending && c.filter_subject === cfg.filter_subject;
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

/**
 * Consumes `opts.durable` until `opts.signal` aborts (see `Bus.consume`). `flush` (the connection's)
 * runs once the loop has ended: `done` resolves after the server has the acks and naks the handlers
 * sent (they are published without waiting), so a holder taking the consumer over next — on another
 * connection — starts after them and does not get what this one settled again.
 */
export async function consumeNats<T>(
  js: JetStreamClient,
  jsm: JetStreamManager,
  deps: ConsumeDeps,
  schema: z.ZodType<T>,
  opts: ConsumeOptions,
  handler: (d: Delivery<T>) => Promise<void>,
  flush: () => Promise<void>,
): Promise<Consumption> {
  const took = await ensureNatsConsumer(jsm, opts);
  if (took !== undefined) deps.logger.info('took the consumer over', { stream: opts.stream, durable: opts.durable, ...took });
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
  }).then(() => flush().catch((e: unknown) => deps.logger.debug('flushing the settles of a stopped consumer failed', { durable: opts.durable, error: errorMessage(e) })));
  return { done, lastActivity: () => last };
}
