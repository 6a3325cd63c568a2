/**
 * The event recorder over the bus: a pod's events of one operation go out together, a lone one as a
 * plain event, in the order recorded; nothing is held longer than the linger.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { KubeEventMessage, MAX_EVENTS_PER_LIST, kubeEventsOf } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { InMemoryBus } from '@splitlet/bus/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing } from '@splitlet/telemetry/testing';
import { createEventPublisher, type EventPublisher } from '../src/adapters/event-publisher.js';
import type { PodEvent } from '../src/ports.js';

const NODE = 'node-1';
const pod = (uid: string) => ({ name: `p-${uid}`, namespace: 'ns', uid });
const ev = (uid: string, reason: string, fieldPath?: string): PodEvent => ({
  pod: pod(uid),
  eventType: 'Normal',
  reason,
  message: `${reason} of ${uid}`,
  ...(fieldPath !== undefined ? { fieldPath } : {}),
});

describe('createEventPublisher', () => {
  let bus: InMemoryBus;
  let clock: FakeClock;
  let warnings: string[];
  let events: EventPublisher;
  beforeEach(() => {
    bus = new InMemoryBus({ node: NODE });
    clock = new FakeClock(Date.parse('2026-12-05T10:00:00Z'));
    warnings = [];
    const logger = createLogger({ service: 'test', level: 'warn', stream: { write: (l: string) => void warnings.push(l) } });
    events = createEventPublisher({ bus, node: NODE, clock, logger, lingerMs: 250 });
  });
  afterEach(() => bus.close());

  /** What the bus stored on SL_EVENTS, message by message, each validated. */
  const stored = () => bus.published.filter((m) => !m.core && m.subject.startsWith(`sl.${NODE}.events.`)).map((m) => ({ subject: m.subject, msg: KubeEventMessage.parse(m.data) }));

  it("holds a pod's events while its operation runs; flushPod publishes them, flush everything held", async () => {
    events.record(ev('a', 'Killing'));
    events.record(ev('a', 'Killing'));
    events.record(ev('b', 'Pulled'));
    await Promise.resolve();
    assert.equal(stored().length, 0, 'held while the operations run');
    events.flushPod('a');
    events.flushPod('missing'); // nothing held: nothing happens
    await events.flush().then(() => undefined, assert.fail);
    assert.deepEqual(
      stored().map((m) => [
        m.subject,
        kubeEventsOf(m.msg)
          .map((e) => e.reason)
          .join(','),
      ]),
      [
        [`sl.${NODE}.events.a`, 'Killing,Killing'],
        [`sl.${NODE}.events.b`, 'Pulled'],
      ],
    );
    assert.deepEqual(warnings, []);
  });

  it('publishes one message per pod: a list for several events, a plain event for one', async () => {
    events.record(ev('a', 'Pulled', 'spec.containers{c}'));
    events.record(ev('a', 'Created', 'spec.containers{c}'));
    events.record(ev('b', 'Pulled'));
    events.record(ev('a', 'Started', 'spec.containers{c}'));
    events.flushPod('a');
    events.flushPod('b');
    await events.flush();
    const out = stored();
    assert.deepEqual(
      out.map((m) => [
        m.subject,
        m.msg.type,
        kubeEventsOf(m.msg)
          .map((e) => e.reason)
          .join(','),
      ]),
      [
        [`sl.${NODE}.events.a`, 'kubelet.events.EventList.v1', 'Pulled,Created,Started'],
        [`sl.${NODE}.events.b`, 'kubelet.events.Event.v1', 'Pulled'],
      ],
    );
    const a = kubeEventsOf(out[0]!.msg);
    assert.deepEqual(a[0], {
      type: 'kubelet.events.Event.v1',
      eventType: 'Normal',
      reason: 'Pulled',
      message: 'Pulled of a',
      involvedObject: { kind: 'Pod', name: 'p-a', namespace: 'ns', uid: 'a', fieldPath: 'spec.containers{c}' },
      source: { component: 'kubelet', host: NODE },
      timestamp: '2026-12-05T10:00:00.000Z',
    });
  });

  it('keeps each event’s own time and publishes what the linger held without an operation end', async () => {
    events.record(ev('a', 'Pulling'));
    clock.advance(100);
    events.record(ev('a', 'Pulled'));
    assert.equal(stored().length, 0);
    clock.advance(149);
    assert.equal(stored().length, 0, 'not before the linger');
    clock.advance(1);
    await events.flush();
    const out = stored();
    assert.equal(out.length, 1, 'the linger published the two');
    assert.deepEqual(
      kubeEventsOf(out[0]!.msg).map((e) => [e.reason, e.timestamp]),
      [
        ['Pulling', '2026-12-05T10:00:00.000Z'],
        ['Pulled', '2026-12-05T10:00:00.100Z'],
      ],
    );
    // After the flush, a new event is held afresh.
    events.record(ev('a', 'Created'));
    events.flushPod('a');
    await events.flush();
    assert.equal(stored().length, 2);
  });

  it(`splits a pod's events at ${MAX_EVENTS_PER_LIST} per list`, async () => {
    for (let i = 0; i < MAX_EVENTS_PER_LIST + 3; i++) events.record(ev('a', `R${i}`));
    events.flushPod('a');
    await events.flush();
    const out = stored();
    assert.deepEqual(
      out.map((m) => kubeEventsOf(m.msg).length),
      [MAX_EVENTS_PER_LIST, 3],
    );
    assert.deepEqual(
      out.flatMap((m) => kubeEventsOf(m.msg).map((e) => e.reason)),
      Array.from({ length: MAX_EVENTS_PER_LIST + 3 }, (_, i) => `R${i}`),
    );
  });

  it('drops beyond maxPending with a warning, and records again once there is room', async () => {
    const small = createEventPublisher({
      bus,
      node: NODE,
      clock,
      logger: createLogger({ service: 'test', level: 'warn', stream: { write: (l: string) => void warnings.push(l) } }),
      maxPending: 2,
    });
    small.record(ev('a', 'One'));
    small.record(ev('b', 'Two'));
    small.record(ev('c', 'Three'));
    assert.equal(warnings.filter((w) => w.includes('dropping events')).length, 1);
    await small.flush();
    small.record(ev('c', 'Four'));
    await small.flush();
    assert.deepEqual(
      stored().flatMap((m) => kubeEventsOf(m.msg).map((e) => e.reason)),
      ['One', 'Two', 'Four'],
    );
  });

  it('gives the message the trace context of its first event, also when the linger publishes it', async () => {
    const tracing = createTestTracing({ register: true }); // the active-context manager
    try {
      const seen: (string | undefined)[] = [];
      const spy: Pick<Bus, 'publish'> = {
        publish: (schema, subject, msg, opts) => {
          seen.push(trace.getSpanContext(opts?.ctx ?? context.active())?.traceId);
          return bus.publish(schema, subject, msg, opts);
        },
      };
      const traced = createEventPublisher({ bus: spy, node: NODE, clock, logger: createLogger({ service: 'test', level: 'error' }), lingerMs: 250 });
      const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
      context.with(trace.setSpan(ROOT_CONTEXT, span), () => traced.record(ev('a', 'Pulling')));
      traced.record(ev('a', 'Pulled'));
      clock.advance(250);
      await traced.flush();
      assert.deepEqual(seen, ['0af7651916cd43dd8448eb211c80319c']);
    } finally {
      await tracing.shutdown();
    }
  });
});
