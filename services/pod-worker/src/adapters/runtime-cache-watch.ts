/**
 * Feeds the in-memory runtime cache from one watch on `sl_runtime` for the node (pod entries and
 * the relist mark). pleg is the bucket's only writer. The typed watch validates every value (an
 * invalid one is dead-lettered), reports deletes as null and says when the replay is caught up.
 */
import { z } from 'zod';
import { Buckets, Keys, RelistMark, RuntimeCacheEntry, nodeToken } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { RuntimeStatusCache } from '../runtime-cache/runtime-status-cache.js';

/** A value in `sl_runtime`: a pod's cache entry or the node's relist mark. */
export const RuntimeBucketValue = z.union([RuntimeCacheEntry, RelistMark]);

/** Starts the watch; resolves once it is established. `done` settles when `signal` aborts. */
export async function watchRuntimeCache(bus: Pick<Bus, 'kv'>, node: string, cache: RuntimeStatusCache, signal: AbortSignal): Promise<{ done: Promise<void> }> {
  const kv = await bus.kv(Buckets.runtime, RuntimeBucketValue);
  const prefix = `${nodeToken(node)}.`;
  const relistKey = Keys.relistMark(node);
  return kv.watch(
    Keys.nodePrefix(node),
    signal,
    (e) => {
      if (e.key !== relistKey && !e.key.startsWith(prefix)) return;
      if (e.value === null) {
        if (e.key !== relistKey) cache.applyEntry(e.key.slice(prefix.length), null);
      } else if (e.value.type === 'kubelet.pleg.RelistMark.v1') {
        if (e.key === relistKey) cache.applyRelistMark(e.value.timestamp);
      } else if (e.key !== relistKey) {
        cache.applyEntry(e.key.slice(prefix.length), e.value);
      }
    },
    { onCaughtUp: () => cache.markCaughtUp() },
  );
}
