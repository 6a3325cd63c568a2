/**
 * Feeds the in-memory runtime cache from one watch on `sl_runtime` for the node (pod entries and
 * the relist mark). pleg is the bucket's only writer.
 *
 * The watch is a raw KV watch (last values, then updates): the typed watch of `@splitlet/bus`
 * counts keys with `kv.keys()` first, which can wait forever on a bucket written as often as this
 * one. Caught up = an entry with nothing pending after it, or an empty key range at start.
 */
import { KvWatchInclude } from '@nats-io/kv';
import { z } from 'zod';
import { Buckets, Keys, RelistMark, RuntimeCacheEntry, errorMessage, nodeToken } from '@splitlet/api';
import type { NatsBus } from '@splitlet/bus';
import { formatIssues } from '@splitlet/bus';
import type { RuntimeStatusCache } from '../runtime-cache/runtime-status-cache.js';
import { keysWithMessages } from './kv-stores.js';

/** A value in `sl_runtime`: a pod's cache entry or the node's relist mark. */
export const RuntimeBucketValue = z.union([RuntimeCacheEntry, RelistMark]);

/** Starts the watch; resolves once it is established. `done` settles when `signal` aborts. */
export async function watchRuntimeCache(bus: NatsBus, node: string, cache: RuntimeStatusCache, signal: AbortSignal): Promise<{ done: Promise<void> }> {
  const kv = await bus.kv(Buckets.runtime, RuntimeBucketValue);
  const prefix = `${nodeToken(node)}.`;
  const relistKey = Keys.relistMark(node);
  const filter = Keys.nodePrefix(node);
  const w = await kv.kv.watch({ key: filter, include: KvWatchInclude.LastValue });
  signal.addEventListener('abort', () => w.stop(), { once: true });
  if ((await keysWithMessages(bus, Buckets.runtime, filter)).length === 0) cache.markCaughtUp();
  const done = (async () => {
    for await (const e of w) {
      if (e.key === relistKey || e.key.startsWith(prefix)) {
        if (e.operation !== 'PUT') {
          if (e.key !== relistKey) cache.applyEntry(e.key.slice(prefix.length), null);
        } else {
          const parsed = decode(e.key, () => e.json());
          if (!parsed.ok) {
            await bus.deadLetter({ subject: `$KV.${Buckets.runtime}.${e.key}`, reason: parsed.reason, data: e.value });
          } else if (parsed.value.type === 'kubelet.pleg.RelistMark.v1') {
            if (e.key === relistKey) cache.applyRelistMark(parsed.value.timestamp);
          } else if (e.key !== relistKey) {
            cache.applyEntry(e.key.slice(prefix.length), parsed.value);
          }
        }
      }
      if ((e.delta ?? 0) === 0) cache.markCaughtUp();
    }
  })();
  return { done };
}

function decode(key: string, json: () => unknown): { ok: true; value: z.output<typeof RuntimeBucketValue> } | { ok: false; reason: string } {
  let raw: unknown;
  try {
    raw = json();
  } catch (err) {
    return { ok: false, reason: `value of ${Buckets.runtime}/${key} is not JSON: ${errorMessage(err)}` };
  }
  const parsed = RuntimeBucketValue.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: `value of ${Buckets.runtime}/${key} does not match its schema: ${formatIssues(parsed.error)}` };
  return { ok: true, value: parsed.data };
}
