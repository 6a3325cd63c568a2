/**
 * The `Bus` contract: what services may do with the message bus, and nothing more.
 *
 * Services are typed against {@link Bus} (usually a `Pick<Bus, …>` of the methods an adapter
 * uses); `NatsBus` implements it over NATS JetStream, and `InMemoryBus` of `@splitlet/bus/testing`
 * implements it in memory for unit tests. One contract suite (`test/bus-contract.test.ts`) runs
 * against both, so the fake cannot drift from the real thing.
 *
 * Semantics every implementation keeps:
 * - Every payload is validated with its zod schema before it is sent and again when it is received.
 * - A received message that fails validation, or whose handler fails with a non-retryable error, is
 *   terminated and copied with the reason to the node's dead-letter subject; a retryable failure is
 *   nak'ed with backoff, bounded by `maxDeliver`, after which it is dead-lettered too. Never acked on
 *   failure.
 * - W3C trace context travels with every message.
 * - KV revisions are per-bucket sequences; `create` fails when the key exists, `update` and
 *   `delete(key, revision)` are compare-and-swaps (BusError `Conflict`).
 */
import type { Context } from '@opentelemetry/api';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { z } from 'zod';
import type { SpanRecord } from '@splitlet/api';
import type { KvBucket } from './kv-bucket.js';

/** What the bus logs through (the telemetry logger satisfies it). */
export interface BusLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
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
  /** Redeliver after `delayMs` (at once when omitted). */
  nak(delayMs?: number): void;
  /** Never redeliver. */
  term(): void;
  /** Still working: restarts the ack wait. */
  working(): void;
  readonly settled: boolean;
}

/** Options for {@link Bus.consume}. */
export interface ConsumeOptions {
  stream: string;
  durable: string;
  filterSubject: string;
  /** @default 30000 */
  ackWaitMs?: number;
  /** Deliveries before a retryable failure is dead-lettered; -1: never (redelivered with backoff until it succeeds). @default 10 */
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
  /**
   * The durable has one holder at a time (a leader), and this one takes it over: deliveries a
   * previous holder left unsettled (it died or was fenced off) are delivered again at once rather
   * than after their ack wait, pull requests it left waiting (which would take new messages nobody
   * reads until their ack wait ran out) end, and a consumer declared with another config is
   * redeclared. Every
   * message above the consumer's ack floor is delivered again. A previous holder still running gets
   * no more deliveries and its settles are ignored. @default false
   */
  takeOver?: boolean;
  signal: AbortSignal;
}

/** A running consumer. */
export interface Consumption {
  /** Resolves when the loop has stopped (after abort) and in-flight handlers finished. */
  readonly done: Promise<void>;
  /** Time of the last message or heartbeat seen, for health by progress. */
  lastActivity(): number;
}

/** Options for {@link Bus.publish}. */
export interface PublishOptions {
  /** Deduplication id: a second publish with the same id within the stream's window is dropped. */
  msgID?: string;
  /** The trace context to parent the producer span on. @default the active context */
  ctx?: Context;
  /** Store only if the subject's last message is at this sequence (BusError Conflict otherwise). */
  expectLastSubjectSequence?: number;
}

/** Where a publish was stored. */
export interface PublishAck {
  readonly stream: string;
  readonly seq: number;
  /** True when `msgID` was seen before and nothing was stored. */
  readonly duplicate: boolean;
}

/** Options for {@link Bus.request}. */
export interface RequestOptions {
  /** The overall deadline. */
  timeoutMs: number;
  /**
   * Fail when the responder sends nothing (neither a reply nor a progress beat) for this long, so a
   * responder that died mid-request is noticed long before `timeoutMs`. Responders beat every
   * `PROGRESS_BEAT_MS` while they work. @default 3 × PROGRESS_BEAT_MS
   */
  idleTimeoutMs?: number;
  headers?: MsgHdrs;
}

/** A handler's view of a request. */
export interface ServeContext {
  subject: string;
  context: Context;
}

/** Options for {@link Bus.serve}. */
export interface ServeOptions {
  /** Queue group: replicas serving the same subject share the requests. */
  queue: string;
  signal: AbortSignal;
}

/** A core (not persisted) message as a {@link Bus.subscribeCore} handler sees it. */
export interface CoreMessageMeta {
  readonly subject: string;
  readonly headers?: MsgHdrs | undefined;
}

/** Where a stored message came from, for {@link Bus.readStream}. */
export interface StoredMessageMeta {
  subject: string;
  seq: number;
  time: Date;
}

/** Options for {@link Bus.readStream}. */
export interface ReadStreamOptions {
  /** Keep reading new messages until `signal` aborts. @default false */
  follow?: boolean;
  signal?: AbortSignal;
  /** Told about every stored message that fails validation (it is skipped). */
  onInvalid?: (reason: string) => void;
}

