/**
 * NatsBus: the {@link Bus} contract over NATS JetStream. Create it with `connectBus`.
 *
 * The parts live beside it, each shared with the in-memory bus where the logic is not NATS-specific:
 * `bus-base.ts` (request/reply and core pub/sub via `core-client.ts`, span sink, dead letters),
 * `consume-loop.ts` (settle policy), `typed-kv.ts` (KV validation, listing, watch), `producer.ts`;
 * the NATS-only parts are `nats-consumer.ts`, `nats-stream-reader.ts`, `nats-kv.ts`,
 * `muxed-requests.ts` (the connection's `request()`) and `connect-bus.ts`.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { NoRespondersError, PermissionViolationError, RequestError, TimeoutError } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { z } from 'zod';
import { errorMessage } from '@splitlet/api';
import type { Bus, ConsumeOptions, Consumption, Delivery, PublishAck, PublishOptions, ReadStreamOptions, StoredMessageMeta } from './bus.js';
import { BusBase } from './bus-base.js';
import type { BusOptions } from './connect-bus.js';
import type { KvBucket, RawKv } from './kv-bucket.js';
import { encodeMessage } from './codec.js';
import { BusError } from './errors.js';
import { isWrongLastSequence } from './js-api-codes.js';
import { consumeNats, ensureNatsConsumer } from './nats-consumer.js';
import { compactDeleteMarkers, natsRawKv, openNatsKv } from './nats-kv.js';
import { readNatsStream } from './nats-stream-reader.js';
import { useMuxedRequests } from './muxed-requests.js';
import { publishInSpan } from './producer.js';
import { BUCKETS } from './topology.js';
import { TypedKv } from './typed-kv.js';

/** The NATS implementation of the bus. Tests may use `nc`, `js` and `jsm`; services use `Bus`. */
export class NatsBus extends BusBase implements Bus {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Opened buckets, and per bucket one view per schema (two schemas of one bucket each validate by their own). */
  readonly #rawKvs = new Map<string, Promise<RawKv>>();
  readonly #kvs = new Map<string, Map<z.ZodType, Promise<TypedKv<unknown>>>>();
  /** JetStream publishes awaiting their ack (close() lets them finish before it drains). */
  readonly #publishing = new Set<Promise<unknown>>();
  /** False between a `disconnect` and the next `reconnect` status of the connection. */
  #connected = true;

