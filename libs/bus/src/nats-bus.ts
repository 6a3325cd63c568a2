/**
 * NatsBus: typed publish, consume, request/reply and KV over NATS JetStream.
 *
 * Contract:
 * - Every payload is validated with its zod schema before it is sent and again when it is received.
 * - A received message that fails validation, or whose handler fails with a non-retryable error, is
 *   terminated and copied with the reason to the node's dead-letter subject; it never crashes the
 *   process and is never acked silently. A retryable failure is nak'ed with backoff; deliveries are
 *   bounded by the consumer's `max_deliver`, after which the message is dead-lettered too.
 * - W3C trace context travels in the headers of every message; producer and consumer spans are made.
 */
import { connect, createInbox, nanos, RequestError, TimeoutError, NoRespondersError } from '@nats-io/transport-node';
import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import type { ConsumerConfig, JetStreamClient, JetStreamManager, JsMsg, PubAck } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { Context, Link } from '@opentelemetry/api';
import type { z } from 'zod';
import { DeadLetter, SpanBatch, Streams, Subjects, WireError, errorMessage, type SpanRecord } from '@splitlet/api';
import { BusError, isBusError } from './errors.js';
import { busTracer, contextFromHeaders, failSpan, headersWithContext, linkFromContext, subjectTemplate } from './trace.js';
import type { BusMetrics } from './metrics.js';
import { ensureTopology } from './topology.js';
import { TypedKv } from './typed-kv.js';

/** What the bus logs through (the telemetry logger satisfies it). */
export interface BusLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Options for {@link connectBus}. */
export interface BusOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`. */
  servers: string | string[];
  /** The process name; used as the NATS connection name and the dead-letter origin. */
  process: string;
  /** The node this process serves; dead letters go to its subject. */
  node: string;
  logger: BusLogger;
  /** Provision streams and buckets at connect. @default true */
  provision?: boolean;
  /**
   * Where consumer progress (pending, redeliveries), dead letters and request latency are reported,
   * e.g. `createBusMetrics(registry)` of `@splitlet/telemetry`. @default not reported
   */
  metrics?: BusMetrics;
  /** Credentials, when auth is on. */
  user?: string;
  pass?: string;
  token?: string;
  /** How often `serve` tells a requester it is still working on a request. @default PROGRESS_BEAT_MS */
  progressBeatMs?: number;
  /**
   * Ends the wait for the first connection (a shutdown while NATS is unreachable): connectBus then
   * rejects with the signal's reason. Without it, connectBus waits until NATS answers.
   */
  signal?: AbortSignal;
}

/** A received, validated message. Settle it once with ack, nak or term (or let the consumer auto-ack). */
export interface Delivery<T> {
  readonly data: T;
  readonly subject: string;
  readonly headers: MsgHdrs | undefined;
  readonly streamSequence: number;
  readonly deliveryCount: number;
  /** The producer's trace context. */
  readonly context: Context;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
  working(): void;
  readonly settled: boolean;
}

/** Options for {@link NatsBus.consume}. */
export interface ConsumeOptions {
  stream: string;
  durable: string;
  filterSubject: string;
  /** @default 30000 */
  ackWaitMs?: number;
  /** @default 10 */
  maxDeliver?: number;
  /** @default 1000 */
  maxAckPending?: number;
  /** Ack when the handler returns without settling. @default true */
  autoAck?: boolean;
  /** Nak delays by delivery attempt (the last repeats). @default [1000, 2000, 5000, 10000] */
  nakBackoffMs?: number[];
  /** Deliver only new messages when the consumer is first created. @default false (all) */
  deliverNew?: boolean;
  /** Handle up to this many messages at once. @default 1 */
  concurrency?: number;
  signal: AbortSignal;
}

/** A running consumer. */
export interface Consumption {
  /** Resolves when the loop has stopped (after abort) and in-flight handlers finished. */
  readonly done: Promise<void>;
  /** Time of the last message or heartbeat seen, for health by progress. */
  lastActivity(): number;
}

/** Options for {@link NatsBus.request}. */
export interface RequestOptions {
  /** The overall deadline. */
  timeoutMs: number;
  /**
   * Fail when the responder sends nothing (neither a reply nor a progress beat) for this long, so a
   * responder that died mid-request is noticed long before `timeoutMs`. Responders beat every
   * {@link PROGRESS_BEAT_MS} while they work. @default 3 × PROGRESS_BEAT_MS
   */
  idleTimeoutMs?: number;
  headers?: MsgHdrs;
}

/** How often a responder still working on a request tells the requester so. */
export const PROGRESS_BEAT_MS = 5000;

/** A handler's view of a request. */
export interface ServeContext {
  subject: string;
  context: Context;
}

type ReplyEnvelope = { ok: true; data: unknown } | { ok: false; error: WireError } | { progress: true };

const MAX_DEAD_LETTER_PAYLOAD = 64 * 1024;
const textDecoder = new TextDecoder();

/** Connects to NATS and returns a ready bus (topology provisioned unless `provision: false`). */
export async function connectBus(opts: BusOptions): Promise<NatsBus> {
  const connOpts: Parameters<typeof connect>[0] = {
    servers: opts.servers,
    name: `${opts.process}@${opts.node}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
  };
  if (opts.user !== undefined) connOpts.user = opts.user;
  if (opts.pass !== undefined) connOpts.pass = opts.pass;
  if (opts.token !== undefined) connOpts.token = opts.token;
  const nc = await connectFirst(connOpts, opts);
  const jsm = await jetstreamManager(nc);
  const bus = new NatsBus(nc, jsm, opts);
  if (opts.provision !== false) await ensureTopology(nc, jsm);
  return bus;
}

