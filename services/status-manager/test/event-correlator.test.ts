/**
 * The event correlator (client-go tools/record/events_cache.go): identical events counted up by
 * patch, similar events aggregated from the 10th distinct message in 10 minutes, and the per
 * source+object token bucket (25, one more every 5 minutes).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventCorrelator, kubeTime, type CoreEvent, type CorrelateResult } from '../src/api/event-correlator.js';

let clock = Date.parse('2026-12-01T04:00:00Z');
const now = (): number => clock;

function ev(message: string, over: Partial<CoreEvent> = {}, object = 'web'): CoreEvent {
  const ts = kubeTime(clock);
  return {
    metadata: { name: `${object}.${clock.toString(16)}`, namespace: 'default' },
    involvedObject: { kind: 'Pod', namespace: 'default', name: object, uid: `uid-${object}`, apiVersion: 'v1', fieldPath: 'spec.containers{app}' },
    reason: 'BackOff',
    message,
    source: { component: 'kubelet', host: 'node-a' },
    firstTimestamp: ts,
    lastTimestamp: ts,
    count: 1,
    type: 'Warning',
    reportingComponent: 'kubelet',
    reportingInstance: 'node-a',
    ...over,
  };
}

/** Posts as the sink would: the server answers with the event plus a resourceVersion. */
function post(c: EventCorrelator, r: CorrelateResult, rv: number): CoreEvent {
  assert.equal(r.skip, false);
  if (r.skip) throw new Error('unreachable');
  const stored = { ...r.event, metadata: { ...r.event.metadata, resourceVersion: String(rv) } };
  c.updateState(stored);
  return stored;
}

