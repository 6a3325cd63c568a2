/**
 * Core NATS use shared by every bus implementation: request/reply with progress beats, serving
 * requests in a queue group, and fire-and-forget pokes. Implementations supply a
 * {@link CoreTransport} (a NATS connection satisfies it; the in-memory bus has its own).
 *
 * The request/reply protocol (why not `@nats-io/services`: see docs/architecture.md):
 * - the requester publishes on the subject with its own inbox as reply-to, trace context in headers;
 * - the responder answers with one JSON envelope `{ok: true, data}` or `{ok: false, error: WireError}`,
 *   and sends `{progress: true}` every {@link PROGRESS_BEAT_MS} while it works, so the requester tells
 *   a slow answer (an image pull) from a dead responder (`idleTimeoutMs`);
 * - a request nobody serves gets the server's no-responders status at once.
 */
import { context, SpanKind, trace } from '@opentelemetry/api';
import { createInbox } from '@nats-io/transport-node';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { z } from 'zod';
import { WireError, errorMessage } from '@splitlet/api';
import type { BusLogger, CoreMessageMeta, DeadLetterInput, RequestOptions, ServeContext, ServeOptions } from './bus.js';
import type { BusMetrics } from './metrics.js';
import { bodyText, decodeMessage, encodeMessage, formatIssues } from './codec.js';
import { BusError, isBusError } from './errors.js';
import { busTracer, contextFromHeaders, failSpan, headersWithContext, subjectTemplate } from './trace.js';

/** How often a responder still working on a request tells the requester so. */
export const PROGRESS_BEAT_MS = 5000;

/** The status code nats-server answers a request with when no subscriber has interest. */
export const NO_RESPONDERS_STATUS = 503;

/** A core message as the transport delivers it. */
export interface CoreMsg {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers?: MsgHdrs | undefined;
  readonly reply?: string | undefined;
  respond(data: string): boolean;
}

/** A core subscription. */
export interface CoreSubscription {
  unsubscribe(): void;
  drain(): Promise<void>;
}

/** Core publish/subscribe: what a NATS connection offers (and the in-memory bus imitates). */
export interface CoreTransport {
  publish(subject: string, data: string | Uint8Array, opts?: { reply?: string; headers?: MsgHdrs }): void;
  subscribe(subject: string, opts: { queue?: string; callback: (err: Error | null, msg: CoreMsg) => void }): CoreSubscription;
}

type ReplyEnvelope = { ok: true; data: unknown } | { ok: false; error: WireError } | { progress: true };

/** What {@link CoreClient} needs. */
export interface CoreClientDeps {
  readonly transport: CoreTransport;
  readonly logger: BusLogger;
  readonly metrics: BusMetrics | undefined;
  /** @default PROGRESS_BEAT_MS */
  readonly progressBeatMs?: number | undefined;
  deadLetter(d: DeadLetterInput): Promise<void>;
  /** Maps a transport failure of a request to a BusError (NATS errors → Closed, NoResponders, Timeout). */
  requestError?(subject: string, timeoutMs: number, e: unknown): BusError;
}

/** Request/reply and core pub/sub over a {@link CoreTransport}; one per bus. */
export class CoreClient {
  readonly #d: CoreClientDeps;
  readonly #subs = new Set<CoreSubscription>();
  readonly #inflight = new Set<Promise<unknown>>();
  /** Requests awaiting their reply, by subject: a permissions violation on the subject fails them at once. */
  readonly #pending = new Map<string, Set<(e: BusError) => void>>();

  constructor(deps: CoreClientDeps) {
    this.#d = deps;
  }

  /** @see Bus.publishCore */
  publishCore(subject: string, payload: unknown = {}): void {
    this.#d.transport.publish(subject, JSON.stringify(payload), { headers: headersWithContext() });
  }

  /** @see Bus.publishCoreMessage */
  publishCoreMessage<S extends z.ZodType>(schema: S, subject: string, msg: z.input<S>): void {
    this.#d.transport.publish(subject, encodeMessage(schema, subject, msg), { headers: headersWithContext() });
  }

