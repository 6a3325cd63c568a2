/**
 * The {@link RawKv} of a NATS JetStream KV bucket: nats.js `KV` for reads and writes, STREAM.INFO
 * for `keys`, and JetStream CAS failures mapped to BusError `Conflict`.
 */
import type { KV } from '@nats-io/kv';
import { KvWatchInclude, Kvm } from '@nats-io/kv';
import type { JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { BusError } from './errors.js';
import { isJsApiError, isWrongLastSequence, JsApiCodes } from './js-api-codes.js';
import type { RawKv, RawKvWatch } from './kv-bucket.js';

async function mapConflict<R>(what: string, op: () => Promise<R>): Promise<R> {
  try {
    return await op();
  } catch (e) {
    if (isWrongLastSequence(e)) throw new BusError('Conflict', what, { cause: e });
    throw e;
  }
}

/**
 * Whether `get` may read the bucket's stream with DIRECT.GET: the stream allows it and has one
 * replica. DIRECT.GET is a plain request the stream's servers answer from their store: no JetStream
 * API request, no base64 JSON reply, no `$JS.EVENT.ADVISORY.API` advisory per read.
 *
 * Limited to R1 on purpose. With replicas, nats-server lets every replica answer a direct get, and
 * a follower may not have applied a write the leader has acknowledged. splitlet's reads depend on
 * seeing those writes: a pod-worker woken by a poke for revision N reads `sl_kill` and
 * `sl_desired` and must see N (a stale read syncs an old spec, or misses a kill, and loops), and
 * its CAS writes (`sl_worker`, `sl_status`, leases) use the revision they read, so a stale one
 * only buys a Conflict and a retry. An R1 stream has one server, which stores a message before it
 * acknowledges it, so a direct get after the ack sees it. Replicated buckets keep STREAM.MSG.GET,
 * which the stream leader answers.
 */
export function readsDirect(config: Pick<StreamConfig, 'allow_direct' | 'num_replicas'>): boolean {
  return config.allow_direct === true && (config.num_replicas ?? 1) <= 1;
}

/**
 * Opens a provisioned bucket. nats.js `open` binds without looking at the stream and then reads
 * with STREAM.MSG.GET; one STREAM.INFO here tells it whether it may read directly ({@link readsDirect}).
 * A replica count changed after the open is seen at the process's next start.
 */
export async function openNatsKv(nc: NatsConnection, jsm: JetStreamManager, bucket: string): Promise<KV> {
  const { config } = await jsm.streams.info(`KV_${bucket}`);
  return new Kvm(nc).open(bucket, { allow_direct: readsDirect(config) });
}

/** Adapts an open nats.js bucket. */
export function natsRawKv(kv: KV, bucket: string, jsm: JetStreamManager): RawKv {
  return {
    get: (key) => kv.get(key),
    put: (key, data) => kv.put(key, data),
    create: (key, data) => mapConflict(`${bucket}/${key} exists`, () => kv.create(key, data)),
    update: (key, data, revision) => mapConflict(`${bucket}/${key} moved on from ${revision}`, () => kv.update(key, data, revision)),
    delete: (key, previousRevision) =>
      mapConflict(`${bucket}/${key} moved on from ${previousRevision}`, () => kv.delete(key, previousRevision === undefined ? {} : { previousSeq: previousRevision })),
    async watch(filter, include): Promise<RawKvWatch> {
      return kv.watch({ key: filter, include: include === 'updates' ? KvWatchInclude.UpdatesOnly : KvWatchInclude.LastValue });
    },
    /**
     * One STREAM.INFO request with a subjects filter. Unlike nats.js `keys()`, whose ordered
     * consumer can wait forever when a key is overwritten or expires between its pending count and
     * its delivery (observed with heartbeat buckets on nats-server 2.9), this answers at once.
     */
    async keys(filter) {
      const prefix = `$KV.${bucket}.`;
      const si = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}${filter}` });
      return Object.keys(si.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
    },
  };
}

/**
 * Removes a bucket's delete markers older than `olderThanMs`. A deleted key leaves a marker behind
 * (history 1 keeps the last message of every key, and nats-server 2.9 has no marker TTL), so a node
 * that churns pods would otherwise grow its buckets without bound until they refuse writes. Each
 * marker is deleted by its own revision (one message), so a key written again since is kept.
 * Reads the bucket's headers only, once; gives up after `timeoutMs`. Returns how many were removed.
 */
export async function compactDeleteMarkers(kv: KV, jsm: JetStreamManager, bucket: string, olderThanMs: number, timeoutMs = 30_000): Promise<number> {
  // history() honours headers_only (kv.js) though its declared options omit it: values are not needed here.
  const opts: { key: string } = Object.assign({ key: '>' }, { headers_only: true });
  const it = await kv.history(opts);
  const markers = new Map<string, { revision: number; created: Date }>();
  const giveUp = setTimeout(() => it.stop(), timeoutMs);
  try {
    for await (const e of it) {
      if (e.operation === 'PUT') markers.delete(e.key);
      else markers.set(e.key, { revision: e.revision, created: e.created });
    }
  } finally {
    clearTimeout(giveUp);
  }
  const before = Date.now() - olderThanMs;
  let removed = 0;
  for (const m of markers.values()) {
    if (m.created.getTime() >= before) continue;
    if (await deleteStoredMessage(jsm, `KV_${bucket}`, m.revision)) removed++;
  }
  return removed;
}

/**
 * Deletes one message by its sequence; false when it is gone already (a key written again since
 * replaced its marker). Not a (filtered) purge: on nats-server 2.9 a filtered purge moves every
 * consumer of the stream that has not yet delivered past the purged subject's first remaining
 * message, so a KV watch lagging by a few messages silently loses the other keys' updates written
 * meanwhile (measured: 30 of 30 rounds lost 11–20 of 20 concurrent puts; a message delete lost none).
 */
export async function deleteStoredMessage(jsm: JetStreamManager, stream: string, seq: number): Promise<boolean> {
  try {
    return await jsm.streams.deleteMessage(stream, seq, false);
  } catch (e) {
    if (isJsApiError(e, JsApiCodes.NoMessageFound)) return false;
    throw e;
  }
}
