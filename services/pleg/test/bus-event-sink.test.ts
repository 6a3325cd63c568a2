/**
 * The PLEG's bus sink: one cache write's events of a pod in one message of SL_PLEG — a lone event
 * as a PodLifecycleEvent, several as a PodLifecycleEventList, split at its bound — in order.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { MAX_PLEG_EVENTS_PER_LIST, PlegMessage, plegEventsOf, type PodLifecycleEvent } from '@splitlet/api';
import { InMemoryBus } from '@splitlet/bus/testing';
import { createBusEventSink } from '../src/adapters/bus-event-sink.js';
import { EventsPartlyPublished } from '../src/ports.js';

const NODE = 'node-1';
const ev = (uid: string, data: string, event: PodLifecycleEvent['event'] = 'ContainerStarted'): PodLifecycleEvent => ({
  type: 'kubelet.pleg.PodLifecycleEvent.v1',
  uid,
  event,
  data,
  at: '2026-12-05T10:00:00.000Z',
  cacheRevision: 7,
});

describe('createBusEventSink', () => {
  let bus: InMemoryBus;
  beforeEach(() => {
    bus = new InMemoryBus({ node: NODE });
  });
  afterEach(() => bus.close());

  const stored = () => bus.published.filter((m) => !m.core && m.subject.startsWith(`sl.${NODE}.pleg.`)).map((m) => ({ subject: m.subject, msg: PlegMessage.parse(m.data) }));

  it('publishes a lone event as a PodLifecycleEvent and several as one list, in order, on the pod’s subject', async () => {
    const sink = createBusEventSink(bus, NODE);
    await sink.publish([ev('a', 'sandbox-a')]);
    await sink.publish([ev('b', 'sandbox-b'), ev('b', 'c1'), ev('b', 'c0', 'ContainerDied')]);
    assert.deepEqual(
      stored().map((m) => [m.subject, m.msg.type, plegEventsOf(m.msg).map((e) => `${e.event}/${e.data}`)]),
      [
        [`sl.${NODE}.pleg.a`, 'kubelet.pleg.PodLifecycleEvent.v1', ['ContainerStarted/sandbox-a']],
        [`sl.${NODE}.pleg.b`, 'kubelet.pleg.PodLifecycleEventList.v1', ['ContainerStarted/sandbox-b', 'ContainerStarted/c1', 'ContainerDied/c0']],
      ],
    );
    assert.deepEqual(plegEventsOf(stored()[1]!.msg)[1], ev('b', 'c1'));
  });

  it(`splits more than ${MAX_PLEG_EVENTS_PER_LIST} events into lists of at most that many`, async () => {
    const sink = createBusEventSink(bus, NODE);
    const many = Array.from({ length: MAX_PLEG_EVENTS_PER_LIST + 2 }, (_, i) => ev('p', `c${i}`));
    await sink.publish(many);
    const out = stored();
    assert.deepEqual(
      out.map((m) => plegEventsOf(m.msg).length),
      [MAX_PLEG_EVENTS_PER_LIST, 2],
    );
    assert.deepEqual(
      out.flatMap((m) => plegEventsOf(m.msg).map((e) => e.data)),
      many.map((e) => e.data),
    );
  });

  it('says how many events went out when a later list of the write fails', async () => {
    let calls = 0;
    const sink = createBusEventSink(
      {
        publish: (...args: Parameters<InMemoryBus['publish']>) => {
          if (++calls === 2) return Promise.reject(new Error('nats down'));
          return bus.publish(...args);
        },
      },
      NODE,
    );
    const many = Array.from({ length: MAX_PLEG_EVENTS_PER_LIST + 2 }, (_, i) => ev('p', `c${i}`));
    const err = await sink.publish(many).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof EventsPartlyPublished, String(err));
    assert.equal(err.published, MAX_PLEG_EVENTS_PER_LIST);
    assert.match(err.message, new RegExp(`^${MAX_PLEG_EVENTS_PER_LIST} of ${MAX_PLEG_EVENTS_PER_LIST + 2} PLEG events were published before the rest failed: nats down$`));
    assert.equal(plegEventsOf(stored()[0]!.msg).length, MAX_PLEG_EVENTS_PER_LIST);
    calls = 0;
    await assert.rejects(
      sink.publish([ev('q', 'c0')]).then(() => sink.publish([ev('q', 'c1')])),
      (e: unknown) => !(e instanceof EventsPartlyPublished),
    );
  });

  it('rejects an invalid event, publishing nothing of its list', async () => {
    const sink = createBusEventSink(bus, NODE);
    await assert.rejects(sink.publish([ev('p', 'c0'), { ...ev('p', 'c1'), at: 7 } as unknown as PodLifecycleEvent]));
    assert.deepEqual(stored(), []);
  });
});
