/**
 * createOrderedPublisher's bookkeeping against a bus whose acks the test releases by hand: the
 * window, the order of sends, drops beyond maxPending, flush, failures and the trace context. The
 * Bus contract (bus-contract.ts) runs it against a real nats-server.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { context, createContextKey } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { createOrderedPublisher } from '../src/index.ts';
import type { Bus, PublishAck, PublishOptions } from '../src/index.ts';

const Msg = z.object({ n: z.number() });
type Msg = z.infer<typeof Msg>;
const KEY = createContextKey('caller');

before(() => {
  const cm = new AsyncLocalStorageContextManager();
  cm.enable();
  context.setGlobalContextManager(cm);
});

interface Sent {
  readonly n: number;
  readonly caller: unknown;
  ack(): void;
  fail(e: Error): void;
}

/** A bus that records each publish and settles it when the test says so. */
function handBus(): { bus: Pick<Bus, 'publish'>; sent: Sent[]; inFlight: () => number } {
  const sent: Sent[] = [];
  let open = 0;
  const bus: Pick<Bus, 'publish'> = {
    publish<S extends z.ZodType>(_schema: S, _subject: string, msg: z.input<S>, opts?: PublishOptions): Promise<PublishAck> {
      open++;
      return new Promise<PublishAck>((resolve, reject) => {
        const done = (): void => void open--;
        sent.push({
          n: (msg as Msg).n,
          caller: (opts?.ctx ?? context.active()).getValue(KEY),
          ack: () => (done(), resolve({ stream: 'S', seq: sent.length, duplicate: false })),
          fail: (e) => (done(), reject(e)),
        });
      });
    },
  };
  return { bus, sent, inFlight: () => open };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Handlers that record what should not happen (a throw inside the publisher's error path would be swallowed). */
function expectNone(): { onError: (e: unknown) => void; onDrop: (d: number) => void; readonly unexpected: string[] } {
  const unexpected: string[] = [];
  return {
    onError: (e) => void unexpected.push(`error: ${String(e)}`),
    onDrop: (d) => void unexpected.push(`drop ${d}`),
    unexpected,
  };
}

test('sends in call order with at most `window` awaiting their ack; the rest go out as acks come back', async () => {
  const none = expectNone();
  const { bus, sent, inFlight } = handBus();
  const p = createOrderedPublisher({ bus, schema: Msg, window: 3, ...none });
  for (let n = 0; n < 7; n++) p.send('s', { n });
  assert.deepEqual(
    sent.map((s) => s.n),
    [0, 1, 2],
  );
  assert.equal(p.pending, 7);
  sent[1]!.ack();
  await tick();
  assert.deepEqual(
    sent.map((s) => s.n),
    [0, 1, 2, 3],
    'one ack lets one more out',
  );
  assert.equal(inFlight(), 3);
  let flushed = false;
  void p.flush().then(() => (flushed = true));
  for (const i of [0, 2, 3, 4, 5, 6]) {
    assert.equal(flushed, false);
    sent[i]!.ack();
    await tick();
  }
  assert.deepEqual(
    sent.map((s) => s.n),
    [0, 1, 2, 3, 4, 5, 6],
  );
  await tick();
  assert.equal(p.pending, 0);
  assert.ok(flushed, 'flush resolved once every ack was in');
  await p.flush();
  assert.deepEqual(none.unexpected, []);
});

test('a failed publish is reported and the queue goes on, also when the error handler throws', async () => {
  const none = expectNone();
  const { bus, sent } = handBus();
  const failed: number[] = [];
  const p = createOrderedPublisher({
    bus,
    schema: Msg,
    window: 1,
    onError: (_e, _subject, msg) => {
      failed.push(msg.n);
      throw new Error('the handler broke');
    },
    onDrop: none.onDrop,
  });
  p.send('s', { n: 1 });
  p.send('s', { n: 2 });
  sent[0]!.fail(new Error('no ack'));
  await tick();
  assert.deepEqual(failed, [1]);
  assert.equal(sent.length, 2);
  sent[1]!.ack();
  await p.flush();
  assert.deepEqual(none.unexpected, []);
});

test('a bus that throws instead of rejecting fails only that message', async () => {
  const none = expectNone();
  let calls = 0;
  const failed: number[] = [];
  const bus: Pick<Bus, 'publish'> = {
    publish: ((_s: unknown, _subject: string, msg: Msg) => {
      calls++;
      if (msg.n === 1) throw new Error('closed');
      return Promise.resolve({ stream: 'S', seq: calls, duplicate: false });
    }) as Bus['publish'],
  };
  const p = createOrderedPublisher({ bus, schema: Msg, onError: (_e, _s, m) => failed.push(m.n), onDrop: none.onDrop });
  p.send('s', { n: 1 });
  p.send('s', { n: 2 });
  await p.flush();
  assert.deepEqual(failed, [1]);
  assert.equal(calls, 2);
  assert.deepEqual(none.unexpected, []);
});

test('beyond maxPending a message is dropped and counted, and sending resumes once there is room', async () => {
  const none = expectNone();
  const { bus, sent } = handBus();
  const drops: [number, number][] = [];
  const p = createOrderedPublisher({ bus, schema: Msg, window: 1, maxPending: 2, onError: none.onError, onDrop: (d, _s, m) => drops.push([d, m.n]) });
  for (let n = 0; n < 4; n++) p.send('s', { n });
  assert.deepEqual(drops, [
    [1, 2],
    [2, 3],
  ]);
  sent[0]!.ack();
  await tick();
  p.send('s', { n: 4 });
  sent[1]!.ack();
  await tick();
  sent[2]!.ack();
  await p.flush();
  assert.deepEqual(
    sent.map((s) => s.n),
    [0, 1, 4],
  );
  assert.deepEqual(none.unexpected, []);
});

test('a message that waits its turn is published in the trace context of its send', async () => {
  const none = expectNone();
  const { bus, sent } = handBus();
  const p = createOrderedPublisher({ bus, schema: Msg, window: 1, ...none });
  context.with(context.active().setValue(KEY, 'first'), () => p.send('s', { n: 1 }));
  context.with(context.active().setValue(KEY, 'second'), () => p.send('s', { n: 2 }));
  sent[0]!.ack();
  await tick();
  sent[1]!.ack();
  await p.flush();
  assert.deepEqual(
    sent.map((s) => s.caller),
    ['first', 'second'],
  );
  assert.deepEqual(none.unexpected, []);
});

test('a window below 1 is refused', () => {
  assert.throws(() => createOrderedPublisher({ bus: handBus().bus, schema: Msg, window: 0, ...expectNone() }), /window must be ≥ 1, got 0/);
});
