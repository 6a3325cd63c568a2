/**
 * The one contract suite of the {@link Bus}: `bus-contract.test.ts` runs it against `NatsBus` (a
 * real nats-server) and against `InMemoryBus`, so the fake cannot drift from the real thing.
 * Each test gets two buses (two processes) on a node of its own, so tests share no subjects.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { trace } from '@opentelemetry/api';
import { eventually as poll } from '@splitlet/testkit';
import { Buckets, DeadLetter, KubeletError, Streams, Subjects, type SpanRecord } from '@splitlet/api';
import { createOrderedPublisher, isBusError } from '../src/index.ts';
import type { Bus, Delivery, KvBucket } from '../src/index.ts';
import type { TypedKv } from '../src/typed-kv.ts';

/** A bus under test; `typedKv` reaches the raw bucket (to store a value that does not validate). */
export type BusUnderTest = Bus & { typedKv<S extends z.ZodType>(bucket: string, schema: S): Promise<TypedKv<z.output<S>>> };

/** Two buses on `node`, and how to close them. */
export interface ContractHarness {
  readonly a: BusUnderTest;
  readonly b: BusUnderTest;
  close(): Promise<void>;
}

/** Makes the buses of one test. `progressBeatMs` is the serving side's beat. */
export type HarnessFactory = (o: { node: string; progressBeatMs: number }) => Promise<ContractHarness>;

const Ping = z.object({ type: z.literal('test.Ping.v1'), n: z.number().int() });
type Ping = z.infer<typeof Ping>;
const ping = (n: number): Ping => ({ type: 'test.Ping.v1', n });

function eventually(fn: () => void | Promise<void>, timeoutMs = 10_000): Promise<true> {
  return poll(
    async () => {
      await fn();
      return true as const;
    },
    { timeoutMs },
  );
}

let nodes = 0;

