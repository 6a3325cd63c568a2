/**
 * In-memory views of buckets sync-loop reads but does not own, kept current by KV watches:
 * `sl_worker` (pod workers' state), `sl_runtime` (the pleg cache), `sl_kill` (pending kills).
 */
import { Buckets, Keys, KillRequest, RuntimeCacheEntry, WorkerRecord } from '@splitlet/api';
import { RelistMark } from '@splitlet/api';
import { z } from 'zod';
import type { Bus, KvBucket } from '@splitlet/bus';
import type { ClusterViews, KvView } from '../ports.js';
import type { KillRevisions } from './kill-revisions.js';

/** A map kept current by a watch. */
class WatchedView<T> implements KvView<T> {
  readonly map = new Map<string, T>();
  get(uid: string): T | undefined {
    return this.map.get(uid);
  }
  values(): Iterable<T> {
    return this.map.values();
  }
  get size(): number {
    return this.map.size;
  }
}

/** The UID of a key `<node>.<uid>` or `<node>.<partition>.<uid>`. */
function uidOfKey(key: string): string {
  return key.slice(key.lastIndexOf('.') + 1);
}

async function watchInto<V, T>(
  kv: KvBucket<V>,
  node: string,
  view: WatchedView<T>,
  pick: (v: V) => T | undefined,
  signal: AbortSignal,
  onEntry?: (uid: string, revision: number, deleted: boolean) => void,
): Promise<{ caughtUp: Promise<void>; done: Promise<void> }> {
  let caught!: () => void;
  const caughtUp = new Promise<void>((resolve) => (caught = resolve));
  const { done } = await kv.watch(
    Keys.nodePrefix(node),
    signal,
    (e) => {
      const uid = uidOfKey(e.key);
      const v = e.value === null ? undefined : pick(e.value);
      if (v === undefined) view.map.delete(uid);
      else view.map.set(uid, v);
      onEntry?.(uid, e.revision, e.value === null);
    },
    { onCaughtUp: () => caught() },
  );
  return { caughtUp, done };
}

const RuntimeKvValue = z.union([RuntimeCacheEntry, RelistMark]);

/** The started views; `ready` resolves once each has replayed the bucket's current values. */
export interface StartedViews extends ClusterViews {
  readonly ready: Promise<void>;
  /** Resolves once every watch stopped (after the signal aborted). */
  readonly done: Promise<void>;
}

/** Starts the three watches for `node` until `signal` aborts; what the `sl_kill` watch sees is also told to `killRevisions`. */
export async function startClusterViews(bus: Pick<Bus, 'kv'>, node: string, signal: AbortSignal, killRevisions?: KillRevisions): Promise<StartedViews> {
  const workers = new WatchedView<WorkerRecord>();
  const runtime = new WatchedView<RuntimeCacheEntry>();
  const kills = new WatchedView<KillRequest>();
  const w = await watchInto(await bus.kv(Buckets.worker, WorkerRecord), node, workers, (v) => v, signal);
  const r = await watchInto(await bus.kv(Buckets.runtime, RuntimeKvValue), node, runtime, (v) => (v.type === 'kubelet.pleg.RuntimeCacheEntry.v1' ? v : undefined), signal);
  const k = await watchInto(
    await bus.kv(Buckets.kill, KillRequest),
    node,
    kills,
    (v) => v,
    signal,
    killRevisions && ((uid, revision, deleted) => killRevisions.watched(uid, revision, deleted)),
  );
  return {
    workers,
    runtime,
    kills,
    ready: Promise.all([w.caughtUp, r.caughtUp, k.caughtUp]).then(() => undefined),
    done: Promise.all([w.done, r.done, k.done]).then(() => undefined),
  };
}
