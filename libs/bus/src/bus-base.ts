/**
 * What every {@link Bus} implementation shares beyond the parts it composes: request/reply and core
 * pub/sub through one {@link CoreClient}, the span sink, and dead letters (counted, logged, stored).
 * `NatsBus` and `InMemoryBus` extend it and supply the JetStream side (publish, consume, stream
 * reads, KV, flush, close).
 */
import type { z } from 'zod';
import type { SpanRecord } from '@splitlet/api';
import type {
  Bus,
  BusLogger,
  CoreMessageMeta,
  DeadLetterInput,
  PublishAck,
  PublishOptions,
  ReadStreamOptions,
  RequestOptions,
  ServeContext,
  ServeOptions,
  StoredMessageMeta,
} from './bus.js';
import type { ConsumeDeps } from './consume-loop.js';
import { CoreClient, type CoreClientDeps, type CoreTransport } from './core-client.js';
import { sendDeadLetter } from './dead-letter.js';
import type { BusMetrics } from './metrics.js';
import { publishSpanRecords, readSpanRecords } from './span-sink.js';

/** What {@link BusBase} is built from. */
export interface BusBaseOptions {
  readonly process: string;
  readonly node: string;
  readonly logger: BusLogger;
  readonly metrics: BusMetrics | undefined;
  readonly transport: CoreTransport;
  readonly progressBeatMs?: number | undefined;
  readonly requestError?: CoreClientDeps['requestError'];
}

/** The shared half of a bus. */
export abstract class BusBase implements Omit<Bus, 'isClosed' | 'consume' | 'kv' | 'flush' | 'close'> {
  readonly process: string;
  readonly node: string;
  readonly logger: BusLogger;
  protected readonly metrics: BusMetrics | undefined;
  readonly #core: CoreClient;
  #deadLettered = 0;

  constructor(o: BusBaseOptions) {
    this.process = o.process;
    this.node = o.node;
    this.logger = o.logger;
    this.metrics = o.metrics;
    this.#core = new CoreClient({
      transport: o.transport,
      logger: o.logger,
      metrics: o.metrics,
      progressBeatMs: o.progressBeatMs,
      deadLetter: (d) => this.deadLetter(d),
      ...(o.requestError !== undefined ? { requestError: o.requestError } : {}),
    });
  }

  abstract publish<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>, opts?: PublishOptions): Promise<PublishAck>;
  abstract readStream<S extends z.ZodType>(
    schema: S,
    stream: string,
    filterSubject: string,
    onMessage: (value: z.output<S>, meta: StoredMessageMeta) => void,
    opts?: ReadStreamOptions,
  ): Promise<void>;
  /** Stores an encoded dead-letter record on `subject` (JetStream). */
  protected abstract storeDeadLetter(subject: string, body: string): Promise<unknown>;

  get deadLetteredCount(): number {
    return this.#deadLettered;
  }

  /** What the shared consume loop needs. */
  protected get consumeDeps(): ConsumeDeps {
    return { logger: this.logger, metrics: this.metrics, deadLetter: (d) => this.deadLetter(d) };
  }

  request<Q extends z.ZodType, R extends z.ZodType>(reqSchema: Q, repSchema: R, subject: string, req: z.input<Q>, opts: RequestOptions): Promise<z.output<R>> {
    return this.#core.request(reqSchema, repSchema, subject, req, opts);
  }

  serve<Q extends z.ZodType, R extends z.ZodType>(
    subject: string,
    reqSchema: Q,
    repSchema: R,
    handler: (req: z.output<Q>, sc: ServeContext) => Promise<z.input<R>>,
    opts: ServeOptions,
  ): void {
    this.#core.serve(subject, reqSchema, repSchema, handler, opts);
  }

  publishCore(subject: string, payload: unknown = {}): void {
    this.#core.publishCore(subject, payload);
  }

  subscribeCore(subject: string, handler: (data: unknown, msg: CoreMessageMeta) => void, signal: AbortSignal): void {
    this.#core.subscribeCore(subject, handler, signal);
  }

  publishCoreMessage<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>): void {
    this.#core.publishCoreMessage(schema, subject, msg);
  }

  subscribeCoreMessages<S extends z.ZodType>(schema: S, subject: string, handler: (value: z.output<S>, msg: CoreMessageMeta) => void, signal: AbortSignal): void {
    this.#core.subscribeCoreMessages(schema, subject, handler, signal);
  }

  publishSpans(records: readonly SpanRecord[]): Promise<void> {
    return publishSpanRecords(this, records);
  }

  readSpans(filterSubject: string, onSpan: (record: SpanRecord) => void, opts: { onInvalid?: (reason: string) => void } = {}): Promise<void> {
    return readSpanRecords(this, filterSubject, onSpan, opts);
  }

  async deadLetter(d: DeadLetterInput): Promise<void> {
    this.#deadLettered++;
    await sendDeadLetter({ process: this.process, node: this.node, logger: this.logger, metrics: this.metrics, store: (subject, body) => this.storeDeadLetter(subject, body) }, d);
  }

  /** A permissions violation reported by the server: fails the requests it concerns at once (see CoreClient). */
  protected permissionDenied(operation: 'publish' | 'subscription', subject: string): void {
    this.#core.permissionDenied(operation, subject);
  }

  /** Unsubscribes core subscriptions and waits for the request handlers still running. */
  protected closeCore(): Promise<void> {
    return this.#core.close();
  }
}
