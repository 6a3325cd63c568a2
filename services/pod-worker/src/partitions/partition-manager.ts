/**
 * Partition ownership for pod-worker replicas: member heartbeats, lease acquisition, renewal,
 * loss detection and balancing to ⌈P / live members⌉ partitions per instance.
 *
 * Follows NATS.md §5.1 (nats-server 2.9): a lease is a key in `sl_leases` created with `create`
 * (its revision is the partition's epoch), renewed with CAS `update`, expired by the bucket TTL.
 * Expiry is silent on 2.9, so every balance round retries `create` on partitions nobody holds.
 *
 *   instance A   create(pp)=epoch ─ renew ─ renew ─ renew ─ ✗ conflict → stop pp at once
 *   instance B                                          (TTL expiry) ─ create(pp)=epoch' > epoch
 *
 * A renewal that keeps failing for longer than (TTL − renew period) counts as lost too, so this
 * instance stops acting before another instance could acquire the lease.
 */
import type { PartitionLease } from '@splitlet/api';
import { errorMessage, fnv1a32, hasErrorCode } from '@splitlet/api';
import type { Clock, LeaseStore, Log, MemberStore, TimerHandle } from '../ports.js';
import { LeaseGuard } from './partition-guard.js';
import type { PartitionGuard } from './partition-guard.js';

/** How a partition stops: `lost` aborts at once; `release` and `shutdown` drain first. */
export type PartitionStopMode = 'lost' | 'release' | 'shutdown';

/** A started partition (its consumer and pod workers). */
export interface PartitionHandle {
  stop(mode: PartitionStopMode): Promise<void>;
}

/** Starts a partition whose lease was just acquired. */
export type PartitionStarter = (guard: PartitionGuard) => Promise<PartitionHandle>;

/** Options of {@link PartitionManager}. */
export interface PartitionManagerOptions {
  readonly instance: string;
  readonly partitions: number;
  readonly leases: LeaseStore;
  readonly members: MemberStore;
  readonly clock: Clock;
  readonly logger: Log;
  readonly start: PartitionStarter;
  /** @default 3000 */
  readonly renewMs?: number;
  /** @default 3000 */
  readonly heartbeatMs?: number;
  /** Balance round period (acquire unowned, release surplus). @default 2000 */
  readonly balanceMs?: number;
  /** The lease bucket's TTL. @default 10000 */
  readonly leaseTtlMs?: number;
}

interface Owned {
  guard: LeaseGuard;
  revision: number;
  lease: PartitionLease;
  handle: PartitionHandle | undefined;
  releasing: boolean;
  renewing: Promise<void> | undefined;
}

/** Owns this instance's partition leases. One per process. */
export class PartitionManager {
  readonly #o: PartitionManagerOptions;
  readonly #owned = new Map<number, Owned>();
  /** Partitions whose stop is still running (not re-acquired until it finishes). */
  readonly #stopping = new Map<number, Promise<void>>();
  readonly #timers = new Set<TimerHandle>();
  #running = false;
  #shutdown: Promise<void> | undefined;
  #lastHeartbeatOk = 0;
  #liveMembers = 1;
  #balancing = false;

  constructor(options: PartitionManagerOptions) {
    this.#o = options;
  }