/** Registers the suite under `name`. */
export function busContract(name: string, factory: HarnessFactory): void {
  describe(`Bus contract: ${name}`, () => {
    const withBuses = (title: string, fn: (h: ContractHarness, node: string) => Promise<void>): void => {
      test(title, async () => {
        const node = `contract-${process.pid}-${++nodes}`;
        const h = await factory({ node, progressBeatMs: 100 });
        try {
          await fn(h, node);
        } finally {
          await h.close();
        }
      });
    };

    const deadLetters = async (bus: Bus, node: string, process: string): Promise<DeadLetter[]> => {
      const out: DeadLetter[] = [];
      await bus.readStream(DeadLetter, Streams.deadLetter, Subjects.deadLetter(node, process), (d) => out.push(d));
      return out;
    };

    const consumeInto = async (
      bus: Bus,
      o: { node: string; uid: string; durable: string; signal: AbortSignal; maxDeliver?: number; ackWaitMs?: number; autoAck?: boolean },
      handler: (d: Delivery<Ping>) => Promise<void>,
    ) =>
      bus.consume(
        Ping,
        {
          stream: Streams.pleg,
          durable: o.durable,
          filterSubject: Subjects.pleg(o.node, o.uid),
          signal: o.signal,
          nakBackoffMs: [50, 100],
          ...(o.maxDeliver !== undefined ? { maxDeliver: o.maxDeliver } : {}),
          ...(o.ackWaitMs !== undefined ? { ackWaitMs: o.ackWaitMs } : {}),
          ...(o.autoAck !== undefined ? { autoAck: o.autoAck } : {}),
        },
        handler,
      );

    withBuses('publish validates before sending; consume hands over the data with the producer trace context and acks', async ({ a, b }, node) => {
      const subject = Subjects.pleg(node, 'u1');
      await assert.rejects(a.publish(Ping, subject, { type: 'test.Ping.v1', n: 'x' } as unknown as Ping), (e: unknown) => isBusError(e, 'SchemaInvalid'));
      const got: Delivery<Ping>[] = [];
      const ac = new AbortController();
      const c = await consumeInto(b, { node, uid: 'u1', durable: 'c1', signal: ac.signal }, async (d) => void got.push(d));
      const tracer = trace.getTracer('contract');
      const ack = await tracer.startActiveSpan('producer', async (span) => {
        try {
          return await a.publish(Ping, subject, ping(1));
        } finally {
          span.end();
        }
      });
      assert.equal(ack.stream, Streams.pleg);
      assert.equal(ack.duplicate, false);
      await eventually(() => assert.equal(got.length, 1));
      assert.deepEqual(got[0]!.data, ping(1));
      assert.equal(got[0]!.deliveryCount, 1);
      assert.equal(got[0]!.streamSequence, ack.seq);
      assert.equal(got[0]!.settled, true, 'auto-acked');
      assert.ok(got[0]!.headers?.get('traceparent'), 'trace context in the headers');
      ac.abort();
      await c.done;
      assert.ok(c.lastActivity() > 0);
    });

    withBuses('a poison message is terminated and dead-lettered with the reason; the consumer goes on', async ({ a, b }, node) => {
      const subject = Subjects.pleg(node, 'u2');
      const got: number[] = [];
      const ac = new AbortController();
      const c = await consumeInto(b, { node, uid: 'u2', durable: 'c2', signal: ac.signal }, async (d) => void got.push(d.data.n));
      a.publishCore(subject, { type: 'not-a-ping' });
      await a.publish(Ping, subject, ping(2));
      await eventually(() => assert.deepEqual(got, [2]));
      await eventually(async () => {
        const letters = await deadLetters(a, node, b.process);
        assert.equal(letters.length, 1);
        assert.equal(letters[0]!.subject, subject);
        assert.equal(letters[0]!.consumer, 'c2');
        assert.match(letters[0]!.reason, /does not match its schema/);
      });
      assert.equal(b.deadLetteredCount, 1);
      ac.abort();
      await c.done;
    });

    withBuses('a retryable failure is redelivered with backoff until max deliver, then dead-lettered; a non-retryable one at once', async ({ a, b }, node) => {
      const counts = new Map<number, number[]>();
      const ac = new AbortController();
      const c = await consumeInto(b, { node, uid: 'u3', durable: 'c3', signal: ac.signal, maxDeliver: 3 }, async (d) => {
        counts.set(d.data.n, [...(counts.get(d.data.n) ?? []), d.deliveryCount]);
        if (d.data.n === 1) throw new KubeletError('Unavailable', 'try later', { retryable: true });
        if (d.data.n === 2) throw new KubeletError('Invalid', 'never works');
      });
      await a.publish(Ping, Subjects.pleg(node, 'u3'), ping(1));
      await a.publish(Ping, Subjects.pleg(node, 'u3'), ping(2));
      await eventually(async () => {
        const reasons = (await deadLetters(a, node, b.process)).map((l) => l.reason).sort();
        assert.deepEqual(reasons, ['gave up after 3 deliveries: try later', 'never works']);
      });
      assert.deepEqual(counts.get(1), [1, 2, 3]);
      assert.deepEqual(counts.get(2), [1]);
      ac.abort();
      await c.done;
    });

    withBuses('nak(delay) redelivers after the delay, term never again, an unsettled message after the ack wait', async ({ a, b }, node) => {
      const seen: [number, number, number][] = [];
      const ac = new AbortController();
      const c = await consumeInto(b, { node, uid: 'u4', durable: 'c4', signal: ac.signal, ackWaitMs: 600, autoAck: false }, async (d) => {
        seen.push([d.data.n, d.deliveryCount, Date.now()]);
        if (d.data.n === 1 && d.deliveryCount === 1) d.nak(300);
        else if (d.data.n === 2) d.term();
        else if (d.data.n === 3 && d.deliveryCount === 1)
          return; // left unsettled: the ack wait redelivers it
        else d.ack();
      });
      await a.publish(Ping, Subjects.pleg(node, 'u4'), ping(1));
      await a.publish(Ping, Subjects.pleg(node, 'u4'), ping(2));
      await a.publish(Ping, Subjects.pleg(node, 'u4'), ping(3));
      await eventually(() => assert.equal(seen.filter(([n]) => n !== 2).length, 4));
      const first = seen.filter(([n]) => n === 1);
      assert.deepEqual(
        first.map(([, count]) => count),
        [1, 2],
      );
      assert.ok(first[1]![2] - first[0]![2] >= 250, 'redelivered after the nak delay');
      const third = seen.filter(([n]) => n === 3);
      assert.deepEqual(
        third.map(([, count]) => count),
        [1, 2],
      );
      assert.ok(third[1]![2] - third[0]![2] >= 500, 'redelivered after the ack wait');
      assert.deepEqual(
        seen.filter(([n]) => n === 2).map(([, count]) => count),
        [1],
        'terminated: delivered once',
      );
      ac.abort();
      await c.done;
    });

    for (const [retention, stream, subjectOf] of [
      ['limits', Streams.pleg, (node: string) => Subjects.pleg(node, 'u9')],
      ['work-queue', Streams.work, (node: string) => Subjects.work(node, 0, 'u9')],
    ] as const) {
      withBuses(
        `takeOver (${retention} stream): what a dead holder left unsettled is delivered to the new one at once, in order; the old one settles nothing`,
        async ({ a, b }, node) => {
          // The ack wait is far longer than the test may wait: only the takeover can deliver this early.
          const subject = subjectOf(node);
          const spec = { stream, durable: `c9-${retention}`, filterSubject: subject, ackWaitMs: 300_000, maxAckPending: 1, maxDeliver: -1 };
          let release!: () => void;
          const held = new Promise<void>((r) => (release = r));
          const old: number[] = [];
          const acOld = new AbortController();
          const first = await b.consume(Ping, { ...spec, signal: acOld.signal }, async (d) => {
            old.push(d.data.n);
            await held; // the holder "dies" with message 1 unsettled
          });
          await a.publish(Ping, subject, ping(1));
          await a.publish(Ping, subject, ping(2));
          await eventually(() => assert.deepEqual(old, [1]));
          acOld.abort();
          const got: number[] = [];
          const acNew = new AbortController();
          const next = await a.consume(Ping, { ...spec, takeOver: true, signal: acNew.signal }, async (d) => void got.push(d.data.n));
          await eventually(() => assert.deepEqual(got, [1, 2]), 60_000);
          release(); // the old holder's late ack is ignored: nothing is redelivered or skipped
          await first.done;
          await a.publish(Ping, subject, ping(3));
          await eventually(() => assert.deepEqual(got, [1, 2, 3]));
          assert.deepEqual(old, [1], 'the old holder got nothing after the takeover');
          acNew.abort();
          await next.done;
        },
      );
    }

    withBuses('takeOver: pull requests a stopped holder left waiting end with it; new messages reach the new holder at once', async ({ a, b }, node) => {
      // A holder that stops (a pod-worker releasing a partition) leaves its pull request on the server
      // until it expires; without the takeover, the server hands the next message to it, and nobody
      // reads it until the ack wait (far longer than the test waits) ran out.
      const spec = { stream: Streams.pleg, durable: 'c11', filterSubject: Subjects.pleg(node, 'u11'), ackWaitMs: 300_000, maxDeliver: -1 };
      const acOld = new AbortController();
      const old: number[] = [];
      const first = await b.consume(Ping, { ...spec, signal: acOld.signal }, async (d) => void old.push(d.data.n));
      await a.publish(Ping, Subjects.pleg(node, 'u11'), ping(1));
      await eventually(() => assert.deepEqual(old, [1]));
      acOld.abort();
      await first.done;
      const got: number[] = [];
      const acNew = new AbortController();
      const next = await a.consume(Ping, { ...spec, takeOver: true, signal: acNew.signal }, async (d) => void got.push(d.data.n));
      await a.publish(Ping, Subjects.pleg(node, 'u11'), ping(2));
      await eventually(() => assert.deepEqual(got, [2]), 60_000);
      assert.deepEqual(old, [1], 'the stopped holder got nothing more');
      acNew.abort();
      await next.done;
    });

    withBuses('max deliver -1: a retryable failure is retried until it succeeds, never dead-lettered', async ({ a, b }, node) => {
      const counts: number[] = [];
      const ac = new AbortController();
      const c = await consumeInto(b, { node, uid: 'u10', durable: 'c10', signal: ac.signal, maxDeliver: -1 }, async (d) => {
        counts.push(d.deliveryCount);
        if (d.deliveryCount < 5) throw new KubeletError('Unavailable', 'try later', { retryable: true });
      });
      await a.publish(Ping, Subjects.pleg(node, 'u10'), ping(1));
      await eventually(() => assert.deepEqual(counts, [1, 2, 3, 4, 5]), 30_000);
      assert.deepEqual(await deadLetters(a, node, b.process), []);
      ac.abort();
      await c.done;
    });

    withBuses('msgID deduplicates; an expected last subject sequence is a compare-and-swap', async ({ a }, node) => {
      const subject = Subjects.config(node, 'file');
      const first = await a.publish(Ping, subject, ping(1), { msgID: `${node}-1` });
      const again = await a.publish(Ping, subject, ping(1), { msgID: `${node}-1` });
      assert.equal(again.duplicate, true);
      assert.equal(again.seq, first.seq);
      const next = await a.publish(Ping, subject, ping(2), { expectLastSubjectSequence: first.seq });
      await assert.rejects(a.publish(Ping, subject, ping(3), { expectLastSubjectSequence: first.seq }), (e: unknown) => isBusError(e, 'Conflict'));
      const stored: [number, number][] = [];
      await a.readStream(Ping, Streams.config, subject, (p, meta) => stored.push([p.n, meta.seq]));
      assert.deepEqual(stored, [
        [1, first.seq],
        [2, next.seq],
      ]);
    });

    withBuses('request/reply: reply, remote error with its code, no responders, timeout, invalid request', async ({ a, b }, node) => {
      const ac = new AbortController();
      const subject = Subjects.rpc.volume(node, 'mount');
      b.serve(
        subject,
        Ping,
        Ping,
        async (req) => {
          if (req.n === 13) throw new KubeletError('FailedMount', 'unlucky', { retryable: true });
          if (req.n === 99) await new Promise((r) => setTimeout(r, 500));
          return ping(req.n + 1);
        },
        { queue: 'contract', signal: ac.signal },
      );
      await b.flush();
      assert.equal((await a.request(Ping, Ping, subject, ping(1), { timeoutMs: 5000 })).n, 2);
      await assert.rejects(
        a.request(Ping, Ping, subject, ping(13), { timeoutMs: 5000 }),
        (e: unknown) => isBusError(e, 'Remote') && e.remoteCode === 'FailedMount' && e.retryable && e.message === 'unlucky',
      );
      await assert.rejects(a.request(Ping, Ping, Subjects.rpc.volume(node, 'cleanup'), ping(1), { timeoutMs: 5000 }), (e: unknown) => isBusError(e, 'NoResponders'));
      await assert.rejects(a.request(Ping, Ping, subject, ping(99), { timeoutMs: 100 }), (e: unknown) => isBusError(e, 'Timeout') && /within 100 ms/.test((e as Error).message));
      const Loose = z.object({ type: z.string() });
      await assert.rejects(a.request(Loose, Ping, subject, { type: 'nope' }, { timeoutMs: 5000 }), (e: unknown) => isBusError(e, 'Remote') && e.remoteCode === 'SchemaInvalid');
      await eventually(async () => assert.equal((await deadLetters(a, node, b.process)).length, 1));
      ac.abort();
    });

    withBuses('request/reply: progress beats keep a slow request alive past the idle timeout', async ({ a, b }, node) => {
      const ac = new AbortController();
      const subject = Subjects.rpc.runtime(node, 'syncPod');
      // Twice the idle timeout of work, beats every 100 ms: 15 beat periods of slack for a loaded machine.
      b.serve(subject, Ping, Ping, async (req) => (await new Promise((r) => setTimeout(r, 3000)), ping(req.n)), { queue: 'slow', signal: ac.signal });
      await b.flush();
      assert.equal((await a.request(Ping, Ping, subject, ping(7), { timeoutMs: 30_000, idleTimeoutMs: 1500 })).n, 7);
      ac.abort();
    });

    withBuses('typed core messages: validated on send, in order on receipt, an invalid one dead-lettered and never handed over', async ({ a, b }, node) => {
      const got: Ping[] = [];
      const ac = new AbortController();
      const subject = Subjects.runtimeEvents(node, 'uid-1');
      b.subscribeCoreMessages(Ping, Subjects.runtimeEventsAll(node), (v) => void got.push(v), ac.signal);
      await b.flush();
      assert.throws(
        () => a.publishCoreMessage(Ping, subject, { type: 'test.Ping.v1', n: 'one' } as never),
        (e: unknown) => isBusError(e, 'SchemaInvalid'),
      );
      for (let n = 1; n <= 3; n++) a.publishCoreMessage(Ping, subject, ping(n));
      a.publishCore(subject, { type: 'test.Ping.v1', n: 1.5 });
      a.publishCoreMessage(Ping, subject, ping(4));
      await eventually(() => assert.deepEqual(got, [ping(1), ping(2), ping(3), ping(4)]));
      await eventually(async () => {
        const letters = await deadLetters(a, node, b.process);
        assert.equal(letters.length, 1);
        assert.equal(letters[0]?.subject, subject);
        assert.match(letters[0]?.reason ?? '', /does not match its schema/);
      });
      ac.abort();
    });

    withBuses('core pub/sub: JSON in, JSON out, with the headers', async ({ a, b }, node) => {
      const got: unknown[] = [];
      const ac = new AbortController();
      b.subscribeCore(Subjects.plegRelist(node), (data, msg) => void got.push([data, msg.subject]), ac.signal);
      await b.flush();
      a.publishCore(Subjects.plegRelist(node), { why: 'poke' });
      a.publishCore(Subjects.plegRelist(node));
      await eventually(() =>
        assert.deepEqual(got, [
          [{ why: 'poke' }, Subjects.plegRelist(node)],
          [{}, Subjects.plegRelist(node)],
        ]),
      );
      ac.abort();
      a.publishCore(Subjects.plegRelist(node), { after: 'abort' });
      await a.flush();
      await b.flush();
      assert.equal(got.length, 2, 'nothing after the abort');
    });

    withBuses('readStream: stored messages in order, invalid ones reported, then follows until aborted', async ({ a, b }, node) => {
      const subject = Subjects.events(node, 'u5');
      await a.publish(Ping, subject, ping(1));
      a.publishCore(subject, { nope: true });
      await a.flush();
      await a.publish(Ping, subject, ping(2));
      const seen: number[] = [];
      const invalid: string[] = [];
      await b.readStream(Ping, Streams.events, subject, (p) => seen.push(p.n), { onInvalid: (r) => invalid.push(r) });
      assert.deepEqual(seen, [1, 2]);
      assert.equal(invalid.length, 1);
      const ac = new AbortController();
      const followed: number[] = [];
      const reading = b.readStream(Ping, Streams.events, subject, (p) => followed.push(p.n), { follow: true, signal: ac.signal });
      await eventually(() => assert.deepEqual(followed, [1, 2]));
      await a.publish(Ping, subject, ping(3));
      await eventually(() => assert.deepEqual(followed, [1, 2, 3]));
      ac.abort();
      await reading;
    });

    withBuses('publishes started together are stored in the order they were started', async ({ a, b }, node) => {
      // createOrderedPublisher relies on it: it sends without waiting for the previous ack.
      const subject = Subjects.events(node, 'u6');
      const other = Subjects.events(node, 'u7');
      const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => a.publish(Ping, i % 2 === 0 ? subject : other, ping(i))));
      assert.deepEqual(
        acks.map((k) => k.seq),
        [...acks.map((k) => k.seq)].sort((x, y) => x - y),
        'stream sequences follow the call order',
      );
      const seen: number[] = [];
      await b.readStream(Ping, Streams.events, subject, (p) => seen.push(p.n));
      assert.deepEqual(
        seen,
        Array.from({ length: 100 }, (_, i) => 2 * i),
      );
    });

    withBuses('an ordered publisher stores what it is handed in order, a window at a time, and flush waits for every ack', async ({ a, b }, node) => {
      const subject = Subjects.events(node, 'u8');
      const failures: unknown[] = [];
      const p = createOrderedPublisher({ bus: a, schema: Ping, window: 8, onError: (e) => failures.push(e), onDrop: () => assert.fail('nothing is dropped') });
      for (let i = 0; i < 300; i++) p.send(subject, ping(i));
      p.send(subject, { type: 'test.Ping.v1', n: 'bad' } as unknown as Ping);
      p.send(subject, ping(300));
      assert.ok(p.pending > 0);
      await p.flush();
      assert.equal(p.pending, 0);
      assert.equal(failures.length, 1, 'the invalid message failed alone');
      assert.ok(isBusError(failures[0], 'SchemaInvalid'));
      const seen: number[] = [];
      await b.readStream(Ping, Streams.events, subject, (m) => seen.push(m.n));
      assert.deepEqual(
        seen,
        Array.from({ length: 301 }, (_, i) => i),
      );
    });

    withBuses('span records round-trip through SL_SPANS, one batch per trace', async ({ a, b }, node) => {
      const rec = (traceId: string, spanId: string): SpanRecord => ({
        type: 'kubelet.trace.Span.v1',
        traceId,
        spanId,
        name: 'x',
        kind: 0,
        service: 'contract',
        startUnixNano: '1',
        endUnixNano: '2',
        statusCode: 0,
        attributes: {},
        links: [],
      });
      const t1 = '1'.repeat(32);
      const t2 = '2'.repeat(32);
      const records = [rec(t1, 'a'.repeat(16)), rec(t2, 'b'.repeat(16)), rec(t1, 'c'.repeat(16))];
      await a.publishSpans(records);
      const one: string[] = [];
      await b.readSpans(Subjects.spans(node, t1), (r) => one.push(r.spanId));
      assert.deepEqual(one, ['a'.repeat(16), 'c'.repeat(16)]);
      const all: string[] = [];
      await b.readSpans(Subjects.spansAll(node), (r) => all.push(r.traceId));
      assert.deepEqual(all.sort(), [t1, t1, t2]);
    });

    withBuses('KV: create first-wins, update and delete are CAS, keys lists delete markers, list does not', async ({ a, b }, node) => {
      const kv: KvBucket<Ping> = await a.kv(Buckets.kill, Ping);
      const key = `${node}.3.uid-1`;
      const r1 = await kv.create(key, ping(1));
      await assert.rejects(kv.create(key, ping(2)), (e: unknown) => isBusError(e, 'Conflict'));
      const r2 = await kv.update(key, ping(3), r1);
      assert.ok(r2 > r1);
      await assert.rejects(kv.update(key, ping(4), r1), (e: unknown) => isBusError(e, 'Conflict'));
      await assert.rejects(kv.delete(key, r1), (e: unknown) => isBusError(e, 'Conflict'));
      const other = await b.kv(Buckets.kill, Ping);
      assert.deepEqual((await other.get(key))?.value, ping(3));
      assert.equal((await other.get(key))?.revision, r2);
      await kv.put(`${node}.4.uid-2`, ping(5));
      await kv.delete(key, r2);
      assert.equal(await kv.get(key), null);
      assert.deepEqual((await kv.keys(`${node}.>`)).sort(), [`${node}.3.uid-1`, `${node}.4.uid-2`], 'a deleted key keeps its marker');
      assert.deepEqual((await kv.keys(`${node}.4.*`)).sort(), [`${node}.4.uid-2`]);
      assert.deepEqual(
        (await other.list(`${node}.>`)).map((e) => [e.key, e.value?.n]),
        [[`${node}.4.uid-2`, 5]],
      );
      assert.deepEqual(await kv.keys('nothing.>'), []);
      const r3 = await kv.create(key, ping(6));
      assert.ok(r3 > r2, 'create over a delete marker');
      const raw = await a.typedKv(Buckets.kill, Ping);
      await raw.raw.put(`${node}.5.bad`, new TextEncoder().encode('{"garbage":true}'));
      await assert.rejects(kv.get(`${node}.5.bad`), (e: unknown) => isBusError(e, 'SchemaInvalid'));
      assert.deepEqual(
        (await kv.list(`${node}.5.*`)).map((e) => e.key),
        [],
        'list leaves an invalid value out',
      );
      await eventually(async () => assert.ok((await deadLetters(a, node, a.process)).some((d) => d.subject === `$KV.${Buckets.kill}.${node}.5.bad`)));
      await assert.rejects(kv.put(`${node}.6.x`, { n: 1 } as unknown as Ping), (e: unknown) => isBusError(e, 'SchemaInvalid'));
    });

    withBuses('KV: two schemas on one bucket each validate by their own (the first opened does not decide for the second)', async ({ a }, node) => {
      const Pong = z.object({ type: z.literal('test.Pong.v1'), s: z.string() });
      const pings = await a.kv(Buckets.node, Ping);
      const pongs = await a.kv(Buckets.node, Pong);
      await pings.put(`${node}`, ping(1));
      await pongs.put(`${node}._pong`, { type: 'test.Pong.v1', s: 'x' });
      assert.deepEqual((await pongs.get(`${node}._pong`))?.value, { type: 'test.Pong.v1', s: 'x' });
      assert.equal((await pings.get(`${node}`))?.value?.n, 1);
      await assert.rejects(pongs.get(`${node}`), (e: unknown) => isBusError(e, 'SchemaInvalid'));
      await assert.rejects(pings.put(`${node}._ping`, { type: 'test.Pong.v1', s: 'y' } as unknown as Ping), (e: unknown) => isBusError(e, 'SchemaInvalid'));
      assert.equal(await a.kv(Buckets.node, Ping), pings, 'one view per schema');
    });

    withBuses('KV watch: replays current values, follows changes and deletes, dead-letters invalid values', async ({ a, b }, node) => {
      const kv = await a.typedKv(Buckets.worker, Ping);
      await kv.put(`${node}.1.a`, ping(1));
      await kv.put(`${node}.1.b`, ping(2));
      await kv.put(`${node}.1.a`, ping(3));
      const seen: [string, number | null][] = [];
      const ac = new AbortController();
      let caughtUp = false;
      const watcher = await b.kv(Buckets.worker, Ping);
      const { done } = await watcher.watch(`${node}.>`, ac.signal, (e) => void seen.push([e.key, e.value?.n ?? null]), { onCaughtUp: () => (caughtUp = true) });
      await eventually(() => assert.ok(caughtUp));
      assert.deepEqual(
        [...seen].sort(([x], [y]) => x.localeCompare(y)),
        [
          [`${node}.1.a`, 3],
          [`${node}.1.b`, 2],
        ],
      );
      await kv.raw.put(`${node}.1.bad`, new TextEncoder().encode('not json'));
      await kv.delete(`${node}.1.b`);
      await kv.put(`${node}.1.c`, ping(4));
      await eventually(() =>
        assert.deepEqual(seen.slice(2), [
          [`${node}.1.b`, null],
          [`${node}.1.c`, 4],
        ]),
      );
      await eventually(async () => assert.equal((await deadLetters(a, node, b.process)).length, 1));
      ac.abort();
      await done;
      let emptyCaughtUp = false;
      const ac2 = new AbortController();
      await watcher.watch('nothing-here.>', ac2.signal, () => undefined, { onCaughtUp: () => (emptyCaughtUp = true) });
      assert.ok(emptyCaughtUp, 'an empty key range is caught up at once');
      ac2.abort();
    });

    withBuses('a bucket outside the topology is refused', async ({ a }) => {
      await assert.rejects(a.kv('sl_not_declared', Ping));
    });
  });
}