const FIRST_CONNECT_RETRY_MAX_MS = 2000;

/** Server URLs without any `user:password@` part, for logs. */
function withoutCredentials(servers: string | string[]): string[] {
  return (Array.isArray(servers) ? servers : [servers]).map((u) => u.replace(/\/\/[^/@]*@/, '//'));
}

/**
 * The first connection: retried until NATS answers (every 250 ms, backing off to 2 s, with a warning
 * on the first failure and then every 10th) or until `opts.signal` aborts. An attempt still in
 * flight at the abort is closed when it settles.
 */
async function connectFirst(connOpts: Parameters<typeof connect>[0], opts: BusOptions): Promise<NatsConnection> {
  const { signal } = opts;
  if (signal === undefined) return connect(connOpts);
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  for (let attempt = 1; ; attempt++) {
    const pending = connect({ ...connOpts, waitOnFirstConnect: false });
    try {
      return await Promise.race([pending, aborted]);
    } catch (e) {
      if (signal.aborted) {
        pending.then((nc) => nc.close(), () => undefined).catch(() => undefined);
        throw e;
      }
      if (attempt === 1 || attempt % 10 === 0) {
        opts.logger.warn('NATS not reachable yet', { servers: withoutCredentials(opts.servers), attempt, err: errorMessage(e) });
      }
    }
    const waitMs = Math.min(250 * attempt, FIRST_CONNECT_RETRY_MAX_MS);
    await Promise.race([new Promise((r) => setTimeout(r, waitMs).unref()), aborted]);
  }
}

/** The NATS implementation of the bus. Create it with {@link connectBus}. */
export class NatsBus {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly process: string;
  readonly node: string;
  readonly logger: BusLogger;
  readonly #metrics: BusMetrics | undefined;
  readonly #kvs = new Map<string, Promise<TypedKv<unknown>>>();
  readonly #subs = new Set<Subscription>();
  readonly #inflight = new Set<Promise<unknown>>();
  /** JetStream publishes awaiting their ack (close() lets them finish before it drains). */
  readonly #publishing = new Set<Promise<unknown>>();
  #deadLettered = 0;
  readonly #beatMs: number;

