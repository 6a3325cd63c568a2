/**
 * What the bus alone costs a pod: the CPU of one stream hop — a JetStream publish and its PubAck, the
 * delivery to a durable pull consumer and its ack, four of the messages the burst probe counts —
 * spent by the publisher, the consumer and nats-server together, with 1 KiB messages pipelined (64
 * publishes in flight, 256 deliveries pulled at once) so that no process waits or wakes between
 * them: the cheapest a message gets on this machine. A pod's messages times this price is the CPU
 * the node needs for its pods even if no process did anything but carry them. Then the same hop one
 * publish at a time, back to back: the price when each message is handled on its own, as most of a
 * pod's are.
 *
 * On a nats-server of its own (file store, as the node's streams), so that the node's traffic is
 * neither counted nor slowed; both clients are child processes of plain JavaScript.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { jetstreamManager, AckPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { eventually, startNatsServer } from '@splitlet/testkit';
import { cpuSeconds } from './stats.ts';

/** The bus messages one stream hop is, as the burst probe counts them (publish, PubAck, delivery, ack). */
export const MESSAGES_PER_HOP = 4;
const STREAM = 'HOP';
const CONSUMER = 'hop';
const SUBJECT = 'hop.x';

/** CPU µs per stream hop, by party and in all. */
export interface HopPrice {
  /** Publishes in flight at once (1: each waits for the previous one's PubAck). */
  readonly inFlight: number;
  readonly hops: number;
  readonly microsPerHop: { readonly publisher: number; readonly consumer: number; readonly natsServer: number; readonly total: number };
  /** `microsPerHop.total` ÷ `messagesPerHop`. */
  readonly microsPerMessage: number;
}

/** {@link busHopCost}'s result: the price of a hop pipelined and one at a time. */
export interface BusHopCost {
  readonly payloadBytes: number;
  /** {@link MESSAGES_PER_HOP}. */
  readonly messagesPerHop: number;
  /** 64 publishes in flight: the cheapest a message gets. */
  readonly pipelined: HopPrice;
  /** One publish at a time, back to back. */
  readonly sequential: HopPrice;
}

interface Child {
  readonly proc: ChildProcess;
  ask<T>(msg: string): Promise<T>;
}

function child(role: 'pub' | 'sub', url: string, payloadBytes: number): Promise<Child> {
  const script = fileURLToPath(new URL('./bus-hop-child.mjs', import.meta.url));
  const proc = fork(script, [role, url, STREAM, CONSUMER, SUBJECT, String(payloadBytes)], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const next = <T>(): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`the bus hop's ${role} process exited (${code})`));
      proc.once('exit', onExit);
      proc.once('message', (m) => {
        proc.off('exit', onExit);
        resolve(m as T);
      });
    });
  const ready = next<{ ready: true }>();
  return ready.then(() => ({
    proc,
    ask<T>(msg: string): Promise<T> {
      const answer = next<T>();
      proc.send(msg);
      return answer;
    },
  }));
}

/**
 * Measures {@link BusHopCost}: `warmup` hops first (JIT, buffers), then `hops` hops counted
 * pipelined and a tenth of them one at a time.
 */
export async function busHopCost(hops = 20_000, warmup = 5000, payloadBytes = 1024): Promise<BusHopCost> {
  const server = await startNatsServer({ jetstream: true });
  const children: Child[] = [];
  try {
    const nc = await connect({ servers: server.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], storage: StorageType.File, retention: RetentionPolicy.Workqueue });
    await jsm.consumers.add(STREAM, { durable_name: CONSUMER, ack_policy: AckPolicy.Explicit, max_ack_pending: 1024 });
    await nc.close();
    const sub = await child('sub', server.url, payloadBytes);
    children.push(sub);
    const pub = await child('pub', server.url, payloadBytes);
    children.push(pub);
    let sent = 0;
    const run = async (n: number, inFlight: number): Promise<void> => {
      sent += n;
      await pub.ask<{ published: number }>(`${n}:${inFlight}`);
      await eventually(async () => (await sub.ask<{ n: number }>('cpu')).n >= sent, {
        timeoutMs: 60_000 + n * 5,
        intervalMs: 20,
        message: `bus hop cost: the consumer got ${sent} messages`,
      });
    };
    const price = async (n: number, inFlight: number): Promise<HopPrice> => {
      const [pub0, sub0, nats0] = [(await pub.ask<{ cpu: number }>('cpu')).cpu, (await sub.ask<{ cpu: number }>('cpu')).cpu, cpuSeconds(server.pid)];
      await run(n, inFlight);
      const [pub1, sub1, nats1] = [(await pub.ask<{ cpu: number }>('cpu')).cpu, (await sub.ask<{ cpu: number }>('cpu')).cpu, cpuSeconds(server.pid)];
      const r = (x: number): number => Math.round(x * 10) / 10;
      const [publisher, consumer, natsServer] = [(pub1 - pub0) / n, (sub1 - sub0) / n, ((nats1 - nats0) * 1e6) / n];
      const total = publisher + consumer + natsServer;
      return {
        inFlight,
        hops: n,
        microsPerHop: { publisher: r(publisher), consumer: r(consumer), natsServer: r(natsServer), total: r(total) },
        microsPerMessage: r(total / MESSAGES_PER_HOP),
      };
    };
    await run(warmup, 64);
    const pipelined = await price(hops, 64);
    const sequential = await price(Math.ceil(hops / 10), 1);
    return { payloadBytes, messagesPerHop: MESSAGES_PER_HOP, pipelined, sequential };
  } finally {
    for (const c of children) c.proc.kill('SIGKILL');
    await server.stop();
  }
}
