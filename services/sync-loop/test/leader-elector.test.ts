import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { LeaderElector, type LeaderLeaseStore } from '../src/sync-loop/leader-elector.js';

/** A lease shared by several electors, with revisions and CAS. */
class SharedLease {
  holder: string | undefined;
  revision = 0;
  failRenew = false;
  store(id: string): LeaderLeaseStore {
    return {
      acquire: async () => {
        if (this.holder !== undefined) return undefined;
        this.holder = id;
        return ++this.revision;
      },
      renew: async (rev) => {
        if (this.failRenew) throw new Error('timeout');
        if (this.holder !== id || this.revision !== rev) return undefined;
        return ++this.revision;
      },
      release: async (rev) => {
        if (this.holder === id && this.revision === rev) this.holder = undefined;
      },
    };
  }
  /** The bucket TTL expired the key. */
  expire(): void {
    this.holder = undefined;
  }
}

const logger = createLogger({ service: 't', stream: { write: () => true } });

function elector(lease: SharedLease, id: string, clock: FakeClock, signal: AbortSignal): LeaderElector {
  return new LeaderElector({ store: lease.store(id), clock, logger, signal, renewMs: 3000, retryMs: 1000, ttlMs: 10_000 });
}

describe('LeaderElector', () => {
  it('one leads, the standby takes over when the leader shuts down (lease released)', async () => {
    const clock = new FakeClock(0);
    const lease = new SharedLease();
    const a = new AbortController();
    const b = new AbortController();
    const sessions: string[] = [];
    const session = (id: string) => async (s: AbortSignal) => {
      sessions.push(`${id}:start`);
      await new Promise<void>((r) => s.addEventListener('abort', () => r(), { once: true }));
      sessions.push(`${id}:end`);
    };
    const ea = elector(lease, 'a', clock, a.signal);
    const eb = elector(lease, 'b', clock, b.signal);
    const ra = ea.run(session('a'));
    await clock.advanceAsync(0);
    const rb = eb.run(session('b'));
    await clock.advanceAsync(5000);
    assert.equal(ea.leading, true);
    assert.equal(eb.leading, false);
    assert.ok(lease.revision >= 2, 'renewed');
    a.abort();
    await ra;
    assert.equal(lease.holder, undefined);
    await clock.advanceAsync(1000);
    assert.equal(eb.leading, true);
    assert.deepEqual(sessions, ['a:start', 'a:end', 'b:start']);
    b.abort();
    await rb;
  });

  it('steps down when the lease was taken over (CAS conflict)', async () => {
    const clock = new FakeClock(0);
    const lease = new SharedLease();
    const ac = new AbortController();
    let ended = false;
    const e = elector(lease, 'a', clock, ac.signal);
    const run = e.run(async (s) => {
      await new Promise<void>((r) => s.addEventListener('abort', () => r(), { once: true }));
      ended = true;
    });
    await clock.advanceAsync(0);
    assert.equal(e.leading, true);
    // Paused past the TTL: the key expired and someone else took it.
    lease.expire();
    lease.holder = 'b';
    lease.revision++;
    await clock.advanceAsync(3000);
    assert.equal(ended, true);
    assert.equal(e.leading, false);
    ac.abort();
    await run;
    assert.equal(lease.holder, 'b', 'never released a lease it does not hold');
  });

  it('steps down when it cannot renew before the TTL', async () => {
    const clock = new FakeClock(0);
    const lease = new SharedLease();
    const ac = new AbortController();
    let ended = false;
    const e = elector(lease, 'a', clock, ac.signal);
    const run = e.run(async (s) => {
      await new Promise<void>((r) => s.addEventListener('abort', () => r(), { once: true }));
      ended = true;
    });
    await clock.advanceAsync(0);
    lease.failRenew = true;
    await clock.advanceAsync(6000);
    assert.equal(ended, false);
    await clock.advanceAsync(3000);
    assert.equal(ended, true);
    ac.abort();
    await run;
  });
});
