import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RuntimeCacheEntry } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import { RuntimeStatusCache } from '../src/runtime-cache/runtime-status-cache.js';
import { recordingLog, settle } from './fakes.js';

const entry = (uid: string, timestamp: number): RuntimeCacheEntry => ({
  type: 'kubelet.pleg.RuntimeCacheEntry.v1',
  uid,
  timestamp,
  status: { uid, name: 'p', namespace: 'd', ips: ['10.0.0.9'], sandboxes: [], containers: [] },
});

describe('RuntimeStatusCache.getNewerThan', () => {
  it('answers at once when the entry or the relist mark is newer; an absent pod is an empty status', async () => {
    const c = new RuntimeStatusCache({ clock: new FakeClock(0), logger: recordingLog() });
    c.applyEntry('a', entry('a', 100));
    c.applyRelistMark(150);
    c.markCaughtUp();
    const ac = new AbortController();
    assert.equal((await c.getNewerThan('a', 99, ac.signal)).status.ips[0], '10.0.0.9');
    const viaMark = await c.getNewerThan('a', 120, ac.signal);
    assert.equal(viaMark.timestamp, 150);
    assert.equal(viaMark.stale, false);
    const absent = await c.getNewerThan('zz', 120, ac.signal);
    assert.deepEqual(absent.status.containers, []);
    assert.equal(absent.status.uid, 'zz');
  });

  it("hands out the entry's runtime episode with the status, fresh or after the bounded wait", async () => {
    const clock = new FakeClock(0);
    const c = new RuntimeStatusCache({ clock, logger: recordingLog(), maxWaitMs: 100 });
    const episode = { trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }, at: 90 };
    c.applyEntry('a', { ...entry('a', 100), episode });
    c.applyRelistMark(100);
    c.markCaughtUp();
    const ac = new AbortController();
    assert.deepEqual((await c.getNewerThan('a', 99, ac.signal)).episode, episode);
    const stale = c.getNewerThan('a', 500, ac.signal);
    await clock.advanceAsync(100);
    assert.deepEqual((await stale).episode, episode);
    assert.equal((await c.getNewerThan('zz', 0, ac.signal)).episode, undefined);
  });

  it('waits for a newer entry or mark', async () => {
    const c = new RuntimeStatusCache({ clock: new FakeClock(0), logger: recordingLog() });
    c.markCaughtUp();
    let got: number | undefined;
    const p = c.getNewerThan('a', 200, new AbortController().signal).then((r) => (got = r.timestamp));
    await settle();
    assert.equal(got, undefined);
    c.applyEntry('b', entry('b', 300));
    await settle();
    assert.equal(got, undefined, "another pod's entry does not count");
    c.applyEntry('a', entry('a', 201));
    await p;
    assert.equal(got, 201);
  });

  it('gives up after the bounded wait with what it has, and warns', async () => {
    const clock = new FakeClock(0);
    const log = recordingLog();
    const c = new RuntimeStatusCache({ clock, logger: log, maxWaitMs: 5000 });
    c.applyEntry('a', entry('a', 100));
    c.markCaughtUp();
    const p = c.getNewerThan('a', 500, new AbortController().signal);
    clock.advance(5000);
    const r = await p;
    assert.equal(r.stale, true);
    assert.equal(r.timestamp, 100);
    assert.ok(log.lines.some((l) => l.level === 'warn'));
    assert.equal(clock.pendingTimers, 0);
  });

  it('rejects when aborted and leaves no timer behind', async () => {
    const clock = new FakeClock(0);
    const c = new RuntimeStatusCache({ clock, logger: recordingLog() });
    const ac = new AbortController();
    const p = c.getNewerThan('a', 1, ac.signal);
    ac.abort(new Error('kill'));
    await assert.rejects(p, /kill/);
    assert.equal(clock.pendingTimers, 0);
  });
});
