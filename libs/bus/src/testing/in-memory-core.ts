/**
 * Core NATS in memory: subject wildcards, queue groups (one member per group gets each message),
 * reply subjects, and the no-responders status for a request nobody is subscribed to. Deliveries
 * are asynchronous (the next turn of the event loop), like a network hop.
 */
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { CoreMsg, CoreSubscription, CoreTransport } from '../core-client.js';
import { NO_RESPONDERS_STATUS } from '../core-client.js';
import { subjectMatches } from './subject-match.js';

interface Sub {
  readonly pattern: string;
  readonly queue: string | undefined;
  readonly callback: (err: Error | null, msg: CoreMsg) => void;
  closed: boolean;
}

const enc = new TextEncoder();

/** The in-memory core transport of an `InMemoryNats` server. */
export class InMemoryCore implements CoreTransport {
  readonly #subs = new Set<Sub>();
  /** Offered every core publish first (the streams store the subjects they capture). */
  readonly #capture: (subject: string, data: Uint8Array, headers: MsgHdrs | undefined) => void;

  constructor(capture: (subject: string, data: Uint8Array, headers: MsgHdrs | undefined) => void) {
    this.#capture = capture;
  }

  publish(subject: string, data: string | Uint8Array, opts: { reply?: string; headers?: MsgHdrs } = {}): void {
    const bytes = typeof data === 'string' ? enc.encode(data) : data;
    this.#capture(subject, bytes, opts.headers);
    this.deliver(subject, bytes, opts.headers, opts.reply);
  }

  /** Hands a message to the subscribers of `subject` (no stream capture). */
  deliver(subject: string, data: Uint8Array, headers: MsgHdrs | undefined, reply?: string): void {
    const matching = [...this.#subs].filter((s) => !s.closed && subjectMatches(s.pattern, subject));
    const receivers = matching.filter((s) => s.queue === undefined);
    const groups = new Map<string, Sub[]>();
    for (const s of matching) {
      if (s.queue === undefined) continue;
      const g = groups.get(s.queue);
      if (g === undefined) groups.set(s.queue, [s]);
      else g.push(s);
    }
    for (const g of groups.values()) receivers.push(g[Math.floor(Math.random() * g.length)]!);
    if (receivers.length === 0) {
      if (reply !== undefined) this.deliver(reply, new Uint8Array(), natsHeaders(NO_RESPONDERS_STATUS, 'No Responders'));
      return;
    }
    for (const s of receivers) {
      const msg: CoreMsg = {
        subject,
        data,
        headers,
        reply,
        respond: (body: string) => {
          if (reply === undefined) return false;
          this.publish(reply, body);
          return true;
        },
      };
      setImmediate(() => {
        if (!s.closed) s.callback(null, msg);
      });
    }
  }

  subscribe(subject: string, opts: { queue?: string; callback: (err: Error | null, msg: CoreMsg) => void }): CoreSubscription {
    const sub: Sub = { pattern: subject, queue: opts.queue, callback: opts.callback, closed: false };
    this.#subs.add(sub);
    const stop = (): void => {
      sub.closed = true;
      this.#subs.delete(sub);
    };
    return { unsubscribe: stop, drain: async () => stop() };
  }
}