  get #renewMs(): number {
    return this.#o.renewMs ?? 3000;
  }
  get #ttlMs(): number {
    return this.#o.leaseTtlMs ?? 10_000;
  }

  /** Partitions held now, ascending. */
  owned(): number[] {
    return [...this.#owned.keys()].sort((a, b) => a - b);
  }

  /** Live members at the last balance round (including this one). */
  get liveMembers(): number {
    return this.#liveMembers;
  }

  /** Health by progress: the member heartbeat succeeded within three periods. */
  healthy(): { ok: boolean; reason?: string } {
    const hb = this.#o.heartbeatMs ?? 3000;
    const age = this.#o.clock.now() - this.#lastHeartbeatOk;
    if (!this.#running) return { ok: false, reason: 'partition manager not running' };
    if (age > 3 * hb) return { ok: false, reason: `member heartbeat last succeeded ${age} ms ago` };
    return { ok: true };
  }

  /** Starts heartbeats, renewals and balance rounds; resolves after the first balance round. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await this.#heartbeat();
    this.#every(this.#o.heartbeatMs ?? 3000, () => this.#heartbeat());
    this.#every(this.#renewMs, () => this.#renewAll());
    await this.#balance();
    this.#every(this.#o.balanceMs ?? 2000, () => this.#balance());
  }

  #every(ms: number, fn: () => Promise<void>): void {
    let busy = false;
    const arm = (): void => {
      const h = this.#o.clock.setTimeout(() => {
        this.#timers.delete(h);
        if (!this.#running) return;
        if (!busy) {
          busy = true;
          void fn()
            .catch((e: unknown) => this.#o.logger.error('partition manager tick failed', { err: errorMessage(e) }))
            .finally(() => {
              busy = false;
            });
        }
        arm();
      }, ms);
      this.#timers.add(h);
    };
    arm();
  }

  async #heartbeat(): Promise<void> {
    try {
      await this.#o.members.heartbeat(this.#o.instance);
      this.#lastHeartbeatOk = this.#o.clock.now();
    } catch (e) {
      this.#o.logger.warn('member heartbeat failed', { instance: this.#o.instance, err: errorMessage(e) });
    }
  }

  async #renewAll(): Promise<void> {
    await Promise.all([...this.#owned.entries()].map(([pp, o]) => this.#renew(pp, o)));
  }

  #renew(pp: number, o: Owned): Promise<void> {
    if (o.renewing) return o.renewing;
    const p = (async () => {
      const sentAt = this.#o.clock.now();
      try {
        o.revision = await this.#o.leases.update(pp, o.lease, o.revision);
        o.guard.renewed(sentAt);
      } catch (e) {
        if (hasErrorCode(e, 'Conflict') || hasErrorCode(e, 'NotFound')) {
          this.#lose(pp, `renew failed: ${errorMessage(e)}`);
          return;
        }
        this.#o.logger.warn('lease renew failed', { partition: pp, err: errorMessage(e) });
      }
      if (!o.guard.held() && this.#owned.get(pp) === o) this.#lose(pp, `no successful renew for ${o.guard.sinceRenewal()} ms`);
    })().finally(() => {
      o.renewing = undefined;
    });
    o.renewing = p;
    return p;
  }

  /** The lease is gone: stop the partition at once (abort in-flight syncs). */
  #lose(pp: number, why: string): void {
    const o = this.#owned.get(pp);
    if (!o) return;
    this.#owned.delete(pp);
    o.guard.revoke();
    this.#o.logger.warn('partition lease lost', { partition: pp, epoch: o.guard.epoch, reason: why, instance: this.#o.instance });
    const stopping = (o.handle ? o.handle.stop('lost') : Promise.resolve())
      .catch((e: unknown) => this.#o.logger.error('partition stop failed', { partition: pp, err: errorMessage(e) }))
      .finally(() => this.#stopping.delete(pp));
    this.#stopping.set(pp, stopping);
  }

  async #balance(): Promise<void> {
    if (this.#balancing || !this.#running || this.#shutdown) return;
    this.#balancing = true;
    try {
      let live: string[];
      try {
        live = await this.#o.members.live();
      } catch (e) {
        this.#o.logger.warn('listing members failed', { err: errorMessage(e) });
        return;
      }
      const members = new Set(live);
      members.add(this.#o.instance);
      this.#liveMembers = members.size;
      const P = this.#o.partitions;
      const target = Math.ceil(P / members.size);
      const active = [...this.#owned.values()].filter((o) => !o.releasing).length;
      if (active < target) await this.#acquireUpTo(target);
      else if (active > target) await this.#releaseSurplus(active - target);
    } finally {
      this.#balancing = false;
    }
  }

  async #acquireUpTo(target: number): Promise<void> {
    const P = this.#o.partitions;
    const offset = fnv1a32(this.#o.instance) % P;
    for (let i = 0; i < P; i++) {
      if (!this.#running || this.#shutdown) return;
      const active = [...this.#owned.values()].filter((o) => !o.releasing).length;
      if (active >= target) return;
      const pp = (offset + i) % P;
      if (this.#owned.has(pp) || this.#stopping.has(pp)) continue;
      try {
        if ((await this.#o.leases.get(pp)) !== null) continue;
        const lease: PartitionLease = {
          type: 'kubelet.podworker.PartitionLease.v1',
          holder: this.#o.instance,
          acquiredAt: new Date(this.#o.clock.now()).toISOString(),
        };
        const sentAt = this.#o.clock.now();
        const epoch = await this.#o.leases.create(pp, lease);
        await this.#startOwned(pp, epoch, lease, sentAt);
      } catch (e) {
        if (hasErrorCode(e, 'Conflict')) continue;
        this.#o.logger.warn('acquiring partition failed', { partition: pp, err: errorMessage(e) });
      }
    }
  }

  async #startOwned(pp: number, epoch: number, lease: PartitionLease, sentAt: number): Promise<void> {
    const safeHoldMs = this.#ttlMs - this.#renewMs;
    const guard = new LeaseGuard(pp, epoch, sentAt, safeHoldMs, () => this.#o.clock.now());
    const o: Owned = { guard, revision: epoch, lease, handle: undefined, releasing: false, renewing: undefined };
    this.#owned.set(pp, o);
    this.#o.logger.info('partition acquired', { partition: pp, epoch, instance: this.#o.instance });
    try {
      const handle = await this.#o.start(guard);
      if (this.#owned.get(pp) !== o) {
        // Lost while starting: stop what was started.
        await handle.stop('lost');
        return;
      }
      o.handle = handle;
    } catch (e) {
      this.#o.logger.error('starting partition failed, releasing it', { partition: pp, err: errorMessage(e) });
      if (this.#owned.get(pp) === o) {
        this.#owned.delete(pp);
        guard.revoke();
        await this.#deleteLease(pp, o);
      }
    }
  }

  /**
   * Releases `n` partitions at once, the highest first. One a round, a replica that joined a
   * replica holding all 32 waited 32 s for its half, and every partition handed over meanwhile
   * resynced its pods from scratch in the middle of whatever the node was doing.
   */
  async #releaseSurplus(n: number): Promise<void> {
    const candidates = [...this.#owned.entries()]
      .filter(([, o]) => !o.releasing && o.handle !== undefined)
      .map(([pp]) => pp)
      .sort((x, y) => y - x);
    await Promise.all(candidates.slice(0, n).map((pp) => this.#release(pp, 'release')));
  }

  async #release(pp: number, mode: 'release' | 'shutdown'): Promise<void> {
    const o = this.#owned.get(pp);
    if (!o || o.releasing) return;
    o.releasing = true;
    this.#o.logger.info('releasing partition', { partition: pp, epoch: o.guard.epoch, mode, instance: this.#o.instance });
    try {
      await o.handle?.stop(mode);
    } catch (e) {
      this.#o.logger.error('partition stop failed', { partition: pp, err: errorMessage(e) });
    }
    if (this.#owned.get(pp) !== o) return; // lost meanwhile
    this.#owned.delete(pp);
    o.guard.revoke();
    if (o.renewing) await o.renewing;
    await this.#deleteLease(pp, o);
  }

  async #deleteLease(pp: number, o: Owned): Promise<void> {
    try {
      await this.#o.leases.delete(pp, o.revision);
    } catch (e) {
      this.#o.logger.warn('deleting partition lease failed (it expires with the bucket TTL)', { partition: pp, err: errorMessage(e) });
    }
  }

  /**
   * Stops everything: no more rounds, every partition drained (bounded by the partitions' own stop)
   * and its lease deleted so other instances take over at once, then the member key removed.
   * Idempotent.
   */
  shutdown(): Promise<void> {
    if (this.#shutdown) return this.#shutdown;
    this.#shutdown = (async () => {
      await Promise.all([...this.#owned.keys()].map((pp) => this.#release(pp, 'shutdown')));
      await Promise.allSettled([...this.#stopping.values()]);
      this.#running = false;
      for (const h of this.#timers) this.#o.clock.clearTimeout(h);
      this.#timers.clear();
      try {
        await this.#o.members.remove(this.#o.instance);
      } catch (e) {
        this.#o.logger.warn('removing member key failed', { err: errorMessage(e) });
      }
    })();
    return this.#shutdown;
  }

  /**
   * Stops without releasing anything (a crash, or a test simulating one): timers stop, every
   * partition is stopped as lost, leases are left to expire.
   */
  async abandon(): Promise<void> {
    this.#running = false;
    for (const h of this.#timers) this.#o.clock.clearTimeout(h);
    this.#timers.clear();
    for (const pp of [...this.#owned.keys()]) this.#lose(pp, 'abandoned');
    await Promise.allSettled([...this.#stopping.values()]);
  }
}
