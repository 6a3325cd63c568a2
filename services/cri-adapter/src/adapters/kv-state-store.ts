/**
 * Persists the node's backoff tables in a KV bucket of the cri-adapter's own (`sl_cri_backoff`,
 * key = the node token), so a restarted cri-adapter keeps counting crash loops where it left off.
 * The bucket is declared with the others in the topology of `@splitlet/bus`.
 */
import { Buckets, nodeToken } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { z } from 'zod';
import type { StateStore } from '../ports.js';
import type { BackoffTables } from '../runtime-operations.js';

/** The bucket the cri-adapter owns (single writer: the node's cri-adapter). */
export const CRI_BACKOFF_BUCKET = Buckets.criBackoff;

const BackoffStateSchema = z.object({
  version: z.literal(1),
  initialMs: z.number(),
  maxMs: z.number(),
  expiryMs: z.number(),
  entries: z.record(z.string(), z.object({ backoffMs: z.number(), lastUpdate: z.number() })),
});

/** The stored document. */
export const BackoffTablesSchema = z.object({
  type: z.literal('kubelet.runtime.BackoffTables.v1'),
  crashLoop: BackoffStateSchema,
  imagePull: BackoffStateSchema,
});

/**
 * Opens (creating if needed) the bucket and returns a store for this node's tables. A stored value
 * that does not parse is ignored (logged by the caller as "no state").
 */
export async function createKvBackoffStore(bus: Bus, node: string): Promise<StateStore<BackoffTables>> {
  const kv = await bus.kv(CRI_BACKOFF_BUCKET, BackoffTablesSchema);
  const key = nodeToken(node);
  return {
    async load() {
      let entry;
      try {
        entry = await kv.get(key);
      } catch (e) {
        bus.logger.warn('stored backoff tables are unreadable; starting empty', { bucket: CRI_BACKOFF_BUCKET, key, error: e instanceof Error ? e.message : String(e) });
        return undefined;
      }
      if (entry?.value == null) return undefined;
      return { crashLoop: entry.value.crashLoop, imagePull: entry.value.imagePull };
    },
    async save(state) {
      await kv.put(key, { type: 'kubelet.runtime.BackoffTables.v1', crashLoop: state.crashLoop, imagePull: state.imagePull });
    },
  };
}
