/**
 * `useMuxedRequests`: the connection's `request()` replaced by one that costs no Error per request.
 *
 * nats-core 3.4's `request()` ends every request, answered or not, with
 * `cancel()` → `deferred.reject(new RequestError("cancelled"))`: an Error with a captured stack
 * thrown away on a promise that has already settled, ~0.05 ms each, whatever `noAsyncTraces` says.
 * Every JetStream publish ack, KV operation and direct get is such a request (~58 per pod), so it is
 * replaced on the connection object itself: the JetStream and KV clients call `nc.request` on the
 * connection they are given and take this one. Replies come back on one inbox subscription of our
 * own (`<inbox>.*`), like nats-core's muxed inbox.
 *
 * It fails a request the way nats-core does, which is what `@nats-io/jetstream` inspects:
 * - no reply in time: `TimeoutError` (jetstream retries on it);
 * - a 503 no-responders status: `RequestError` whose `cause` is `NoRespondersError`
 *   (`isNoResponders()`; jetstream makes it `JetStreamNotEnabled`);
 * - the server refused the publish (its subject) or our inbox subscription: `RequestError` whose
 *   `cause` is the `PermissionViolationError` (`permissionError` in nats-bus.ts maps it);
 * - the connection closed under it: `RequestError` "connection closed".
 * A request on a closed or draining connection, or with options this one does not handle (`noMux`,
 * `reply`, a timeout below 1 ms), goes to nats-core's own `request()`, which rejects or serves it.
 */
import { ClosedConnectionError, createInbox, NoRespondersError, PermissionViolationError, RequestError, TimeoutError } from '@nats-io/transport-node';
import type { Msg, NatsConnection, Payload, RequestOptions, Subscription } from '@nats-io/transport-node';

/** The status code nats-server answers a request with when no subscriber has interest. */
const NO_RESPONDERS_STATUS = 503;

/** nats-core's default request timeout. */
const DEFAULT_TIMEOUT_MS = 1000;

interface PendingRequest {
  readonly subject: string;
  readonly resolve: (m: Msg) => void;
  readonly reject: (e: Error) => void;
  readonly timer: NodeJS.Timeout;
}

const installed = new WeakMap<NatsConnection, MuxedRequests>();

/** Replaces `nc.request` with a {@link MuxedRequests}' (once per connection); returns it. */
export function useMuxedRequests(nc: NatsConnection): MuxedRequests {
  let muxed = installed.get(nc);
  if (muxed === undefined) {
    const own = new MuxedRequests(nc, nc.request.bind(nc));
    nc.request = (subject, payload, opts) => own.request(subject, payload, opts);
    installed.set(nc, (muxed = own));
  }
  return muxed;
}

/** Requests of one connection, their replies on one inbox subscription. */
export class MuxedRequests {
  readonly #nc: NatsConnection;
  readonly #fallback: NatsConnection['request'];
  /** `<inbox>.`; a request's reply subject is it plus the request's token. */
  readonly #prefix: string;
  readonly #pending = new Map<string, PendingRequest>();
  #sub: Subscription | undefined;
  #next = 0;

  constructor(nc: NatsConnection, fallback: NatsConnection['request']) {
    this.#nc = nc;
    this.#fallback = fallback;
    const { inboxPrefix } = (nc as { options?: { inboxPrefix?: string } }).options ?? {};
    this.#prefix = `${createInbox(inboxPrefix)}.`;
    void nc.closed().then(() => this.#failAll(new RequestError('connection closed', { cause: new ClosedConnectionError() })));
    this.#watchRefusedPublishes().catch(() => undefined);
  }

  /** The inbox the replies come back under (`<inbox>.<token>`). */
  get inbox(): string {
    return this.#prefix;
  }

  /** How many requests await their reply. */
  get pending(): number {
    return this.#pending.size;
  }

  request(subject: string, payload?: Payload, opts: RequestOptions = { timeout: DEFAULT_TIMEOUT_MS }): Promise<Msg> {
    const timeoutMs = opts.timeout || DEFAULT_TIMEOUT_MS;
    if (opts.noMux === true || opts.reply !== undefined || timeoutMs < 1 || this.#nc.isClosed() || this.#nc.isDraining()) {
      return this.#fallback(subject, payload, opts);
    }
    return new Promise<Msg>((resolve, reject) => {
      const token = (this.#next++).toString(36);
      try {
        this.#subscribe();
        // Before the publish: a publish refused at once (a bad subject) must not leave a timer behind.
        const timer = setTimeout(() => this.#settle(token)?.reject(new TimeoutError()), timeoutMs);
        this.#pending.set(token, { subject, resolve, reject, timer });
        // The request's headers and trace options are publish options; the rest publish ignores.
        this.#nc.publish(subject, payload, { ...opts, reply: `${this.#prefix}${token}` });
      } catch (e) {
        this.#settle(token);
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  /** Subscribes the inbox on the first request (and again after the server refused it). */
  #subscribe(): void {
    if (this.#sub !== undefined) return;
    this.#sub = this.#nc.subscribe(`${this.#prefix}*`, {
      callback: (err, m) => {
        if (err !== null) {
          // The only error a callback subscription gets: the server refused it (permissions).
          this.#sub = undefined;
          this.#failAll(new RequestError(err.message, { cause: err }));
          return;
        }
        const p = this.#settle(m.subject.slice(this.#prefix.length));
        if (p === undefined) return; // a late reply to a request that timed out
        if (m.data.length === 0 && m.headers?.code === NO_RESPONDERS_STATUS) {
          const cause = new NoRespondersError(p.subject);
          p.reject(new RequestError(cause.message, { cause }));
        } else {
          p.resolve(m);
        }
      },
    });
  }

  /** Takes a request out of the pending ones (its timer stopped); undefined when it is settled already. */
  #settle(token: string): PendingRequest | undefined {
    const p = this.#pending.get(token);
    if (p === undefined) return undefined;
    this.#pending.delete(token);
    clearTimeout(p.timer);
    return p;
  }

  #failAll(e: Error): void {
    for (const token of [...this.#pending.keys()]) this.#settle(token)?.reject(e);
  }

  /**
   * A refused publish fails the oldest request pending on its subject at once, as nats-core does
   * (the server reports each refused publish once, with its subject), not at its timeout.
   */
  async #watchRefusedPublishes(): Promise<void> {
    for await (const s of this.#nc.status()) {
      if (s.type !== 'error' || !(s.error instanceof PermissionViolationError) || s.error.operation !== 'publish') continue;
      const refused = s.error;
      for (const [token, p] of this.#pending) {
        if (p.subject !== refused.subject) continue;
        this.#settle(token)?.reject(new RequestError(refused.message, { cause: refused }));
        break;
      }
    }
  }
}
