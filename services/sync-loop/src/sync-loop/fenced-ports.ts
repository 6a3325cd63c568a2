/**
 * The leader's write ports behind its {@link LeaderFence}: every write is checked against the fence
 * just before it goes out and carries the term's epoch (`leaderEpoch`), so a record or poke can be
 * traced to the term that wrote it. A refused write rejects with {@link FencedError}; callers treat it
 * as any failed write (the message is redelivered to whichever instance leads now).
 */
import type { Context } from '@opentelemetry/api';
import type { DesiredPod, KillRequest, SyncPodType } from '@splitlet/api';
import type { DesiredStore, KillStore, StoredKill, WorkPoker } from '../ports.js';
import type { LeaderFence } from './leader-fence.js';

/** The sync-loop ports a leader writes through. */
export interface LeaderWritePorts {
  readonly desired: DesiredStore;
  readonly kills: KillStore;
  /** Wraps a poker (the loop's and the probe watch's). */
  poker(inner: (epoch: number) => WorkPoker): WorkPoker;
}

/** Wraps `desired` and `kills` so that they write only while `fence` is open, stamped with its epoch. */
export function fencedPorts(fence: LeaderFence, desired: DesiredStore, kills: KillStore): LeaderWritePorts {
  return {
    desired: {
      list: () => desired.list(),
      async put(d: DesiredPod): Promise<void> {
        fence.check(`sl_desired put of pod ${d.pod.metadata.uid}`);
        await desired.put({ ...d, leaderEpoch: fence.epoch });
      },
      async delete(uid: string): Promise<void> {
        fence.check(`sl_desired delete of pod ${uid}`);
        await desired.delete(uid);
      },
    },
    kills: {
      async create(request: KillRequest): Promise<boolean> {
        fence.check(`sl_kill create for pod ${request.uid}`);
        return kills.create({ ...request, leaderEpoch: fence.epoch });
      },
      get: (uid: string): Promise<StoredKill | undefined> => kills.get(uid),
      async update(request: KillRequest, revision: number): Promise<boolean> {
        fence.check(`sl_kill update for pod ${request.uid}`);
        return kills.update({ ...request, leaderEpoch: fence.epoch }, revision);
      },
    },
    poker(inner: (epoch: number) => WorkPoker): WorkPoker {
      const p = inner(fence.epoch);
      return {
        async poke(uid: string, kind: SyncPodType, ctx?: Context): Promise<void> {
          fence.check(`work poke for pod ${uid}`);
          await p.poke(uid, kind, ctx);
        },
      };
    },
  };
}
