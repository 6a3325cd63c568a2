/**
 * A JetStream stream in memory, with its durable consumers: per-stream sequences, subject capture,
 * `maxMsgsPerSubject`, msgID deduplication, expected last subject sequence, workqueue retention
 * (an acked or terminated message is removed), and the consumer's redelivery semantics — ack wait,
 * `nak(delay)`, `term`, `working`, `max_ack_pending` and `max_deliver` (after which the server stops
 * redelivering). Ages and byte limits are not enforced.
 */
import type { MsgHdrs } from '@nats-io/transport-node';
import type { PublishAck } from '../bus.js';
import type { RawDelivery } from '../consume-loop.js';
import { BusError } from '../errors.js';
import type { StreamSpec } from '../topology.js';
import { subjectMatches } from './subject-match.js';

/** A stored message. */
export interface StoredMessage {
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  readonly time: Date;
}

/** A durable consumer's settings. */
export interface MemConsumerConfig {
  readonly filterSubject: string;
  readonly ackWaitMs: number;
  readonly maxDeliver: number;
  readonly maxAckPending: number;
  readonly deliverNew: boolean;
}

const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

/** One stream. */
export class MemStream {
  readonly spec: StreamSpec;
  readonly messages = new Map<number, StoredMessage>();
  lastSeq = 0;
  readonly #dedupe = new Map<string, { seq: number; at: number }>();
  readonly #consumers = new Map<string, MemConsumer>();
  readonly #followers = new Set<(m: StoredMessage) => void>();

  constructor(spec: StreamSpec) {
    this.spec = spec;
  }

  captures(subject: string): boolean {
    return this.spec.subjects.some((p) => subjectMatches(p, subject));
  }

