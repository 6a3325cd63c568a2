/**
 * What an owned partition runs: its pod workers, the takeover resync from KV, and its work
 * consumer. Built by the partition manager's `start` callback.
 *
 *   acquire ─► resync (list sl_desired, sl_kill, sl_worker under <node>.<pp>.> → poke each uid)
 *           ─► consume pod-worker-<node>-<pp> (pokes → onPoke, PodWorkers.poke; acks when covered)
 *   lost    ─► consumer stopped, in-flight syncs aborted at once
 *   release ─► consumer stopped, in-flight syncs drained (bounded), leftovers nak'ed
 */
import { errorMessage } from '@splitlet/api';
import type { Clock, Log, NamedRevisions, PodStateStore, WorkConsumption, WorkSource } from '../ports.js';
import { PodWorkers } from '../pod-workers/pod-workers.js';
import type { SyncEventHook, SyncFunction } from '../pod-workers/pod-workers.js';
import type { SyncLimiter } from '../pod-workers/sync-limiter.js';
import type { PartitionGuard } from './partition-guard.js';
import type { PartitionHandle, PartitionStarter, PartitionStopMode } from './partition-manager.js';

/** Options of {@link createPartitionStarter}. */
export interface PartitionRunnerOptions {
  readonly instance: string;
  readonly store: PodStateStore;
  readonly work: WorkSource;
  readonly limiter: SyncLimiter;
  readonly clock: Clock;
  readonly logger: Log;
  /** The sync for a partition's pods (PodSyncer.forPartition). */
  readonly syncFor: (guard: PartitionGuard) => SyncFunction;
  /** Told of each poke from the work stream before the pod workers get it (PodSyncer.poked). */
  readonly onPoke?: (guard: PartitionGuard, uid: string, named: NamedRevisions) => void;
  readonly onSyncEvent?: SyncEventHook;
  /** How long a release or shutdown lets in-flight syncs finish. @default 30000 */
  readonly drainTimeoutMs?: number;
  /** @default 10000 */
  readonly workingIntervalMs?: number;
  /** Called with each started partition (tests, metrics, health). */
  readonly onStarted?: (partition: number, running: RunningPartition) => void;
  readonly onStopped?: (partition: number) => void;
}

/** A running partition. */
export interface RunningPartition extends PartitionHandle {
  readonly workers: PodWorkers;
  readonly consumption: WorkConsumption | undefined;
}

/** The partition manager's `start` callback: resync, then consume. */
export function createPartitionStarter(o: PartitionRunnerOptions): PartitionStarter {
  return async (guard: PartitionGuard): Promise<RunningPartition> => {
    const pp = guard.partition;
    const workers = new PodWorkers({
      partition: pp,
      instance: o.instance,
      sync: o.syncFor(guard),
      limiter: o.limiter,
      clock: o.clock,
      logger: o.logger,
      ...(o.onSyncEvent !== undefined ? { onSyncEvent: o.onSyncEvent } : {}),
      ...(o.workingIntervalMs !== undefined ? { workingIntervalMs: o.workingIntervalMs } : {}),
    });
    const ac = new AbortController();
    let consumption: WorkConsumption | undefined;
    let stopped: Promise<void> | undefined;

    const stop = (mode: PartitionStopMode): Promise<void> => {
      stopped ??= (async () => {
        ac.abort();
        const drain = mode !== 'lost';
        await workers.stop({ drain, timeoutMs: o.drainTimeoutMs ?? 30_000 });
        if (consumption) {
          try {
            await consumption.done;
          } catch (e) {
            o.logger.warn('partition consumer ended with an error', { partition: pp, err: errorMessage(e) });
          }
        }
        o.onStopped?.(pp);
        o.logger.info('partition stopped', { partition: pp, epoch: guard.epoch, mode, instance: o.instance });
      })();
      return stopped;
    };

    try {
      const uids = await o.store.listPartitionUids(pp);
      for (const uid of uids) workers.poke(uid, 'sync');
      o.logger.info('partition resynced from KV', { partition: pp, epoch: guard.epoch, pods: uids.length, instance: o.instance });
      consumption = await o.work.consume(pp, ac.signal, (uid, kind, delivery, named) => {
        o.onPoke?.(guard, uid, named);
        workers.poke(uid, kind, delivery);
      });
    } catch (e) {
      await stop('lost');
      throw e;
    }
    const running: RunningPartition = {
      workers,
      get consumption() {
        return consumption;
      },
      stop,
    };
    o.onStarted?.(pp, running);
    return running;
  };
}