  /** @see Bus.subscribeCoreMessages */
  subscribeCoreMessages<S extends z.ZodType>(schema: S, subject: string, handler: (value: z.output<S>, msg: CoreMessageMeta) => void, signal: AbortSignal): void {
    this.#subscribe(
      subject,
      (m) => {
        const parsed = decodeMessage(schema as unknown as z.ZodType<z.output<S>>, m.subject, m.data);
        if (parsed.ok) {
          handler(parsed.value, m);
          return;
        }
        this.#d
          .deadLetter({ subject: m.subject, reason: parsed.reason, data: m.data })
          .catch((e: unknown) => this.#d.logger.error('could not dead-letter an invalid core message', { subject: m.subject, error: errorMessage(e) }));
      },
      signal,
    );
  }

  /** @see Bus.subscribeCore */
  subscribeCore(subject: string, handler: (data: unknown, msg: CoreMessageMeta) => void, signal: AbortSignal): void {
    this.#subscribe(
      subject,
      (m) => {
        let data: unknown;
        if (m.data.length > 0) {
          try {
            data = JSON.parse(bodyText(m.data));
          } catch (e) {
            this.#d.logger.warn('core message is not JSON; handing it over as undefined', { subject: m.subject, error: errorMessage(e) });
          }
        }
        handler(data, m);
      },
      signal,
    );
  }

  /** A core subscription until `signal` aborts; a subscription error is logged. */
  #subscribe(subject: string, onMessage: (m: CoreMsg) => void, signal: AbortSignal): void {
    const sub = this.#d.transport.subscribe(subject, {
      callback: (err, m) => {
        if (err) this.#d.logger.error('core subscription error', { subject, error: errorMessage(err) });
        else onMessage(m);
      },
    });
    this.#track(sub, signal, () => sub.unsubscribe());
  }

  /**
   * The server refused a publish or a subscription of this connection (its NATS user may not use
   * the subject): fails the requests waiting on that subject (their own publish, or their inbox)
   * at once with `PermissionDenied` instead of letting them run into their timeout.
   */
  permissionDenied(operation: 'publish' | 'subscription', subject: string): void {
    const err = new BusError('PermissionDenied', `NATS refused the ${operation} on ${subject}: this process's NATS user is not permitted to use it`, { retryable: false });
    if (operation === 'publish') {
      for (const fail of this.#pending.get(subject) ?? []) fail(err);
      return;
    }
    // A refused inbox subscription: every request of this connection waits on an inbox.
    if (subject.startsWith('_INBOX.')) for (const fails of this.#pending.values()) for (const fail of fails) fail(err);
  }

  /** @see Bus.request */
  async request<Q extends z.ZodType, R extends z.ZodType>(reqSchema: Q, repSchema: R, subject: string, req: z.input<Q>, opts: RequestOptions): Promise<z.output<R>> {
    const data = encodeMessage(reqSchema, subject, req);
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
        if (isBusError(e)) throw e;
        throw this.#d.requestError?.(subject, opts.timeoutMs, e) ?? new BusError('Closed', `request on ${subject} failed: ${errorMessage(e)}`, { retryable: true, cause: e });
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
      this.#d.metrics?.requestFinished(subjectTemplate(subject), outcome, (performance.now() - started) / 1000);
    }
  }

  /**
   * Publishes a request with its own inbox and waits for the reply, skipping progress beats; fails
   * on no responders, on the overall deadline, or when the responder goes quiet for the idle timeout.
   */
  #exchange(subject: string, data: Uint8Array, opts: RequestOptions, hdrs: MsgHdrs): Promise<ReplyEnvelope> {
    const idleMs = opts.idleTimeoutMs ?? 3 * PROGRESS_BEAT_MS;
    const inbox = createInbox();
    const { transport } = this.#d;
    return new Promise<ReplyEnvelope>((resolve, reject) => {
      let idle: NodeJS.Timeout | undefined;
      const denied = (e: BusError): void => finish(() => reject(e));
      const finish = (fn: () => void): void => {
        clearTimeout(overall);
        clearTimeout(idle);
        sub.unsubscribe();
        const waiting = this.#pending.get(subject);
        waiting?.delete(denied);
        if (waiting?.size === 0) this.#pending.delete(subject);
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
      const sub = transport.subscribe(inbox, {
        callback: (err, m) => {
          if (err) return finish(() => reject(err));
          if (m.headers?.code === NO_RESPONDERS_STATUS && m.data.length === 0) {
            return finish(() => reject(new BusError('NoResponders', `no responder for ${subject}: is the process that serves it running?`, { retryable: true })));
          }
          let env: ReplyEnvelope;
          try {
            env = JSON.parse(bodyText(m.data)) as ReplyEnvelope;
          } catch (e) {
            return finish(() => reject(new BusError('SchemaInvalid', `reply on ${subject} is not JSON: ${errorMessage(e)}`, { cause: e })));
          }
          if (typeof env === 'object' && env !== null && 'progress' in env) return armIdle();
          finish(() => resolve(env));
        },
      });
      armIdle();
      let waiting = this.#pending.get(subject);
      if (waiting === undefined) this.#pending.set(subject, (waiting = new Set()));
      waiting.add(denied);
      transport.publish(subject, data, { reply: inbox, headers: hdrs });
    });
  }

  /** @see Bus.serve */
  serve<Q extends z.ZodType, R extends z.ZodType>(
    subject: string,
    reqSchema: Q,
    repSchema: R,
    handler: (req: z.output<Q>, sc: ServeContext) => Promise<z.input<R>>,
    opts: ServeOptions,
  ): void {
    const sub = this.#d.transport.subscribe(subject, {
      queue: opts.queue,
      callback: (err, m) => {
        if (err) {
          this.#d.logger.error('subscription error', { subject, error: errorMessage(err) });
          return;
        }
        const p = this.#serveOne(subject, reqSchema as unknown as z.ZodType<z.output<Q>>, repSchema, handler, m);
        this.#inflight.add(p);
        void p.finally(() => this.#inflight.delete(p));
      },
    });
    this.#track(sub, opts.signal, () => void sub.drain().catch((e: unknown) => this.#d.logger.warn('draining a served subject failed', { subject, error: errorMessage(e) })));
  }

  async #serveOne<T, R extends z.ZodType>(
    subject: string,
    reqSchema: z.ZodType<T>,
    repSchema: R,
    handler: (req: T, sc: ServeContext) => Promise<z.input<R>>,
    m: CoreMsg,
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
    const beat = m.reply ? setInterval(() => respond({ progress: true }), this.#d.progressBeatMs ?? PROGRESS_BEAT_MS) : undefined;
    try {
      const parsed = decodeMessage(reqSchema, m.subject, m.data);
      if (!parsed.ok) {
        await this.#d.deadLetter({ subject: m.subject, reason: parsed.reason, data: m.data });
        failSpan(span, new BusError('SchemaInvalid', parsed.reason));
        respond({ ok: false, error: { code: 'SchemaInvalid', message: parsed.reason, retryable: false } });
        return;
      }
      const out = await context.with(ctx, () => handler(parsed.value, { subject: m.subject, context: ctx }));
      const checked = repSchema.safeParse(out);
      if (!checked.success) {
        const reason = `reply on ${subject} does not match its schema: ${formatIssues(checked.error)}`;
        this.#d.logger.error('invalid reply', { subject, reason });
        failSpan(span, new Error(reason));
        respond({ ok: false, error: { code: 'SchemaInvalid', message: reason, retryable: false } });
        return;
      }
      respond({ ok: true, data: checked.data });
    } catch (e) {
      failSpan(span, e);
      respond({ ok: false, error: wireErrorOf(e) });
    } finally {
      clearInterval(beat);
      span.end();
    }
  }

  #track(sub: CoreSubscription, signal: AbortSignal, stop: () => void): void {
    this.#subs.add(sub);
    signal.addEventListener(
      'abort',
      () => {
        stop();
        this.#subs.delete(sub);
      },
      { once: true },
    );
  }

  /** Unsubscribes everything, then waits for the request handlers still running. */
  async close(): Promise<void> {
    for (const s of this.#subs) s.unsubscribe();
    this.#subs.clear();
    await Promise.allSettled([...this.#inflight]);
  }
}

/** The `libs/api` wire shape of a handler's error (a KubeletError keeps its code and retryable). */
export function wireErrorOf(e: unknown): WireError {
  const w = e as { code?: unknown; retryable?: unknown } | null;
  return {
    code: typeof w?.code === 'string' ? w.code : 'Internal',
    message: errorMessage(e),
    retryable: w?.retryable === true,
  };
}