  constructor(nc: NatsConnection, jsm: JetStreamManager, opts: BusOptions) {
    this.nc = nc;
    this.jsm = jsm;
    this.js = jetstream(nc);
    this.process = opts.process;
    this.node = opts.node;
    this.logger = opts.logger;
    this.#metrics = opts.metrics;
    this.#beatMs = opts.progressBeatMs ?? PROGRESS_BEAT_MS;
  }

  /** The server's version, e.g. `2.9.10`, for capability checks. */
  get serverVersion(): string {
    return this.nc.info?.version ?? '0.0.0';
  }

  /** Messages this process has dead-lettered. */
  get deadLetteredCount(): number {
    return this.#deadLettered;
  }

  /**
   * Validates `msg` and publishes it to JetStream with the active trace context in its headers.
   * Throws BusError SchemaInvalid (nothing sent) when `msg` does not match `schema`.
   */
  async publish<S extends z.ZodType>(
    schema: S,
    subject: string,
    msg: z.input<S>,
    opts: { msgID?: string; ctx?: Context; expectLastSubjectSequence?: number } = {},
  ): Promise<PubAck> {
    const data = this.#encode(schema, subject, msg);
    const tracer = busTracer();
    const parent = opts.ctx ?? context.active();
    const span = tracer.startSpan(
      `send ${subjectTemplate(subject)}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'nats',
          'messaging.operation.type': 'send',
          'messaging.operation.name': 'publish',
          'messaging.destination.name': subject,
          'messaging.destination.template': subjectTemplate(subject),
          'messaging.message.body.size': data.byteLength,
          ...(opts.msgID !== undefined ? { 'messaging.message.id': opts.msgID } : {}),
        },
      },
      parent,
    );
    try {
      const h = headersWithContext(trace.setSpan(parent, span));
      const pubOpts: Parameters<JetStreamClient['publish']>[2] = { headers: h };
      if (opts.msgID !== undefined) pubOpts.msgID = opts.msgID;
      if (opts.expectLastSubjectSequence !== undefined) pubOpts.expect = { lastSubjectSequence: opts.expectLastSubjectSequence };
      const sent = this.js.publish(subject, data, pubOpts);
      this.#publishing.add(sent);
      const forget = (): void => void this.#publishing.delete(sent);
      void sent.then(forget, forget);
      const ack = await sent;
      span.setAttribute('messaging.nats.stream', ack.stream);
      span.setAttribute('messaging.nats.stream_sequence', ack.seq);
      return ack;
    } catch (e) {
      failSpan(span, e);
      throw e;
    } finally {
      span.end();
    }
  }

  /**
   * Keeps finished spans on the node's `SL_SPANS`, one {@link SpanBatch} per trace on that trace's
   * subject, so `splitlet trace` works without a collector. The sink of every process's
   * span-record processor.
   */
  async publishSpans(records: readonly SpanRecord[]): Promise<void> {
    const byTrace = new Map<string, SpanRecord[]>();
    for (const r of records) {
      const list = byTrace.get(r.traceId);
      if (list === undefined) byTrace.set(r.traceId, [r]);
      else list.push(r);
    }
    await Promise.all(
      [...byTrace].map(([traceId, spans]) => this.publish(SpanBatch, Subjects.spans(this.node, traceId), { type: 'kubelet.trace.SpanBatch.v1', spans })),
    );
  }

  /**
   * The span records on `SL_SPANS` under `filterSubject` (`Subjects.spans(node, traceId)` for one
   * trace, `Subjects.spansAll(node)` for all), in stream order.
   */
  async readSpans(filterSubject: string, onSpan: (record: SpanRecord) => void, opts: { onInvalid?: (reason: string) => void } = {}): Promise<void> {
    await this.readStream(SpanBatch, Streams.spans, filterSubject, (batch) => batch.spans.forEach((r) => onSpan(r)), opts);
  }

  /** Publishes on core NATS (no persistence): for pokes whose loss is harmless. */
  publishCore(subject: string, payload: unknown = {}): void {
    this.nc.publish(subject, JSON.stringify(payload), { headers: headersWithContext() });
  }

  /** Subscribes on core NATS; `handler` gets the decoded JSON (or undefined). */
  subscribeCore(subject: string, handler: (data: unknown, msg: Msg) => void, signal: AbortSignal): void {
    const sub = this.nc.subscribe(subject, {
      callback: (err, m) => {
        if (err) return;
        let data: unknown;
        try {
          data = m.data.length ? m.json() : undefined;
        } catch {
          data = undefined;
        }
        handler(data, m);
      },
    });
    this.#subs.add(sub);
    signal.addEventListener('abort', () => {
      sub.unsubscribe();
      this.#subs.delete(sub);
    });
  }

  /** Creates the durable pull consumer if missing (config of an existing one is left as is). */
  async ensureConsumer(opts: ConsumeOptions): Promise<void> {
    const cfg: Partial<ConsumerConfig> = {
      durable_name: opts.durable,
      filter_subject: opts.filterSubject,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(opts.ackWaitMs ?? 30_000),
      max_deliver: opts.maxDeliver ?? 10,
      max_ack_pending: opts.maxAckPending ?? 1000,
      deliver_policy: opts.deliverNew ? DeliverPolicy.New : DeliverPolicy.All,
    };
    try {
      await this.jsm.consumers.info(opts.stream, opts.durable);
    } catch (e) {
      if (!(e instanceof JetStreamApiError)) throw e;
      try {
        await this.jsm.consumers.add(opts.stream, cfg);
      } catch (e2) {
        // created concurrently by another replica
        if (!(e2 instanceof JetStreamApiError && e2.code === 10148)) throw e2;
      }
    }
  }

  /**
   * Consumes a durable pull consumer until `signal` aborts. Each message is validated, then handed to
   * `handler` inside a CONSUMER span whose parent is the producer's context.
   */
  async consume<S extends z.ZodType>(
    schema: S,
    opts: ConsumeOptions,
    handler: (d: Delivery<z.output<S>>) => Promise<void>,
  ): Promise<Consumption> {
    await this.ensureConsumer(opts);
    const consumer = await this.js.consumers.get(opts.stream, opts.durable);
    const concurrency = Math.max(1, opts.concurrency ?? 1);
    const messages = await consumer.consume({ max_messages: Math.max(100, concurrency * 2), expires: 10_000 });
    let last = Date.now();
    const onAbort = (): void => void messages.close().catch(() => undefined);
    opts.signal.addEventListener('abort', onAbort, { once: true });
    void (async () => {
      for await (const s of messages.status()) {
        if (s.type === 'heartbeats_missed') this.logger.warn('consumer heartbeats missed', { durable: opts.durable });
        else last = Date.now();
      }
    })().catch(() => undefined);
    const running = new Set<Promise<void>>();
    const done = (async () => {
      for await (const m of messages) {
        last = Date.now();
        const p = this.#handle(schema as unknown as z.ZodType<z.output<S>>, opts, m, handler).finally(() => running.delete(p));
        running.add(p);
        if (running.size >= concurrency) await Promise.race(running);
        if (opts.signal.aborted) break;
      }
      await Promise.allSettled(running);
    })();
    return { done, lastActivity: () => last };
  }

  async #handle<T>(schema: z.ZodType<T>, opts: ConsumeOptions, m: JsMsg, handler: (d: Delivery<T>) => Promise<void>): Promise<void> {
    this.#metrics?.delivered(opts.stream, opts.durable, m.info.deliveryCount, m.info.pending);
    const parent = contextFromHeaders(m.headers);
    const template = subjectTemplate(m.subject);
    const links: Link[] = [];
    if (m.info.deliveryCount > 1) {
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
          'messaging.nats.delivery_count': m.info.deliveryCount,
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
    try {
      const parsed = this.#decode(schema, m.subject, m.data);
      if (!parsed.ok) {
        await this.deadLetter({ subject: m.subject, stream: opts.stream, consumer: opts.durable, seq: m.seq, deliveries: m.info.deliveryCount, reason: parsed.reason, data: m.data });
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
        deliveryCount: m.info.deliveryCount,
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
          this.logger.error('handler failed after settling its message', { subject: m.subject, error: errorMessage(e) });
          return;
        }
        const retryable = typeof e === 'object' && e !== null && (e as { retryable?: unknown }).retryable === true;
        const maxDeliver = opts.maxDeliver ?? 10;
        if (retryable && m.info.deliveryCount < maxDeliver) {
          const backoff = opts.nakBackoffMs ?? [1000, 2000, 5000, 10_000];
          const delay = backoff[Math.min(m.info.deliveryCount - 1, backoff.length - 1)] ?? 1000;
          this.logger.warn('handler failed, retrying', { subject: m.subject, delivery: m.info.deliveryCount, delayMs: delay, error: errorMessage(e) });
          settle();
          m.nak(delay);
        } else {
          const reason = retryable ? `gave up after ${m.info.deliveryCount} deliveries: ${errorMessage(e)}` : errorMessage(e);
          await this.deadLetter({ subject: m.subject, stream: opts.stream, consumer: opts.durable, seq: m.seq, deliveries: m.info.deliveryCount, reason, data: m.data });
          settle();
          m.term();
        }
      }
    } finally {
      span.end();
    }
  }

  /**
   * Sends a validated request and returns the validated reply. Throws BusError: NoResponders (no
   * process serves `subject`), Timeout (no reply within `timeoutMs`), Remote (the responder
   * returned an error; `remoteCode`, `retryable` carried over), SchemaInvalid.
   */
  async request<Q extends z.ZodType, R extends z.ZodType>(
    reqSchema: Q,
    repSchema: R,
    subject: string,
    req: z.input<Q>,
    opts: RequestOptions,
  ): Promise<z.output<R>> {
    const data = this.#encode(reqSchema, subject, req);
    const started = performance.now();
    let outcome = 'ok';
    const span = busTracer().startSpan(`send ${subjectTemplate(subject)}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'messaging.system': 'nats',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'request',
        'messaging.destination.name': subject,
        'messaging.destination.template': subjectTemplate(subject),
        'messaging.message.body.size': data.byteLength,
      },
    });
    try {
      let env: ReplyEnvelope;
      try {
        env = await this.#exchange(subject, data, opts, headersWithContext(trace.setSpan(context.active(), span)));
      } catch (e) {
        throw isBusError(e) ? e : this.#requestError(subject, opts.timeoutMs, e);
      }
      if ('progress' in env) throw new BusError('SchemaInvalid', `reply on ${subject} is a progress beat, not a reply`);
      if (!env.ok) {
        const w = WireError.safeParse(env.error);
        const err = w.success ? w.data : { code: 'Unknown', message: 'malformed error reply', retryable: false };
        throw new BusError('Remote', err.message, { retryable: err.retryable, remoteCode: err.code });
      }
      const parsed = repSchema.safeParse(env.data);
      if (!parsed.success) throw new BusError('SchemaInvalid', `reply on ${subject} does not match its schema: ${formatIssues(parsed.error)}`);
      return parsed.data;
    } catch (e) {
      outcome = isBusError(e) ? e.code : 'Error';
      failSpan(span, e);
      throw e;
    } finally {
      span.end();
      this.#metrics?.requestFinished(subjectTemplate(subject), outcome, (performance.now() - started) / 1000);
    }
  }

  /**
   * Publishes a request with its own inbox and waits for the reply, skipping progress beats; fails
   * on no responders, on the overall deadline, or when the responder goes quiet for the idle timeout.
   */
  #exchange(subject: string, data: Uint8Array, opts: RequestOptions, hdrs: MsgHdrs): Promise<ReplyEnvelope> {
    const idleMs = opts.idleTimeoutMs ?? 3 * PROGRESS_BEAT_MS;
    const inbox = createInbox();
    return new Promise<ReplyEnvelope>((resolve, reject) => {
      let idle: NodeJS.Timeout | undefined;
      const finish = (fn: () => void): void => {
        clearTimeout(overall);
        clearTimeout(idle);
        sub.unsubscribe();
        fn();
      };
      const armIdle = (): void => {
        clearTimeout(idle);
        if (idleMs < opts.timeoutMs) {
          idle = setTimeout(
            () => finish(() => reject(new BusError('Timeout', `no reply on ${subject}: the responder went silent for ${idleMs} ms (did it stop?)`, { retryable: true }))),
            idleMs,
          );
        }
      };
      const overall = setTimeout(() => finish(() => reject(new BusError('Timeout', `no reply on ${subject} within ${opts.timeoutMs} ms`, { retryable: true }))), opts.timeoutMs);
      const sub = this.nc.subscribe(inbox, {
        callback: (err, m) => {
          if (err) return finish(() => reject(err));
          if (m.headers?.code === 503 && m.data.length === 0) {
            return finish(() => reject(new BusError('NoResponders', `no responder for ${subject}: is the process that serves it running?`, { retryable: true })));
          }
          let env: ReplyEnvelope;
          try {
            env = JSON.parse(textDecoder.decode(m.data)) as ReplyEnvelope;
          } catch (e) {
            return finish(() => reject(new BusError('SchemaInvalid', `reply on ${subject} is not JSON: ${errorMessage(e)}`, { cause: e })));
          }
          if (typeof env === 'object' && env !== null && 'progress' in env) return armIdle();
          finish(() => resolve(env));
        },
      });
      armIdle();
      this.nc.publish(subject, data, { reply: inbox, headers: hdrs });
    });
  }

  #requestError(subject: string, timeoutMs: number, e: unknown): BusError {
    const cause = e instanceof RequestError ? e.cause ?? e : e;
    if (cause instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders())) {
      return new BusError('NoResponders', `no responder for ${subject}: is the process that serves it running?`, { retryable: true, cause: e });
    }
    if (cause instanceof TimeoutError || e instanceof TimeoutError) {
      return new BusError('Timeout', `no reply on ${subject} within ${timeoutMs} ms`, { retryable: true, cause: e });
    }
    return new BusError('Closed', `request on ${subject} failed: ${errorMessage(e)}`, { retryable: true, cause: e });
  }

  /**
   * Serves request/reply on `subject` in queue group `queue` (replicas share the load). A request
   * that fails validation gets a SchemaInvalid error reply and a dead-letter entry; a handler error
   * is returned to the caller as a WireError (KubeletError code/retryable kept).
   */
  serve<Q extends z.ZodType, R extends z.ZodType>(
    subject: string,
    reqSchema: Q,
    repSchema: R,
    handler: (req: z.output<Q>, sc: ServeContext) => Promise<z.input<R>>,
    opts: { queue: string; signal: AbortSignal },
  ): void {
    const sub = this.nc.subscribe(subject, {
      queue: opts.queue,
      callback: (err, m) => {
        if (err) {
          this.logger.error('subscription error', { subject, error: errorMessage(err) });
          return;
        }
        const p = this.#serveOne(subject, reqSchema, repSchema, handler, m);
        this.#inflight.add(p);
        void p.finally(() => this.#inflight.delete(p));
      },
    });
    this.#subs.add(sub);
    opts.signal.addEventListener('abort', () => {
      void sub.drain().catch(() => undefined);
      this.#subs.delete(sub);
    });
  }

  async #serveOne<Q extends z.ZodType, R extends z.ZodType>(
    subject: string,
    reqSchema: Q,
    repSchema: R,
    handler: (req: z.output<Q>, sc: ServeContext) => Promise<z.input<R>>,
    m: Msg,
  ): Promise<void> {
    const parent = contextFromHeaders(m.headers);
    const span = busTracer().startSpan(
      `process ${subjectTemplate(subject)}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'messaging.system': 'nats',
          'messaging.operation.type': 'process',
          'messaging.destination.name': m.subject,
          'messaging.destination.template': subjectTemplate(subject),
          'messaging.message.body.size': m.data.byteLength,
        },
      },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    const respond = (env: ReplyEnvelope): void => {
      if (m.reply) m.respond(JSON.stringify(env));
    };
    // Tell the requester we are still at it, so it can tell a slow answer from a dead responder.
    const beat = m.reply ? setInterval(() => respond({ progress: true }), this.#beatMs) : undefined;
    try {
      const parsed = this.#decode(reqSchema as unknown as z.ZodType<z.output<Q>>, m.subject, m.data);
      if (!parsed.ok) {
        await this.deadLetter({ subject: m.subject, reason: parsed.reason, data: m.data });
        failSpan(span, new BusError('SchemaInvalid', parsed.reason));
        respond({ ok: false, error: { code: 'SchemaInvalid', message: parsed.reason, retryable: false } });
        return;
      }
      const out = await context.with(ctx, () => handler(parsed.value, { subject: m.subject, context: ctx }));
      const checked = repSchema.safeParse(out);
      if (!checked.success) {
        const reason = `reply on ${subject} does not match its schema: ${formatIssues(checked.error)}`;
        this.logger.error('invalid reply', { subject, reason });
        failSpan(span, new Error(reason));
        respond({ ok: false, error: { code: 'SchemaInvalid', message: reason, retryable: false } });
        return;
      }
      respond({ ok: true, data: checked.data });
    } catch (e) {
      failSpan(span, e);
      const w = e as { code?: unknown; retryable?: unknown };
      respond({
        ok: false,
        error: {
          code: typeof w?.code === 'string' ? w.code : 'Internal',
          message: errorMessage(e),
          retryable: w?.retryable === true,
        },
      });
    } finally {
      clearInterval(beat);
      span.end();
    }
  }

  /**
   * Reads a stream's stored messages on `filterSubject` with an ephemeral ordered consumer, oldest
   * first: everything stored now, then (with `follow`) new ones until `signal` aborts. Messages that
   * fail validation are skipped and reported to `onInvalid`.
   */
  async readStream<S extends z.ZodType>(
    schema: S,
    stream: string,
    filterSubject: string,
    onMessage: (value: z.output<S>, meta: { subject: string; seq: number; time: Date }) => void,
    opts: { follow?: boolean; signal?: AbortSignal; onInvalid?: (reason: string) => void } = {},
  ): Promise<void> {
    const info = await this.jsm.streams.info(stream, { subjects_filter: filterSubject }).catch(() => undefined);
    const consumer = await this.js.consumers.get(stream, { filter_subjects: filterSubject });
    const pendingAtStart = info ? Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0) : undefined;
    if (!opts.follow && pendingAtStart === 0) return;
    const messages = await consumer.consume({ max_messages: 256 });
    const stop = (): void => void messages.close().catch(() => undefined);
    opts.signal?.addEventListener('abort', stop, { once: true });
    try {
      for await (const m of messages) {
        const parsed = this.#decode(schema as unknown as z.ZodType<z.output<S>>, m.subject, m.data);
        if (parsed.ok) onMessage(parsed.value, { subject: m.subject, seq: m.seq, time: m.time });
        else opts.onInvalid?.(parsed.reason);
        if (!opts.follow && m.info.pending === 0) break;
      }
    } finally {
      stop();
    }
  }

  /** Opens (or returns the already open) typed view of a KV bucket. */
  kv<S extends z.ZodType>(bucket: string, schema: S): Promise<TypedKv<z.output<S>>> {
    const key = bucket;
    let p = this.#kvs.get(key) as Promise<TypedKv<z.output<S>>> | undefined;
    if (!p) {
      p = new Kvm(this.nc).open(bucket).then((kv) => new TypedKv<z.output<S>>(kv, bucket, schema as unknown as z.ZodType<z.output<S>>, this));
      this.#kvs.set(key, p as Promise<TypedKv<unknown>>);
    }
    return p;
  }

  /** Copies an unprocessable message, with the reason, to the node's dead-letter subject, and logs it. */
  async deadLetter(d: { subject: string; reason: string; data: Uint8Array; stream?: string; consumer?: string; seq?: number; deliveries?: number }): Promise<void> {
    this.#deadLettered++;
    this.#metrics?.deadLettered(subjectTemplate(d.subject));
    this.logger.error('dead-lettered a message', { subject: d.subject, reason: d.reason, stream: d.stream, seq: d.seq });
    const rec: DeadLetter = {
      type: 'kubelet.bus.DeadLetter.v1',
      subject: d.subject,
      reason: d.reason,
      payload: textDecoder.decode(d.data.subarray(0, MAX_DEAD_LETTER_PAYLOAD)),
      payloadBytes: d.data.byteLength,
      process: this.process,
      at: new Date().toISOString(),
      ...(d.stream !== undefined ? { stream: d.stream } : {}),
      ...(d.consumer !== undefined ? { consumer: d.consumer } : {}),
      ...(d.seq !== undefined ? { streamSequence: d.seq } : {}),
      ...(d.deliveries !== undefined ? { deliveryCount: d.deliveries } : {}),
    };
    try {
      await this.js.publish(Subjects.deadLetter(this.node, this.process), JSON.stringify(DeadLetter.parse(rec)));
    } catch (e) {
      this.logger.error('could not publish dead letter', { subject: d.subject, error: errorMessage(e) });
    }
  }

  #encode<S extends z.ZodType>(schema: S, subject: string, msg: unknown): Uint8Array {
    const parsed = schema.safeParse(msg);
    if (!parsed.success) {
      throw new BusError('SchemaInvalid', `refusing to send an invalid message on ${subject}: ${formatIssues(parsed.error)}`);
    }
    return new TextEncoder().encode(JSON.stringify(parsed.data));
  }

  #decode<T>(schema: z.ZodType<T>, subject: string, data: Uint8Array): { ok: true; value: T } | { ok: false; reason: string } {
    let json: unknown;
    try {
      json = JSON.parse(textDecoder.decode(data));
    } catch (e) {
      return { ok: false, reason: `message on ${subject} is not valid JSON: ${errorMessage(e)}` };
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) return { ok: false, reason: `message on ${subject} does not match its schema: ${formatIssues(parsed.error)}` };
    return { ok: true, value: parsed.data };
  }

  /**
   * Waits for in-flight request handlers, then for the JetStream publishes still awaiting their
   * ack — among them the span records of spans that ended as the handlers finished, which a
   * process's span-record processor publishes without waiting — then drains and closes the
   * connection. Without that wait, the drain closes the connection under publishes in flight
   * ("connection closed"), and the spans a process records last are lost to `SL_SPANS`.
   */
  async close(): Promise<void> {
    for (const s of this.#subs) s.unsubscribe();
    this.#subs.clear();
    await Promise.allSettled([...this.#inflight]);
    while (this.#publishing.size > 0) await Promise.allSettled([...this.#publishing]);
    if (!this.nc.isClosed()) {
      try {
        await this.nc.drain();
      } catch {
        await this.nc.close();
      }
    }
  }
}

/** Formats zod issues as `path: message; …`. */
export function formatIssues(err: z.ZodError): string {
  return err.issues
    .slice(0, 8)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

export { isBusError };