/** A message the bus could not process, for {@link Bus.deadLetter}. */
export interface DeadLetterInput {
  subject: string;
  reason: string;
  data: Uint8Array;
  stream?: string;
  consumer?: string;
  seq?: number;
  deliveries?: number;
}

/** The message bus as services see it. */
export interface Bus {
  /** The process name (dead-letter origin). */
  readonly process: string;
  /** The node this process serves. */
  readonly node: string;
  readonly logger: BusLogger;
  /** Messages this process has dead-lettered. */
  readonly deadLetteredCount: number;
  /** True once the connection is closed for good (for readiness). */
  isClosed(): boolean;

  /**
   * Validates `msg` and stores it on the stream that captures `subject`, with the trace context.
   * Throws BusError SchemaInvalid (nothing sent) when `msg` does not match `schema`.
   */
  publish<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>, opts?: PublishOptions): Promise<PublishAck>;
  /**
   * Consumes a durable consumer (created if missing) until `opts.signal` aborts. Each message is
   * validated, then handed to `handler` inside a CONSUMER span parented on the producer's context.
   */
  consume<S extends z.ZodType>(schema: S, opts: ConsumeOptions, handler: (d: Delivery<z.output<S>>) => Promise<void>): Promise<Consumption>;
  /**
   * Sends a validated request and returns the validated reply. Throws BusError: NoResponders,
   * Timeout, Remote (the responder's WireError: `remoteCode`, `retryable`), SchemaInvalid.
   */
  request<Q extends z.ZodType, R extends z.ZodType>(reqSchema: Q, repSchema: R, subject: string, req: z.input<Q>, opts: RequestOptions): Promise<z.output<R>>;
  /**
   * Serves request/reply on `subject`. An invalid request gets a SchemaInvalid error reply and a
   * dead-letter entry; a handler error is returned as a WireError (code and retryable kept).
   */
  serve<Q extends z.ZodType, R extends z.ZodType>(
    subject: string,
    reqSchema: Q,
    repSchema: R,
    handler: (req: z.output<Q>, sc: ServeContext) => Promise<z.input<R>>,
    opts: ServeOptions,
  ): void;
  /** Publishes on core NATS (no persistence): for pokes whose loss is harmless. */
  publishCore(subject: string, payload?: unknown): void;
  /**
   * Subscribes on core NATS until `signal` aborts; `handler` gets the decoded JSON (undefined for an
   * empty body). A subscription error or a body that is not JSON is logged, never dropped silently.
   */
  subscribeCore(subject: string, handler: (data: unknown, msg: CoreMessageMeta) => void, signal: AbortSignal): void;
  /**
   * Validates `msg` and publishes it on core NATS (no stream: at most once, in order per
   * connection) with the trace context in its headers. Throws BusError SchemaInvalid (nothing sent)
   * when `msg` does not match `schema`.
   */
  publishCoreMessage<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>): void;
  /**
   * Subscribes on core NATS until `signal` aborts; each message is validated and handed to
   * `handler`, in arrival order. A message that is not JSON or does not match `schema` is
   * dead-lettered with the reason (and never reaches `handler`).
   */
  subscribeCoreMessages<S extends z.ZodType>(schema: S, subject: string, handler: (value: z.output<S>, msg: CoreMessageMeta) => void, signal: AbortSignal): void;
  /**
   * Reads a stream's stored messages on `filterSubject`, oldest first: everything stored now, then
   * (with `follow`) new ones until `signal` aborts. Invalid messages are skipped and reported.
   */
  readStream<S extends z.ZodType>(
    schema: S,
    stream: string,
    filterSubject: string,
    onMessage: (value: z.output<S>, meta: StoredMessageMeta) => void,
    opts?: ReadStreamOptions,
  ): Promise<void>;
  /** Opens (or returns the already open) typed view of a KV bucket of the topology. */
  kv<S extends z.ZodType>(bucket: string, schema: S): Promise<KvBucket<z.output<S>>>;
  /** Keeps finished spans on the node's `SL_SPANS`, one batch per trace (see span-sink.ts). */
  publishSpans(records: readonly SpanRecord[]): Promise<void>;
  /** The span records on `SL_SPANS` under `filterSubject`, in stream order. */
  readSpans(filterSubject: string, onSpan: (record: SpanRecord) => void, opts?: { onInvalid?: (reason: string) => void }): Promise<void>;
  /** Copies an unprocessable message, with the reason, to the node's dead-letter subject, and logs it. */
  deadLetter(d: DeadLetterInput): Promise<void>;
  /** Resolves once the server has processed everything sent so far (e.g. a new `serve` subscription). */
  flush(): Promise<void>;
  /** Stops subscriptions, waits for in-flight handlers and publishes, then closes. */
  close(): Promise<void>;
}
