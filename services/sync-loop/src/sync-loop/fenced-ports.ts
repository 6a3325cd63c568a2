/**
 * The leader's write ports behind its {@link LeaderFence}: every write is checked against the fence
 * just before it goes out and carries the term's epoch (`leaderEpoch`) and the admission time
 * (`fencedAt`), so a record or poke can be traced to the term that wrote it and to when. A refused
 * write rejects with {@link FencedError}; callers treat it as any failed write (the message is
 * redelivered to whichever instance leads now).
 */
import type { DesiredPod, KillRequest } from '@splitlet/api';
import type { AppliedUpdatesStore, DesiredStore, KillStore, StoredKill, WorkPoker } from '../ports.js';
import type { LeaderFence, LeaderStamp } from './leader-fence.js';

/** The sync-loop ports a leader writes through. */
export interface LeaderWritePorts {
  readonly desired: DesiredStore;
  readonly kills: KillStore;
  /** `store` writing only while the fence is open. */
  applied(store: AppliedUpdatesStore): AppliedUpdatesStore;
  /** A poker (the loop's and the probe watch's) built on `admit`, which it calls as it builds each poke. */
  poker(inner: (admit: (what: string) => LeaderStamp) => WorkPoker): WorkPoker;
}

/** Wraps `desired` and `kills` (and, through `applied()`, a store of applied updates) so that they write only while `fence` is open; records are stamped with its epoch. */
export function fencedPorts(fence: LeaderFence, desired: DesiredStore, kills: KillStore): LeaderWritePorts {
  return {
    desired: {
      list: () => desired.list(),
      async put(d: DesiredPod): Promise<void> {
        await desired.put({ ...d, ...fence.admit(`sl_desired put of pod ${d.pod.metadata.uid}`) });
      },
      async delete(uid: string): Promise<void> {
        fence.check(`sl_desired delete of pod ${uid}`);
        await desired.delete(uid);
      },
    },
    kills: {
      async create(request: KillRequest): Promise<boolean> {
        return kills.create({ ...request, ...fence.admit(`sl_kill create for pod ${request.uid}`) });
      },
      get: (uid: string): Promise<StoredKill | undefined> => kills.get(uid),
      async update(request: KillRequest, revision: number): Promise<boolean> {
        return kills.update({ ...request, ...fence.admit(`sl_kill update for pod ${request.uid}`) }, revision);
      },
    },
    applied(store: AppliedUpdatesStore): AppliedUpdatesStore {
      return {
        load: () => store.load(),
        async save(last): Promise<void> {
          fence.check('sl_node put of the applied config updates');
          await store.save(last);
        },
      };
    },
    poker(inner: (admit: (what: string) => LeaderStamp) => WorkPoker): WorkPoker {
      return inner((what) => fence.admit(what));
    },
  };
}
