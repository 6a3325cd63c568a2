/**
 * KV adapters of sync-loop's stores: desired pods (`sl_desired`), kill requests (`sl_kill`), the
 * seen sources and the applied config updates (`sl_node`). Desired and kill keys are
 * `<node>.<partition>.<uid>`.
 */
import { z } from 'zod';
import { Buckets, DesiredPod, KillRequest, Keys, PodSource, partitionOf } from '@splitlet/api';
import { isBusError, type Bus } from '@splitlet/bus';
import { KillRevisions } from './kill-revisions.js';
import type { AppliedUpdatesStore, DesiredStore, KillStore, SourcesSnapshot, SourcesStore, StoredKill } from '../ports.js';

/** `sl_node` value: the sources config-source runs and those sync-loop has seen (sourcesReady). */
export const NodeSourcesRecord = z.object({
  type: z.literal('kubelet.syncloop.NodeSources.v1'),
  sources: z.array(PodSource),
  seen: z.array(PodSource),
  updatedAt: z.string(),
});
export type NodeSourcesRecord = z.infer<typeof NodeSourcesRecord>;

/** `sl_node` value at `<node>._applied`: the last update applied per earlier config publisher, oldest first. */
export const AppliedUpdatesRecord = z.object({
  type: z.literal('kubelet.syncloop.AppliedUpdates.v1'),
  publishers: z.array(z.object({ publisher: z.string().min(1), seq: z.number().int().nonnegative() })),
  updatedAt: z.string(),
});
export type AppliedUpdatesRecord = z.infer<typeof AppliedUpdatesRecord>;

/**
 * A {@link DesiredStore} over the node's keys of `sl_desired` that remembers the revision of each
 * pod's record as it last wrote or listed it (sync-loop is the record's only writer), for the pokes
 * to carry (`WorkPoke.desiredRevision`). A deleted pod's revision is forgotten.
 */
export interface KvDesiredStore extends DesiredStore {
  /** The revision of the pod's record as this store last wrote or listed it; undefined when it holds none. */
  revision(uid: string): number | undefined;
}

/** A {@link KvDesiredStore} over the node's keys of `sl_desired`. */
export async function createKvDesiredStore(bus: Pick<Bus, 'kv'>, node: string, partitions: number): Promise<KvDesiredStore> {
  const kv = await bus.kv(Buckets.desired, DesiredPod);
  const key = (uid: string): string => Keys.podInPartition(node, partitionOf(uid, partitions), uid);
  const revisions = new Map<string, number>();
  // The write whose revision may be recorded: one started later (or a delete) makes an earlier one's moot.
  const latest = new Map<string, object>();
  return {
    async list(): Promise<DesiredPod[]> {
      const out: DesiredPod[] = [];
      revisions.clear();
      for (const e of await kv.list(Keys.nodePrefix(node))) {
        if (e.value === null) continue;
        out.push(e.value);
        revisions.set(e.value.pod.metadata.uid, e.revision);
      }
      return out;
    },
    async put(desired: DesiredPod): Promise<void> {
      const uid = desired.pod.metadata.uid;
      // Until the put is known done, the pod's revision is unknown: a poke meanwhile names none.
      const write = {};
      latest.set(uid, write);
      revisions.delete(uid);
      const revision = await kv.put(key(uid), desired);
      if (latest.get(uid) !== write) return;
      latest.delete(uid);
      revisions.set(uid, revision);
    },
    async delete(uid: string): Promise<void> {
      latest.delete(uid);
      revisions.delete(uid);
      await kv.delete(key(uid));
    },
    revision: (uid) => revisions.get(uid),
  };
}

/** A {@link KillStore} over the node's keys of `sl_kill`; its writes are told to `revisions` (default: a private tracker). */
export async function createKvKillStore(bus: Pick<Bus, 'kv'>, node: string, partitions: number, revisions = new KillRevisions()): Promise<KillStore> {
  const kv = await bus.kv(Buckets.kill, KillRequest);
  const key = (uid: string): string => Keys.podInPartition(node, partitionOf(uid, partitions), uid);
  /** Runs a create or compare-and-swap of the pod's request; false when it lost (Conflict: nothing written). */
  const write = async (uid: string, op: () => Promise<number>): Promise<boolean> => {
    const token = revisions.writing(uid);
    try {
      revisions.wrote(uid, token, await op());
      return true;
    } catch (e) {
      if (isBusError(e, 'Conflict')) {
        revisions.wrote(uid, token, undefined);
        return false;
      }
      revisions.failed(uid, token);
      throw e;
    }
  };
  return {
    create: (request: KillRequest): Promise<boolean> => write(request.uid, () => kv.create(key(request.uid), request)),
    async get(uid: string): Promise<StoredKill | undefined> {
      const e = await kv.get(key(uid));
      return e === null || e.value === null ? undefined : { value: e.value, revision: e.revision };
    },
    update: (request: KillRequest, revision: number): Promise<boolean> => write(request.uid, () => kv.update(key(request.uid), request, revision)),
  };
}

/** A {@link SourcesStore} at `sl_node` key `<node>`. */
export async function createKvSourcesStore(bus: Pick<Bus, 'kv'>, node: string): Promise<SourcesStore> {
  const kv = await bus.kv(Buckets.node, NodeSourcesRecord);
  return {
    async load(): Promise<SourcesSnapshot | undefined> {
      const e = await kv.get(Keys.node(node));
      return e?.value ?? undefined;
    },
    async save(snapshot: SourcesSnapshot): Promise<void> {
      await kv.put(Keys.node(node), {
        type: 'kubelet.syncloop.NodeSources.v1',
        sources: [...snapshot.sources],
        seen: [...snapshot.seen],
        updatedAt: new Date().toISOString(),
      });
    },
  };
}

/** An {@link AppliedUpdatesStore} at `sl_node` key `<node>._applied`. */
export async function createKvAppliedUpdatesStore(bus: Pick<Bus, 'kv'>, node: string): Promise<AppliedUpdatesStore> {
  const kv = await bus.kv(Buckets.node, AppliedUpdatesRecord);
  return {
    async load(): Promise<Array<[string, number]>> {
      const e = await kv.get(Keys.appliedUpdates(node));
      return (e?.value?.publishers ?? []).map((p) => [p.publisher, p.seq]);
    },
    async save(last: ReadonlyArray<readonly [string, number]>): Promise<void> {
      await kv.put(Keys.appliedUpdates(node), {
        type: 'kubelet.syncloop.AppliedUpdates.v1',
        publishers: last.map(([publisher, seq]) => ({ publisher, seq })),
        updatedAt: new Date().toISOString(),
      });
    },
  };
}