describe('EventCorrelator', () => {
  it('creates the first event, then patches count and lastTimestamp of the same Event for repeats', () => {
    clock = Date.parse('2026-12-01T04:00:00Z');
    const c = new EventCorrelator({ now });
    const first = c.correlate(ev('Back-off restarting failed container app in pod web_default(uid-web)'));
    assert.equal(first.skip, false);
    assert.ok(!first.skip && first.patch === undefined && first.event.count === 1);
    const stored = post(c, first, 10);
    clock += 20_000;
    const second = c.correlate(ev('Back-off restarting failed container app in pod web_default(uid-web)'));
    assert.ok(!second.skip);
    assert.equal(second.event.metadata.name, stored.metadata.name, 'the same Event');
    assert.equal(second.event.metadata.resourceVersion, '10');
    assert.equal(second.event.count, 2);
    assert.equal(second.event.firstTimestamp, '2026-12-01T04:00:00Z');
    assert.deepEqual(second.patch, { count: 2, lastTimestamp: '2026-12-01T04:00:20Z', message: 'Back-off restarting failed container app in pod web_default(uid-web)' });
    post(c, second, 11);
    clock += 40_000;
    const third = c.correlate(ev('Back-off restarting failed container app in pod web_default(uid-web)'));
    assert.ok(!third.skip);
    assert.equal(third.event.count, 3);
    assert.deepEqual(third.patch, { count: 3, lastTimestamp: '2026-12-01T04:01:00Z', message: 'Back-off restarting failed container app in pod web_default(uid-web)' });
  });

  it('counts events separately when the object, field path, reason or message differ', () => {
    clock = Date.parse('2026-12-01T04:00:00Z');
    const c = new EventCorrelator({ now });
    post(c, c.correlate(ev('m')), 1);
    for (const other of [
      ev('m', {}, 'db'),
      ev('m', { reason: 'Failed' }),
      ev('m2'),
      ev('m', { involvedObject: { ...ev('m').involvedObject, fieldPath: 'spec.containers{side}' } }),
    ]) {
      const r = c.correlate(other);
      assert.ok(!r.skip && r.patch === undefined && r.event.count === 1, JSON.stringify(other));
      post(c, r, 2);
    }
  });

  it('aggregates similar events from the 10th distinct message in 10 minutes into one "(combined from similar events)" Event', () => {
    clock = Date.parse('2026-12-01T04:00:00Z');
    const c = new EventCorrelator({ now });
    for (let i = 1; i <= 9; i++) {
      clock += 1000;
      const r = c.correlate(ev(`message ${i}`));
      assert.ok(!r.skip && r.patch === undefined && r.event.message === `message ${i}`);
      post(c, r, i);
    }
    clock += 1000;
    const tenth = c.correlate(ev('message 10'));
    assert.ok(!tenth.skip);
    assert.equal(tenth.event.message, '(combined from similar events): message 10');
    assert.equal(tenth.event.count, 1);
    assert.equal(tenth.patch, undefined);
    assert.equal(tenth.event.metadata.name, `web.${(BigInt(clock) * 1_000_000n).toString(16)}`);
    assert.equal(tenth.event.reason, 'BackOff');
    assert.equal(tenth.event.type, 'Warning');
    const aggregate = post(c, tenth, 20);
    clock += 1000;
    const eleventh = c.correlate(ev('message 11'));
    assert.ok(!eleventh.skip);
    assert.equal(eleventh.event.metadata.name, aggregate.metadata.name);
    assert.deepEqual(eleventh.patch, { count: 2, lastTimestamp: kubeTime(clock), message: '(combined from similar events): message 11' });
    post(c, eleventh, 21);
    // Each further distinct message in the window counts the aggregate up.
    clock += 1000;
    const again = c.correlate(ev('message 12'));
    assert.ok(!again.skip);
    assert.equal(again.event.metadata.name, aggregate.metadata.name);
    assert.equal(again.event.count, 3);
    assert.equal(again.event.message, '(combined from similar events): message 12');
  });

  it('starts counting distinct messages again after 10 minutes without a similar event', () => {
    clock = Date.parse('2026-12-01T04:00:00Z');
    const c = new EventCorrelator({ now });
    for (let i = 1; i <= 9; i++) post(c, c.correlate(ev(`message ${i}`)), i);
    clock += 600_001;
    const r = c.correlate(ev('message 10'));
    assert.ok(!r.skip);
    assert.equal(r.event.message, 'message 10');
  });

  it('lets a source send 25 events about an object, then one more every 5 minutes', () => {
    clock = Date.parse('2026-12-01T04:00:00Z');
    const c = new EventCorrelator({ now });
    let passed = 0;
    for (let i = 0; i < 30; i++) {
      const r = c.correlate(ev('same'));
      if (!r.skip) {
        passed++;
        post(c, r, i + 1);
      }
    }
    assert.equal(passed, 25);
    // Another object (or another type) has its own bucket.
    assert.equal(c.correlate(ev('same', {}, 'db')).skip, false);
    assert.equal(c.correlate(ev('same', { type: 'Normal' })).skip, false);
    clock += 299_000;
    assert.equal(c.correlate(ev('same')).skip, true, 'no token before 5 minutes');
    clock += 1_000;
    const refilled = c.correlate(ev('same'));
    assert.equal(refilled.skip, false, 'one token after 5 minutes');
    assert.equal(c.correlate(ev('same')).skip, true);
    clock += 3_000_000;
    let again = 0;
    for (let i = 0; i < 30; i++) if (!c.correlate(ev('same')).skip) again++;
    assert.equal(again, 10, 'the bucket refilled 10 tokens in 50 minutes');
  });

  it('forgets the least recently used entries beyond its size', () => {
    clock = Date.parse('2026-12-01T04:00:00Z');
    const c = new EventCorrelator({ now, maxEntries: 2 });
    post(c, c.correlate(ev('m', {}, 'a')), 1);
    post(c, c.correlate(ev('m', {}, 'b')), 2);
    post(c, c.correlate(ev('m', {}, 'c')), 3);
    const r = c.correlate(ev('m', {}, 'a'));
    assert.ok(!r.skip && r.patch === undefined && r.event.count === 1, 'a was evicted: created anew');
  });
});