  constructor(nc: NatsConnection, jsm: JetStreamManager, opts: BusOptions) {
    super({
      process: opts.process,
      node: opts.node,
      logger: opts.logger,
      metrics: opts.metrics,
      transport: nc,
      progressBeatMs: opts.progressBeatMs,
      requestError: natsRequestError,
    });
    // Before any JetStream or KV call: they all request through `nc.request` (see muxed-requests.ts).
    useMuxedRequests(nc);
    this.nc = nc;
    this.jsm = jsm;
    this.js = jetstream(nc);
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') this.#connected = false;
        else if (s.type === 'reconnect') this.#connected = true;
        else if (s.type === 'error' && s.error instanceof PermissionViolationError) {
          // Never swallowed: a process acting outside its NATS user's permissions is a bug or a
          // misconfigured identity, and the operation it tried does not happen.
          const { operation, subject } = s.error;
          this.logger.error('NATS permissions violation: the server refused this process', { operation, subject, user: opts.user ?? '(none)' });
          this.permissionDenied(operation === 'subscription' ? 'subscription' : 'publish', subject);
        }
      }
    })().catch(() => undefined);
  }

  /** The server's version, e.g. `2.9.10`, for capability checks. */
  get serverVersion(): string {
    return this.nc.info?.version ?? '0.0.0';
  }

  isClosed(): boolean {
    return this.nc.isClosed();
  }

  async publish<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>, opts: PublishOptions = {}): Promise<PublishAck> {
    const data = encodeMessage(schema, subject, msg);
    return publishInSpan(subject, data, opts, async (headers) => {
      const pubOpts: Parameters<JetStreamClient['publish']>[2] = { headers };
      if (opts.msgID !== undefined) pubOpts.msgID = opts.msgID;
      if (opts.expectLastSubjectSequence !== undefined) pubOpts.expect = { lastSubjectSequence: opts.expectLastSubjectSequence };
      try {
        return await this.#track(this.js.publish(subject, data, pubOpts));
      } catch (e) {
        if (opts.expectLastSubjectSequence !== undefined && isWrongLastSequence(e)) {
          throw new BusError('Conflict', `${subject} is no longer at sequence ${opts.expectLastSubjectSequence}`, { cause: e });
        }
        throw permissionError(e) ?? e;
      }
    });
  }

  #track<T>(sent: Promise<T>): Promise<T> {
    this.#publishing.add(sent);
    const forget = (): void => void this.#publishing.delete(sent);
    void sent.then(forget, forget);
    return sent;
  }

  protected storeDeadLetter(subject: string, body: string): Promise<unknown> {
    return this.js.publish(subject, body);
  }

  /** Creates the durable pull consumer if missing (config of an existing one is left as is). */
  async ensureConsumer(opts: ConsumeOptions): Promise<void> {
    await ensureNatsConsumer(this.jsm, opts);
  }

  consume<S extends z.ZodType>(schema: S, opts: ConsumeOptions, handler: (d: Delivery<z.output<S>>) => Promise<void>): Promise<Consumption> {
    return consumeNats(this.js, this.jsm, this.consumeDeps, schema as unknown as z.ZodType<z.output<S>>, opts, handler, () => this.nc.flush());
  }

  readStream<S extends z.ZodType>(
    schema: S,
    stream: string,
    filterSubject: string,
    onMessage: (value: z.output<S>, meta: StoredMessageMeta) => void,
    opts: ReadStreamOptions = {},
  ): Promise<void> {
    return readNatsStream(this.js, this.jsm, this.logger, schema as unknown as z.ZodType<z.output<S>>, stream, filterSubject, onMessage, opts);
  }

  kv<S extends z.ZodType>(bucket: string, schema: S): Promise<KvBucket<z.output<S>>> {
    return this.typedKv(bucket, schema);
  }

  /** Like {@link kv}, typed as the implementation (tests reach the raw bucket through it). */
  typedKv<S extends z.ZodType>(bucket: string, schema: S): Promise<TypedKv<z.output<S>>> {
    let views = this.#kvs.get(bucket);
    if (views === undefined) this.#kvs.set(bucket, (views = new Map<z.ZodType, Promise<TypedKv<unknown>>>()));
    let p = views.get(schema) as Promise<TypedKv<z.output<S>>> | undefined;
    if (!p) {
      if (!BUCKETS.some((b) => b.name === bucket)) return Promise.reject(new BusError('NotFound', `bucket ${bucket} is not in the topology (libs/bus topology.ts)`));
      p = this.#rawKv(bucket).then((raw) => new TypedKv<z.output<S>>(raw, bucket, schema as unknown as z.ZodType<z.output<S>>, this));
      views.set(schema, p);
      const opening = p;
      const open = views;
      opening.catch(() => open.get(schema) === opening && open.delete(schema));
    }
    return p;
  }

  #rawKv(bucket: string): Promise<RawKv> {
    let p = this.#rawKvs.get(bucket);
    if (!p) {
      p = openNatsKv(this.nc, this.jsm, bucket).then((kv) => natsRawKv(kv, bucket, this.jsm));
      this.#rawKvs.set(bucket, p);
      // The open asks the server (STREAM.INFO): a failed one is not kept, the next call tries again.
      const opening = p;
      opening.catch(() => this.#rawKvs.get(bucket) === opening && this.#rawKvs.delete(bucket));
    }
    return p;
  }

  flush(): Promise<void> {
    return this.nc.flush();
  }

  /** Removes the bucket's delete markers older than `olderThanMs` (see compactDeleteMarkers); returns how many. */
  async compactDeleteMarkers(bucket: string, olderThanMs: number): Promise<number> {
    if (!BUCKETS.some((b) => b.name === bucket)) throw new BusError('NotFound', `bucket ${bucket} is not in the topology (libs/bus topology.ts)`);
    const kv = await new Kvm(this.nc).open(bucket);
    return compactDeleteMarkers(kv, this.jsm, bucket, olderThanMs);
  }

  /**
   * Waits for in-flight request handlers, then for the JetStream publishes still awaiting their
   * ack — among them the span records of spans that ended as the handlers finished, which a
   * process's span-record processor publishes without waiting — then drains and closes the
   * connection. Without that wait, the drain closes the connection under publishes in flight
   * ("connection closed"), and the spans a process records last are lost to `SL_SPANS`.
   */
  async close(): Promise<void> {
    if (!this.#connected && !this.nc.isClosed()) {
      // NATS is unreachable: nothing in flight can be acknowledged or drained, and waiting for it
      // would hold a shutdown until its deadline. Close at once.
      this.logger.warn('closing the bus while NATS is unreachable; unacknowledged publishes are dropped', { inFlight: this.#publishing.size });
      await this.nc.close();
      await this.closeCore().catch((e: unknown) => this.logger.debug('closing subscriptions after the connection failed', { error: errorMessage(e) }));
      return;
    }
    await this.closeCore();
    while (this.#publishing.size > 0) await Promise.allSettled([...this.#publishing]);
    if (!this.nc.isClosed()) {
      try {
        await this.nc.drain();
      } catch (e) {
        this.logger.debug('drain failed; closing', { error: errorMessage(e) });
        await this.nc.close();
      }
    }
  }
}

/** A NATS permissions violation (possibly wrapped in a RequestError) as a `PermissionDenied` BusError; undefined for anything else. */
export function permissionError(e: unknown): BusError | undefined {
  const cause = e instanceof Error && e.cause instanceof PermissionViolationError ? e.cause : e;
  if (!(cause instanceof PermissionViolationError)) return undefined;
  return new BusError('PermissionDenied', `NATS refused the ${cause.operation} on ${cause.subject}: this process's NATS user is not permitted to use it`, {
    retryable: false,
    cause: e,
  });
}

/** A NATS request failure as a BusError. */
function natsRequestError(subject: string, timeoutMs: number, e: unknown): BusError {
  const denied = permissionError(e);
  if (denied !== undefined) return denied;
  const cause = e instanceof RequestError ? (e.cause ?? e) : e;
  if (cause instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders())) {
    return new BusError('NoResponders', `no responder for ${subject}: is the process that serves it running?`, { retryable: true, cause: e });
  }
  if (cause instanceof TimeoutError || e instanceof TimeoutError) {
    return new BusError('Timeout', `no reply on ${subject} within ${timeoutMs} ms`, { retryable: true, cause: e });
  }
  return new BusError('Closed', `request on ${subject} failed: ${errorMessage(e)}`, { retryable: true, cause: e });
}
