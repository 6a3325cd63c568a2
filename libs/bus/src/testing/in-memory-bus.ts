/**
 * InMemoryBus: the {@link Bus} contract in memory, for unit tests. The settle policy, request/reply
 * protocol, typed KV, dead letters and span sink are the very code `NatsBus` runs; only the server
 * (streams, consumers, KV buckets, core subjects) is emulated, by {@link InMemoryNats}. The shared
 * contract suite (`test/bus-contract.test.ts`) runs against both, so the two cannot drift.
 *
 * Several buses (processes) can share one server: `new InMemoryBus({ server })`.
 */
import type { MsgHdrs } from '@nats-io/transport-node';
import type { z } from 'zod';
import type { Bus, BusLogger, ConsumeOptions, Consumption, Delivery, PublishAck, PublishOptions, ReadStreamOptions, StoredMessageMeta } from '../bus.js';
import { BusBase } from '../bus-base.js';
import type { BusMetrics } from '../metrics.js';
import type { KvBucket } from '../kv-bucket.js';
import { decodeMessage, encodeMessage } from '../codec.js';
import { DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_ACK_PENDING, DEFAULT_MAX_DELIVER, runConsumeLoop } from '../consume-loop.js';
import { BusError } from '../errors.js';
import { publishInSpan } from '../producer.js';
import { BUCKETS, STREAMS, type BucketSpec, type StreamSpec } from '../topology.js';
import { TypedKv } from '../typed-kv.js';
import { AsyncQueue } from './async-queue.js';
import { InMemoryCore } from './in-memory-core.js';
import { InMemoryKv } from './in-memory-kv.js';
import { MemStream, type StoredMessage } from './in-memory-stream.js';
import { subjectMatches } from './subject-match.js';

/** The emulated server: the topology's streams and buckets, and core subjects. */
export class InMemoryNats {
  readonly streams = new Map<string, MemStream>();
  readonly buckets = new Map<string, InMemoryKv>();
  readonly core: InMemoryCore;

  constructor(topology: { streams?: readonly StreamSpec[]; buckets?: readonly BucketSpec[] } = {}) {
    for (const s of topology.streams ?? STREAMS) this.streams.set(s.name, new MemStream(s));
    for (const b of topology.buckets ?? BUCKETS) this.buckets.set(b.name, new InMemoryKv(b));
    this.core = new InMemoryCore((subject, data, headers) => void this.#streamFor(subject)?.store(subject, data, headers));
  }

  #streamFor(subject: string): MemStream | undefined {
    for (const s of this.streams.values()) if (s.captures(subject)) return s;
    return undefined;
  }

  /** A JetStream publish: stored on the capturing stream, and seen by core subscribers. */
  store(subject: string, data: Uint8Array, headers: MsgHdrs | undefined, opts: PublishOptions = {}): PublishAck {
    const stream = this.#streamFor(subject);
    if (stream === undefined) throw new BusError('NotFound', `no stream captures ${subject}`);
    const ack = stream.store(subject, data, headers, { msgID: opts.msgID, expectLastSubjectSequence: opts.expectLastSubjectSequence });
    if (!ack.duplicate) this.core.deliver(subject, data, headers);
    return ack;
  }

  stream(name: string): MemStream {
    const s = this.streams.get(name);
    if (s === undefined) throw new BusError('NotFound', `stream ${name} is not in the topology`);
    return s;
  }
}

/** Options of {@link InMemoryBus}. */
export interface InMemoryBusOptions {
  /** @default 'test' */
  process?: string;
  /** @default 'node-a' */
  node?: string;
  /** @default a logger that keeps nothing */
  logger?: BusLogger;
  /** Share a server between buses. @default a new one */
  server?: InMemoryNats;
  metrics?: BusMetrics;
  progressBeatMs?: number;
}

/** A message this bus published (JetStream or core), in order. */
export interface PublishedMessage {
  readonly subject: string;
  /** The decoded JSON body. */
  readonly data: unknown;
  readonly core: boolean;
}

const silent: BusLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const dec = new TextDecoder();

function refuseWhenClosed(signal: AbortSignal): void {
  if (signal.aborted) throw new BusError('Closed', 'the bus is closed');
}

function publishedMessage(subject: string, body: string, core: boolean): PublishedMessage {
  let data: unknown;
  try {
    data = body === '' ? undefined : JSON.parse(body);
  } catch {
    // Not JSON (a raw core publish): kept as text.
    data = body;
  }
  return { subject, data, core };
}

/** The in-memory bus. */
export class InMemoryBus extends BusBase implements Bus {
  readonly server: InMemoryNats;
  /** Everything this bus published, for assertions. */
  readonly published: PublishedMessage[];
  /** Per bucket, one view per schema (as the NATS bus). */
  readonly #kvs = new Map<string, Map<z.ZodType, TypedKv<unknown>>>();
  readonly #closing: AbortController;

