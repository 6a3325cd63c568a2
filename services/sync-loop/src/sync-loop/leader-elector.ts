/**
 * One active sync-loop per node: a lease in `sl_syncloop_leader` (create to acquire, CAS to renew
 * every 3 s, bucket TTL 10 s). A standby retries; only the leader consumes.
 *
 *     standby ──create ok──▶ leading ──renew CAS every 3 s──▶ …
 *        ▲                     │  CAS conflict, or no renewal for TTL − period, or shutdown
 *        └──── retry 1 s ◀─────┘  (on shutdown the lease is deleted so a standby takes over at once)
 *
 * A lease that expired (nats-server 2.9: silently) is free for `create` again, so a crashed leader
 * is replaced within the TTL.
 */
import { errorMessage } from '@splitlet/api';
import { sleep, type Clock, type HealthStatus } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { LeaderFence } from './leader-fence.js';

/** The lease record operations (compare-and-swap on the revision). */
export interface LeaderLeaseStore {
  /** The lease's revision when acquired, undefined when another instance holds it. */
  acquire(): Promise<number | undefined>;
  /** The new revision, or undefined when the lease is no longer ours. */
  renew(revision: number): Promise<number | undefined>;
  /** Deletes the lease if it is still at `revision`. */
  release(revision: number): Promise<void>;
}

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  readonly store: LeaderLeaseStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** @default 3000 */
  readonly renewMs?: number;
  /** @default 1000 */
  readonly retryMs?: number;
  /** The bucket TTL. @default 10000 */
  readonly ttlMs?: number;
}

/** Runs a leader session whenever this instance holds the lease. */
export class LeaderElector {
  readonly #o: LeaderElectorOptions;
  #leading = false;
  #lastProgress: number;

  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.#lastProgress = options.clock.now();
  }

  /** True while this instance holds the lease. */
  get leading(): boolean {
    return this.#leading;
  }

  /** Healthy while the acquire/renew loop keeps running (standby retries count as progress). */
  healthy(): HealthStatus {
    const age = this.#o.clock.now() - this.#lastProgress;
    const limit = (this.#o.ttlMs ?? 10_000) + (this.#o.retryMs ?? 1000);
    return age <= limit ? { ok: true } : { ok: false, reason: `leader election made no progress for ${age} ms` };
  }

  /**
   * Until the signal aborts: acquires the lease and runs `lead` with a signal that aborts when the
   * lease is lost or on shutdown, and the term's {@link LeaderFence} every write must pass. `lead`
   * must return once its signal aborted. Resolves after the last session ended and the lease was
   * released.
   */
  async run(lead: (signal: AbortSignal, fence: LeaderFence) => Promise<void>): Promise<void> {
    const { store, logger, clock, signal } = this.#o;
    const retryMs = this.#o.retryMs ?? 1000;
    while (!signal.aborted) {
      let revision: number | undefined;
      const sentAt = clock.now();
      try {
        revision = await store.acquire();
      } catch (e) {
        logger.warn('could not try the leader lease', { err: errorMessage(e) });
      }
      this.#lastProgress = clock.now();
      if (revision === undefined) {
        await sleep(retryMs, signal, clock);
        continue;
      }
      logger.info('acquired the sync-loop leader lease; leading', { epoch: revision });
      this.#leading = true;
      const session = new AbortController();
      const fence = new LeaderFence({ epoch: revision, clock, ttlMs: this.#o.ttlMs ?? 10_000, signal: session.signal }, sentAt);
      const onShutdown = (): void => session.abort();
      signal.addEventListener('abort', onShutdown, { once: true });
      const renewing = this.#renew(revision, session, fence);
      try {
        await lead(session.signal, fence);
      } catch (e) {
        logger.error('leader session failed', { err: e });
      } finally {
        session.abort();
        signal.removeEventListener('abort', onShutdown);
      }
      const held = await renewing;
      this.#leading = false;
      if (held !== undefined) {
        try {
          await store.release(held);
        } catch (e) {
          logger.warn('could not release the leader lease (it expires by itself)', { err: errorMessage(e) });
        }
      }
      logger.info('stopped leading');
      if (!signal.aborted) await sleep(retryMs, signal, clock);
    }
  }

  /** Renews until the session ends; returns the revision still held, or undefined when lost. */
  async #renew(revision: number, session: AbortController, fence: LeaderFence): Promise<number | undefined> {
    const { store, logger, clock } = this.#o;
    const renewMs = this.#o.renewMs ?? 3000;
    const ttlMs = this.#o.ttlMs ?? 10_000;
    let rev = revision;
    let lastOk = clock.now();
    while (await sleep(renewMs, session.signal, clock)) {
      const sentAt = clock.now();
      try {
        const next = await store.renew(rev);
        if (next === undefined) {
          logger.error('lost the sync-loop leader lease to another instance; stepping down');
          session.abort();
          return undefined;
        }
        rev = next;
        fence.renewed(sentAt);
        lastOk = clock.now();
        this.#lastProgress = lastOk;
      } catch (e) {
        logger.warn('could not renew the leader lease', { err: errorMessage(e) });
        if (clock.now() - lastOk >= ttlMs - renewMs) {
          logger.error('could not renew the leader lease before it expires; stepping down');
          session.abort();
          return undefined;
        }
      }
    }
    return rev;
  }
}
