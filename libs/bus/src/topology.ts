/**
 * The streams and KV buckets splitlet needs, provisioned idempotently: the one place a stream or
 * bucket is declared, with the durable consumers (created by `Bus.consume` from {@link CONSUMERS});
 * services never create one.
 *
 * Every process calls {@link ensureTopology} at start; creating what exists is a no-op and a
 * changed limit is updated in place. Only settings nats-server 2.9 understands are used.
 */
import { Buckets, Consumers, Streams, Subjects } from '@splitlet/api';
import { DiscardPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { KvOptions } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { nanos } from '@nats-io/transport-node';
import { isJsApiError, JsApiCodes } from './js-api-codes.js';
import { DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_ACK_PENDING } from './consume-loop.js';

const HOUR_MS = 3_600_000;

/** A stream's declaration. */
export interface StreamSpec {
  name: string;
  subjects: string[];
  retention: 'limits' | 'workqueue';
  maxAgeMs: number;
  maxBytes?: number;
  maxMsgsPerSubject?: number;
  duplicateWindowMs?: number;
}

/** A KV bucket's declaration. */
export interface BucketSpec {
  name: string;
  history: number;
  /** Per-entry max age; the lease buckets use it to expire dead owners. */
  ttlMs?: number;
}

/** The streams splitlet uses (all nodes share them; subjects carry the node). */
export const STREAMS: readonly StreamSpec[] = [
  { name: Streams.config, subjects: ['sl.*.config.>'], retention: 'limits', maxAgeMs: 24 * HOUR_MS, maxBytes: 512 * 1024 * 1024 },
  { name: Streams.work, subjects: ['sl.*.work.*.*'], retention: 'workqueue', maxAgeMs: 24 * HOUR_MS, duplicateWindowMs: 120_000 },
  { name: Streams.pleg, subjects: ['sl.*.pleg.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxBytes: 256 * 1024 * 1024 },
  { name: Streams.status, subjects: ['sl.*.status.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxBytes: 256 * 1024 * 1024 },
  { name: Streams.events, subjects: ['sl.*.events.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxMsgsPerSubject: 500, maxBytes: 256 * 1024 * 1024 },
  { name: Streams.deadLetter, subjects: ['sl.*.dlq.*'], retention: 'limits', maxAgeMs: 7 * 24 * HOUR_MS, maxBytes: 256 * 1024 * 1024 },
  { name: Streams.spans, subjects: ['sl.*.spans.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxBytes: 128 * 1024 * 1024 },
];

/** The KV buckets splitlet uses. */
export const BUCKETS: readonly BucketSpec[] = [
  { name: Buckets.desired, history: 1 },
  { name: Buckets.kill, history: 1 },
  { name: Buckets.worker, history: 1 },
  { name: Buckets.leases, history: 1, ttlMs: 10_000 },
  { name: Buckets.members, history: 1, ttlMs: 10_000 },
  { name: Buckets.runtime, history: 1 },
  { name: Buckets.volumes, history: 1 },
  { name: Buckets.status, history: 1 },
  { name: Buckets.probe, history: 1 },
  { name: Buckets.node, history: 1 },
  { name: Buckets.syncLoopLeader, history: 1, ttlMs: 10_000 },
  { name: Buckets.criBackoff, history: 1 },
  { name: Buckets.nodeCapacity, history: 1 },
  { name: Buckets.criFences, history: 1 },
  { name: Buckets.apiPods, history: 1 },
];

/**
 * A durable consumer's server-side declaration; `Bus.consume` creates it when missing (an existing
 * consumer keeps its config). Client-side options (`concurrency`, `autoAck`, `signal`) are the
 * adapter's.
 */
export interface ConsumerSpec {
  readonly stream: string;
  readonly durable: string;
  readonly filterSubject: string;
  readonly ackWaitMs?: number;
  readonly maxAckPending?: number;
  readonly maxDeliver?: number;
  readonly deliverNew?: boolean;
}

/** The durable consumers splitlet uses, per node (and partition). */
export const CONSUMERS = {
  /** sync-loop's PodUpdates, in order. */
  syncLoopConfig: (node: string): ConsumerSpec => ({ stream: Streams.config, durable: Consumers.syncLoopConfig(node), filterSubject: Subjects.configAll(node) }),
  /** sync-loop's PLEG events: only new ones when first created. */
  syncLoopPleg: (node: string): ConsumerSpec => ({ stream: Streams.pleg, durable: Consumers.syncLoopPleg(node), filterSubject: Subjects.plegAll(node), deliverNew: true }),
  /** One pod-worker partition's pokes (the lease owner consumes it). */
  podWorkerPartition: (node: string, partition: number, o: { ackWaitMs?: number; maxAckPending?: number } = {}): ConsumerSpec => ({
    stream: Streams.work,
    durable: Consumers.podWorkerPartition(node, partition),
    filterSubject: Subjects.workPartition(node, partition),
    ackWaitMs: o.ackWaitMs ?? DEFAULT_ACK_WAIT_MS,
    maxAckPending: o.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
    maxDeliver: 100,
  }),
  /** status-manager's status updates. */
  statusManager: (node: string): ConsumerSpec => ({ stream: Streams.status, durable: Consumers.statusManager(node), filterSubject: Subjects.statusAll(node) }),
  /** status-manager's events to post to the API server (cluster mode): only new ones when first created. */
  statusManagerEvents: (node: string): ConsumerSpec => ({ stream: Streams.events, durable: Consumers.statusManagerEvents(node), filterSubject: Subjects.eventsAll(node), deliverNew: true }),
} as const;

function streamConfig(s: StreamSpec): Partial<StreamConfig> & { name: string } {
  const cfg: Partial<StreamConfig> & { name: string } = {
    name: s.name,
    subjects: s.subjects,
    retention: s.retention === 'workqueue' ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(s.maxAgeMs),
    num_replicas: 1,
  };
  if (s.maxBytes !== undefined) cfg.max_bytes = s.maxBytes;
  if (s.maxMsgsPerSubject !== undefined) cfg.max_msgs_per_subject = s.maxMsgsPerSubject;
  if (s.duplicateWindowMs !== undefined) cfg.duplicate_window = nanos(s.duplicateWindowMs);
  return cfg;
}

function isNotFound(e: unknown): boolean {
  return isJsApiError(e, JsApiCodes.StreamNotFound) || (isJsApiError(e) && e.status === HTTP_NOT_FOUND);
}

/** The HTTP-like status of a JetStream API error for a missing resource. */
const HTTP_NOT_FOUND = 404;

/** Creates or updates one stream. */
export async function ensureStream(jsm: JetStreamManager, spec: StreamSpec): Promise<void> {
  const cfg = streamConfig(spec);
  try {
    const info = await jsm.streams.info(spec.name);
    const cur = info.config;
    const same =
      JSON.stringify([...cur.subjects].sort()) === JSON.stringify([...spec.subjects].sort()) &&
      cur.max_age === cfg.max_age &&
      (cur.max_bytes ?? -1) === (cfg.max_bytes ?? -1) &&
      (cur.max_msgs_per_subject ?? -1) === (cfg.max_msgs_per_subject ?? -1);
    if (!same) {
      const { retention: _r, storage: _s, ...updatable } = cfg;
      await jsm.streams.update(spec.name, updatable);
    }
  } catch (e) {
    if (!isNotFound(e)) throw e;
    try {
      await jsm.streams.add(cfg);
    } catch (e2) {
      // Another process created it between our info and add: fine.
      if (!isJsApiError(e2, JsApiCodes.StreamNameInUse)) throw e2;
    }
  }
}

/** Creates (or opens) every stream and bucket. Safe to call from every process at once. */
export async function ensureTopology(nc: NatsConnection, jsm: JetStreamManager): Promise<void> {
  for (const s of STREAMS) await ensureStream(jsm, s);
  const kvm = new Kvm(nc);
  for (const b of BUCKETS) {
    const opts: Partial<KvOptions> = { history: b.history, storage: StorageType.File };
    if (b.ttlMs !== undefined) opts.ttl = b.ttlMs;
    try {
      await kvm.create(b.name, opts);
    } catch (e) {
      // Another process created the bucket between our lookup and our create: open it instead.
      await new Promise((r) => setTimeout(r, 100));
      try {
        await kvm.open(b.name);
      } catch {
        throw e;
      }
    }
  }
}