  store(subject: string, data: Uint8Array, headers: MsgHdrs | undefined, opts: { msgID?: string | undefined; expectLastSubjectSequence?: number | undefined } = {}): PublishAck {
    const now = Date.now();
    if (opts.msgID !== undefined) {
      const seen = this.#dedupe.get(opts.msgID);
      if (seen !== undefined && now - seen.at < (this.spec.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS)) return { stream: this.spec.name, seq: seen.seq, duplicate: true };
    }
    if (opts.expectLastSubjectSequence !== undefined) {
      const last = this.lastSeqOf(subject);
      if (last !== opts.expectLastSubjectSequence) {
        throw new BusError('Conflict', `${subject} is no longer at sequence ${opts.expectLastSubjectSequence} (wrong last sequence: ${last})`);
      }
    }
    const m: StoredMessage = { seq: ++this.lastSeq, subject, data, headers, time: new Date(now) };
    this.messages.set(m.seq, m);
    if (opts.msgID !== undefined) this.#dedupe.set(opts.msgID, { seq: m.seq, at: now });
    if (this.spec.maxMsgsPerSubject !== undefined) {
      const same = [...this.messages.values()].filter((x) => x.subject === subject);
      for (const old of same.slice(0, Math.max(0, same.length - this.spec.maxMsgsPerSubject))) this.messages.delete(old.seq);
    }
    for (const c of this.#consumers.values()) c.wake();
    for (const f of this.#followers) f(m);
    return { stream: this.spec.name, seq: m.seq, duplicate: false };
  }

  lastSeqOf(subject: string): number {
    let last = 0;
    for (const m of this.messages.values()) if (m.subject === subject) last = m.seq;
    return last;
  }

  /**
   * The consumer `durable`, created with `cfg` if missing (an existing one keeps its config). With
   * `takeOver`, an existing one is replaced by one with `cfg` that starts after its ack floor (see
   * `ConsumeOptions.takeOver`); the old one delivers nothing more and ignores settles.
   */
  consumer(durable: string, cfg: MemConsumerConfig, takeOver = false): MemConsumer {
    let c = this.#consumers.get(durable);
    if (c !== undefined && takeOver) {
      const floor = c.retire();
      c = new MemConsumer(this, durable, cfg, floor);
      this.#consumers.set(durable, c);
    }
    if (c === undefined) {
      c = new MemConsumer(this, durable, cfg);
      this.#consumers.set(durable, c);
    }
    return c;
  }

  /** Calls `f` for every message stored from now on, until the returned function is called. */
  follow(f: (m: StoredMessage) => void): () => void {
    this.#followers.add(f);
    return () => this.#followers.delete(f);
  }
}

/** A durable pull consumer. */
export class MemConsumer {
  readonly durable: string;
  readonly #stream: MemStream;
  readonly #cfg: MemConsumerConfig;
  /** The highest stream sequence handed out for the first time. */
  #cursor: number;
  readonly #deliveries = new Map<number, number>();
  /** Delivered and not settled: the ack-wait timer and the delivery's token. */
  readonly #pending = new Map<number, { timer: NodeJS.Timeout; token: object }>();
  readonly #redeliver = new Set<number>();
  readonly #waiters = new Set<() => void>();
  #retired = false;

  /** `ackFloor`: start after this sequence (a consumer taken over). */
  constructor(stream: MemStream, durable: string, cfg: MemConsumerConfig, ackFloor?: number) {
    this.#stream = stream;
    this.durable = durable;
    this.#cfg = cfg;
    this.#cursor = ackFloor ?? (cfg.deliverNew ? stream.lastSeq : 0);
  }

  /** Replaced by a new holder: delivers nothing more, ignores settles; returns its ack floor. */
  retire(): number {
    this.#retired = true;
    const unsettled = [...this.#pending.keys(), ...this.#redeliver];
    for (const p of this.#pending.values()) clearTimeout(p.timer);
    this.#pending.clear();
    this.#redeliver.clear();
    this.wake();
    return unsettled.length === 0 ? this.#cursor : Math.min(...unsettled) - 1;
  }

  wake(): void {
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  /** Deliveries until `signal` aborts. */
  async *messages(signal: AbortSignal): AsyncIterable<RawDelivery> {
    while (!signal.aborted) {
      const d = this.#next();
      if (d !== undefined) {
        yield d;
        continue;
      }
      await new Promise<void>((resolve) => {
        this.#waiters.add(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
  }

  #next(): RawDelivery | undefined {
    if (this.#retired || this.#pending.size >= this.#cfg.maxAckPending) return undefined;
    for (const seq of [...this.#redeliver].sort((a, b) => a - b)) {
      this.#redeliver.delete(seq);
      if (this.#stream.messages.has(seq)) return this.#deliver(seq);
      this.#deliveries.delete(seq);
    }
    for (const m of this.#stream.messages.values()) {
      if (m.seq <= this.#cursor || !subjectMatches(this.#cfg.filterSubject, m.subject)) continue;
      this.#cursor = m.seq;
      return this.#deliver(m.seq);
    }
    return undefined;
  }

  #unsent(): number {
    let n = 0;
    for (const m of this.#stream.messages.values()) if (m.seq > this.#cursor && subjectMatches(this.#cfg.filterSubject, m.subject)) n++;
    return n;
  }

  #deliver(seq: number): RawDelivery {
    const m = this.#stream.messages.get(seq)!;
    const count = (this.#deliveries.get(seq) ?? 0) + 1;
    this.#deliveries.set(seq, count);
    const token = {};
    const armed = (): NodeJS.Timeout => setTimeout(() => this.#retry(seq, token, 0), this.#cfg.ackWaitMs).unref();
    this.#pending.set(seq, { timer: armed(), token });
    const current = (): boolean => this.#pending.get(seq)?.token === token;
    return {
      subject: m.subject,
      data: m.data,
      headers: m.headers,
      seq,
      deliveryCount: count,
      pending: this.#unsent(),
      ack: () => current() && this.#done(seq),
      term: () => current() && this.#done(seq),
      nak: (delayMs?: number) => current() && this.#retry(seq, token, delayMs ?? 0),
      working: () => {
        const p = this.#pending.get(seq);
        if (p?.token !== token) return;
        clearTimeout(p.timer);
        p.timer = armed();
      },
    };
  }

  /** Acked or terminated: never again; a workqueue stream forgets the message. */
  #done(seq: number): void {
    clearTimeout(this.#pending.get(seq)?.timer);
    this.#pending.delete(seq);
    this.#deliveries.delete(seq);
    if (this.#stream.spec.retention === 'workqueue') this.#stream.messages.delete(seq);
    this.wake();
  }

  /**
   * Nak'ed or its ack wait ran out: redelivered after `delayMs` (counting against max_ack_pending
   * meanwhile, as on the server), unless max_deliver is reached.
   */
  #retry(seq: number, token: object, delayMs: number): void {
    const p = this.#pending.get(seq);
    if (p?.token !== token) return;
    clearTimeout(p.timer);
    this.#pending.delete(seq);
    if (this.#cfg.maxDeliver >= 0 && (this.#deliveries.get(seq) ?? 0) >= this.#cfg.maxDeliver) {
      this.wake();
      return;
    }
    const ready = (): void => {
      this.#pending.delete(seq);
      this.#redeliver.add(seq);
      this.wake();
    };
    if (delayMs > 0) this.#pending.set(seq, { timer: setTimeout(ready, delayMs).unref(), token: {} });
    else ready();
  }
}
