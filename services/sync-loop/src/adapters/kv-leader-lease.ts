/**
 * The sync-loop leader lease in `sl_syncloop_leader`, key `<node>` (bucket TTL 10 s).
 */
import { Buckets, Keys, PartitionLease } from '@splitlet/api';
import { isBusError, type Bus } from '@splitlet/bus';
import type { LeaderLeaseStore } from '../sync-loop/leader-elector.js';

/** A {@link LeaderLeaseStore} for `node`, held as `holder` (this instance's id). */
export async function createKvLeaderLease(bus: Pick<Bus, 'kv'>, node: string, holder: string): Promise<LeaderLeaseStore> {
  const kv = await bus.kv(Buckets.syncLoopLeader, PartitionLease);
  const key = Keys.node(node);
  const value = (): PartitionLease => ({ type: 'kubelet.podworker.PartitionLease.v1', holder, acquiredAt: new Date().toISOString() });
  return {
    async acquire(): Promise<number | undefined> {
      try {
        return await kv.create(key, value());
      } catch (e) {
        if (isBusError(e, 'Conflict')) return undefined;
        throw e;
      }
    },
    async renew(revision: number): Promise<number | undefined> {
      try {
        return await kv.update(key, value(), revision);
      } catch (e) {
        if (isBusError(e, 'Conflict')) return undefined;
        throw e;
      }
    },
    async release(revision: number): Promise<void> {
      try {
        await kv.delete(key, revision);
      } catch (e) {
        if (!isBusError(e, 'Conflict')) throw e;
      }
    },
  };
}
