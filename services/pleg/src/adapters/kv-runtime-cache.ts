/**
 * The runtime pod cache in KV bucket `sl_runtime`: key `<node>.<uid>` → RuntimeCacheEntry,
 * `<node>._relist` → RelistMark. pleg is the bucket's single writer.
 */
import { z } from 'zod';
import { Buckets, Keys, RelistMark, RuntimeCacheEntry } from '@splitlet/api';
import type { Bus, KvBucket } from '@splitlet/bus';
import type { RuntimeCacheSnapshot, RuntimeCacheStore } from '../ports.js';

/** What `sl_runtime` holds. */
export const RuntimeKvValue = z.union([RuntimeCacheEntry, RelistMark]);
export type RuntimeKvValue = z.infer<typeof RuntimeKvValue>;

/** Opens `sl_runtime` with its value schema. */
export function openRuntimeKv(bus: Pick<Bus, 'kv'>): Promise<KvBucket<RuntimeKvValue>> {
  return bus.kv(Buckets.runtime, RuntimeKvValue);
}

/** A {@link RuntimeCacheStore} over the node's keys of `sl_runtime`. */
export function createKvRuntimeCache(kv: KvBucket<RuntimeKvValue>, node: string): RuntimeCacheStore {
  return {
    async load(): Promise<RuntimeCacheSnapshot> {
      const entries = new Map<string, RuntimeCacheEntry>();
      let mark: RelistMark | undefined;
      for (const e of await kv.list(Keys.nodePrefix(node))) {
        const v = e.value;
        if (v === null) continue;
        if (v.type === 'kubelet.pleg.RelistMark.v1') mark = v;
        else entries.set(v.uid, v);
      }
      return { entries, mark };
    },
    async put(entry: RuntimeCacheEntry): Promise<number> {
      return kv.put(Keys.pod(node, entry.uid), entry);
    },
    async delete(uid: string): Promise<void> {
      await kv.delete(Keys.pod(node, uid));
    },
    async putMark(mark: RelistMark): Promise<void> {
      await kv.put(Keys.relistMark(node), mark);
    },
  };
}