  constructor(opts: InMemoryBusOptions = {}) {
    const server = opts.server ?? new InMemoryNats();
    const published: PublishedMessage[] = [];
    const closing = new AbortController();
    super({
      process: opts.process ?? 'test',
      node: opts.node ?? 'node-a',
      logger: opts.logger ?? silent,
      metrics: opts.metrics,
      progressBeatMs: opts.progressBeatMs,
      transport: {
        publish: (subject, data, o) => {
          refuseWhenClosed(closing.signal);
          if (o?.reply === undefined) published.push(publishedMessage(subject, typeof data === 'string' ? data : dec.decode(data), true));
          server.core.publish(subject, data, o);
        },
        subscribe: (subject, o) => {
          refuseWhenClosed(closing.signal);
          return server.core.subscribe(subject, o);
        },
      },
    });
    this.server = server;
    this.published = published;
    this.#closing = closing;
  }

  #open(): void {
    refuseWhenClosed(this.#closing.signal);
  }

  isClosed(): boolean {
    return this.#closing.signal.aborted;
  }

  async publish<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>, opts: PublishOptions = {}): Promise<PublishAck> {
    this.#open();
    const data = encodeMessage(schema, subject, msg);
    return publishInSpan(subject, data, opts, async (headers) => {
      const ack = this.server.store(subject, data, headers, opts);
      if (!ack.duplicate) this.published.push(publishedMessage(subject, dec.decode(data), false));
      return ack;
    });
  }

  async consume<S extends z.ZodType>(schema: S, opts: ConsumeOptions, handler: (d: Delivery<z.output<S>>) => Promise<void>): Promise<Consumption> {
    this.#open();
    const consumer = this.server.stream(opts.stream).consumer(
      opts.durable,
      {
        filterSubject: opts.filterSubject,
        ackWaitMs: opts.ackWaitMs ?? DEFAULT_ACK_WAIT_MS,
        maxDeliver: opts.maxDeliver ?? DEFAULT_MAX_DELIVER,
        maxAckPending: opts.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
        deliverNew: opts.deliverNew ?? false,
      },
      opts.takeOver ?? false,
    );
    let last = Date.now();
    const signal = AbortSignal.any([opts.signal, this.#closing.signal]);
    const done = runConsumeLoop(this.consumeDeps, schema as unknown as z.ZodType<z.output<S>>, { ...opts, signal }, consumer.messages(signal), handler, () => {
      last = Date.now();
    });
    return { done, lastActivity: () => last };
  }

  async readStream<S extends z.ZodType>(
    schema: S,
    stream: string,
    filterSubject: string,
    onMessage: (value: z.output<S>, meta: StoredMessageMeta) => void,
    opts: ReadStreamOptions = {},
  ): Promise<void> {
    this.#open();
    const s = this.server.stream(stream);
    let lastSeq = 0;
    const take = (m: { seq: number; subject: string; data: Uint8Array; time: Date }): void => {
      if (m.seq <= lastSeq || !subjectMatches(filterSubject, m.subject)) return;
      lastSeq = m.seq;
      const parsed = decodeMessage(schema as unknown as z.ZodType<z.output<S>>, m.subject, m.data);
      if (parsed.ok) onMessage(parsed.value, { subject: m.subject, seq: m.seq, time: m.time });
      else opts.onInvalid?.(parsed.reason);
    };
    const backlog = [...s.messages.values()];
    if (!opts.follow) {
      backlog.forEach(take);
      return;
    }
    const queue = new AsyncQueue<StoredMessage>();
    const unfollow = s.follow((m) => queue.push(m));
    const signal = AbortSignal.any([opts.signal ?? new AbortController().signal, this.#closing.signal]);
    signal.addEventListener('abort', () => queue.stop(), { once: true });
    if (signal.aborted) queue.stop();
    try {
      backlog.forEach(take);
      for await (const m of queue) take(m);
    } finally {
      unfollow();
    }
  }

  async kv<S extends z.ZodType>(bucket: string, schema: S): Promise<KvBucket<z.output<S>>> {
    return this.typedKv(bucket, schema);
  }

  /** Like {@link kv}, typed as the implementation (tests reach the raw bucket through it). */
  async typedKv<S extends z.ZodType>(bucket: string, schema: S): Promise<TypedKv<z.output<S>>> {
    this.#open();
    const raw = this.server.buckets.get(bucket);
    if (raw === undefined) throw new BusError('NotFound', `bucket ${bucket} is not in the topology`);
    let views = this.#kvs.get(bucket);
    if (views === undefined) this.#kvs.set(bucket, (views = new Map<z.ZodType, TypedKv<unknown>>()));
    let kv = views.get(schema) as TypedKv<z.output<S>> | undefined;
    if (kv === undefined) {
      kv = new TypedKv<z.output<S>>(raw, bucket, schema as unknown as z.ZodType<z.output<S>>, this);
      views.set(schema, kv);
    }
    return kv;
  }

  /** Every delivery already scheduled has run (deliveries take one turn of the event loop). */
  flush(): Promise<void> {
    return new Promise((r) => setImmediate(r));
  }

  protected async storeDeadLetter(subject: string, body: string): Promise<unknown> {
    return this.server.store(subject, new TextEncoder().encode(body), undefined);
  }

  /** Ends consumers and subscriptions, then waits for the request handlers still running. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.closeCore();
  }
}
