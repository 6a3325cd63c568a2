/**
 * A subscriber to every subject of a node's nats-server that counts what the server carries while
 * `recording` is on: messages and bytes by subject template (pod UIDs, partitions, inboxes and ack
 * tokens replaced by placeholders; a body's kind, op, event or reason appended), request/reply
 * latencies, and per pod UID when each subject was first and last seen (the pipeline's stages).
 * The probes of test/bench print these per pod.
 */
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';

const UID_TOKEN = /^[0-9a-f]{16,}$|^[0-9a-f]{8}-[0-9a-f]{4}-/;
const UID_IN_BODY = /"uid":"([^"]+)"/;
const UIDS_IN_BODY = /"uid":"([^"]+)"/g;
/** Body fields that tell messages of one subject apart (a poke's kind, an update's op, an event's reason). */
const KIND_IN_BODY = /"(?:kind|op|event|reason)":"([^"]+)"/;
const dec = new TextDecoder();

/** The subject with pod UIDs, partitions, inboxes and ack tokens replaced by placeholders. */
export function template(subject: string): string {
  if (subject.startsWith('_INBOX.')) return '_INBOX (replies)';
  if (subject.startsWith('$JS.ACK.')) return `$JS.ACK.${subject.split('.')[2]}.{consumer} (acks)`;
  if (subject.startsWith('$JS.API.DIRECT.GET.') || subject.startsWith('$JS.API.STREAM.MSG.')) {
    // The stream, and for the API server's bucket the resource read: `$JS.API.DIRECT.GET.KV_sl_api.pods…`.
    const t = subject.split('.');
    const direct = t[2] === 'DIRECT';
    const stream = t[direct ? 4 : 5] ?? '';
    const resource = stream === 'KV_sl_api' && direct ? `.${t[7] ?? ''}` : '';
    return `${t.slice(0, direct ? 4 : 5).join('.')}.${stream}${resource}…`;
  }
  if (subject.startsWith('$JS.API.')) return subject.split('.').slice(0, 4).join('.') + '…';
  if (subject.startsWith('$KV.sl_api.')) return `$KV.sl_api.${subject.split('.')[2] ?? ''}.{key}`;
  return subject
    .split('.')
    .map((t) => (UID_TOKEN.test(t) ? '{uid}' : /^\d+$/.test(t) ? '{n}' : t))
    .join('.');
}

/** What the spy counted; see {@link BusSpy}. */
export class BusSpy {
  /** Count only while true. */
  recording = false;
  /** Messages by subject template (deliveries of stored messages marked `(delivered)`). */
  readonly counts = new Map<string, number>();
  readonly bytes = new Map<string, number>();
  /** uid → stage (subject template without the body kind) → first time seen (ms since the epoch); publishes only, not deliveries. */
  readonly firstSeen = new Map<string, Map<string, number>>();
  /** uid → stage → last time seen. */
  readonly lastSeen = new Map<string, Map<string, number>>();
  /** Request template → reply latencies (ms). */
  readonly rpcLatency = new Map<string, number[]>();
  readonly #pending = new Map<string, { tpl: string; t: number }>();
  readonly #nc: NatsConnection;
  readonly #sub: Subscription;

  private constructor(nc: NatsConnection) {
    this.#nc = nc;
    this.#sub = nc.subscribe('>', { callback: (_err, m) => this.#on(m.subject, m.reply, m.data) });
  }

  /** Connects to `url` and subscribes to `>`; {@link BusSpy.close} it in a finally. */
  static async start(url: string, name: string): Promise<BusSpy> {
    return new BusSpy(await connect({ servers: url, name }));
  }

  /** The spy's connection (for a probe's own subscriptions). */
  get connection(): NatsConnection {
    return this.#nc;
  }

  /** Forgets everything counted. */
  clear(): void {
    for (const m of [this.counts, this.bytes, this.firstSeen, this.lastSeen, this.rpcLatency, this.#pending]) m.clear();
  }

  /** Total messages counted. */
  total(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    this.#sub.unsubscribe();
    await this.#nc.close().catch(() => undefined);
  }

  #on(subject: string, reply: string | undefined, data: Uint8Array): void {
    if (!this.recording) return;
    const now = Date.now();
    let tpl = template(subject);
    if (!tpl.startsWith('$') && !tpl.startsWith('_') && data.length > 0) {
      const kind = KIND_IN_BODY.exec(dec.decode(data.subarray(0, 2048)))?.[1];
      if (kind !== undefined) tpl = `${tpl} [${kind}]`;
    }
    // A JetStream delivery (a consumer's or a KV watch's) carries the stored message's subject and an ack reply.
    const delivery = reply?.startsWith('$JS.ACK.') === true;
    if (delivery) tpl = `${tpl} (delivered)`;
    this.counts.set(tpl, (this.counts.get(tpl) ?? 0) + 1);
    this.bytes.set(tpl, (this.bytes.get(tpl) ?? 0) + data.length);
    if (reply !== undefined && reply !== '' && subject.includes('.rpc.')) this.#pending.set(reply, { tpl, t: now });
    if (subject.startsWith('_INBOX.')) {
      const req = this.#pending.get(subject);
      if (req !== undefined && data.length > 0 && !dec.decode(data.subarray(0, 20)).includes('"progress"')) {
        this.#pending.delete(subject);
        let xs = this.rpcLatency.get(req.tpl);
        if (xs === undefined) this.rpcLatency.set(req.tpl, (xs = []));
        xs.push(now - req.t);
      }
      return;
    }
    if (delivery) return;
    const stage = tpl.replace(/ \[.*\]$/, '');
    let uids: string[] = [];
    const inSubject = subject.split('.').find((t) => UID_TOKEN.test(t));
    if (inSubject !== undefined) uids = [inSubject];
    else if (subject.includes('.config.') && data.length > 0) uids = [...dec.decode(data).matchAll(UIDS_IN_BODY)].map((x) => x[1]!);
    else if (data.length > 0) {
      const u = UID_IN_BODY.exec(dec.decode(data.subarray(0, 4096)))?.[1];
      if (u !== undefined) uids = [u];
    }
    for (const uid of uids) {
      let f = this.firstSeen.get(uid);
      if (f === undefined) this.firstSeen.set(uid, (f = new Map<string, number>()));
      if (!f.has(stage)) f.set(stage, now);
      let l = this.lastSeen.get(uid);
      if (l === undefined) this.lastSeen.set(uid, (l = new Map<string, number>()));
      l.set(stage, now);
    }
  }
}
