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

const MB = 1024 * 1024;

/**
 * A stream's declaration. Every stream is bounded three ways (age, bytes, messages) so a node that
 * runs for months keeps a flat store; which end gives way when a bound is hit is chosen per stream
 * (docs/architecture.md, "Limits of the bus").
 */
export interface StreamSpec {
  name: string;
  subjects: string[];
  retention: 'limits' | 'workqueue';
  maxAgeMs: number;
  maxBytes: number;
  maxMsgs: number;
  /**
   * The largest message the stream stores (a bigger publish is refused): 1 MiB everywhere, the
   * server's default max_payload, so a message that reached the server is stored and a bad one is
   * dead-lettered by its reader with the reason, not lost at the door.
   */
  maxMsgSize: number;
  /** `old`: the oldest messages make room (history); `new`: a publish into a full stream is refused (work that must not be dropped silently). */
  discard: 'old' | 'new';
  maxMsgsPerSubject?: number;
  duplicateWindowMs?: number;
}

/**
 * A KV bucket's declaration. History 1: a key is its latest value. A full bucket refuses new
 * writes (KV buckets discard new) rather than dropping another key's state.
 */
export interface BucketSpec {
  name: string;
  history: number;
  /** Per-entry max age; the lease buckets use it to expire dead owners. */
  ttlMs?: number;
  /** The bucket's size bound. */
  maxBytes: number;
  /** The largest value a key may hold. */
  maxValueSize: number;
}

/** The streams splitlet uses (all nodes share them; subjects carry the node). */
export const STREAMS: readonly StreamSpec[] = [
  { name: Streams.config, subjects: ['sl.*.config.>'], retention: 'limits', maxAgeMs: 24 * HOUR_MS, maxBytes: 512 * MB, maxMsgs: 1_000_000, maxMsgSize: MB, discard: 'old' },
  {
    name: Streams.work,
    subjects: ['sl.*.work.*.*'],
    retention: 'workqueue',
    maxAgeMs: 24 * HOUR_MS,
    maxBytes: 64 * MB,
    maxMsgs: 100_000,
    maxMsgSize: MB,
    discard: 'new',
    duplicateWindowMs: 120_000,
  },
  { name: Streams.pleg, subjects: ['sl.*.pleg.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxBytes: 256 * MB, maxMsgs: 1_000_000, maxMsgSize: MB, discard: 'old' },
  { name: Streams.status, subjects: ['sl.*.status.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxBytes: 256 * MB, maxMsgs: 1_000_000, maxMsgSize: MB, discard: 'old' },
  {
    name: Streams.events,
    subjects: ['sl.*.events.*'],
    retention: 'limits',
    maxAgeMs: HOUR_MS,
    maxMsgsPerSubject: 500,
    maxBytes: 256 * MB,
    maxMsgs: 1_000_000,
    maxMsgSize: MB,
    discard: 'old',
  },
  { name: Streams.deadLetter, subjects: ['sl.*.dlq.*'], retention: 'limits', maxAgeMs: 7 * 24 * HOUR_MS, maxBytes: 256 * MB, maxMsgs: 100_000, maxMsgSize: MB, discard: 'old' },
  { name: Streams.spans, subjects: ['sl.*.spans.*'], retention: 'limits', maxAgeMs: HOUR_MS, maxBytes: 128 * MB, maxMsgs: 1_000_000, maxMsgSize: MB, discard: 'old' },
];

/**
 * Max ages set by the operator (`STREAM_MAX_AGE`): stream name → ms, replacing the declared max age
 * of those streams. Every process provisioning the topology must be given the same (`splitlet up`
 * passes its environment to every process it supervises), or they would update the streams back
 * and forth; a process that may not update them waits for the admin instead.
 */
export type StreamMaxAges = Readonly<Record<string, number>>;

/**
 * The shortest max age a stream may be given. Below it a message published while its reader
 * restarts (the supervisor's backoff, a sync-loop leader taking over after the 10 s lease) could
 * expire before it is read.
 */
export const MIN_STREAM_MAX_AGE_MS = 60_000;

/**
 * Higher floors for the streams carrying work that must not be dropped. SL_WORK: its duplicate
 * window (2 min) must not exceed its max age (nats-server refuses it; the pokes' de-duplication
 * relies on it). SL_CONFIG: a pod update waits there behind sync-loop's one in flight, and one held
 * by a killed sync-loop is redelivered after the 30 s ack wait; an update that expired first would
 * be lost, not retried.
 */
export const STREAM_MAX_AGE_FLOORS_MS: Readonly<Record<string, number>> = { [Streams.config]: 120_000, [Streams.work]: 120_000 };

const seconds = (ms: number): string => `${ms / 1000} s`;

/**
 * Checks operator max ages: every name a declared stream, every age an integer number of ms at or
 * above the stream's floor. Throws an Error naming the stream and the value.
 */
export function checkStreamMaxAges(maxAges: StreamMaxAges): void {
  for (const [name, ms] of Object.entries(maxAges)) {
    if (!STREAMS.some((s) => s.name === name)) throw new Error(`unknown stream "${name}" (the streams: ${STREAMS.map((s) => s.name).join(', ')})`);
    if (!Number.isInteger(ms) || ms <= 0) throw new Error(`${name}: the max age must be a positive duration, got ${String(ms)} ms`);
    const floor = STREAM_MAX_AGE_FLOORS_MS[name] ?? MIN_STREAM_MAX_AGE_MS;
    if (ms < floor) throw new Error(`${name}: a max age of ${seconds(ms)} is below the shortest allowed, ${seconds(floor)} (docs/architecture.md, "Limits of the bus")`);
  }
}

/** The stream declarations with the operator's max ages applied (checked by {@link checkStreamMaxAges}). */
export function streamSpecs(maxAges: StreamMaxAges = {}): StreamSpec[] {
  checkStreamMaxAges(maxAges);
  return STREAMS.map((s) => {
    const ms = maxAges[s.name];
    return ms === undefined ? s : { ...s, maxAgeMs: ms };
  });
}

/** A bucket keyed per pod (values carry a pod spec or status: up to 1 MiB, like an API object). */
const perPod = (name: string): BucketSpec => ({ name, history: 1, maxBytes: 256 * MB, maxValueSize: MB });
/** A bucket of small per-node or per-partition records. */
const small = (name: string, ttlMs?: number): BucketSpec => ({ name, history: 1, maxBytes: 16 * MB, maxValueSize: MB, ...(ttlMs !== undefined ? { ttlMs } : {}) });

/** The KV buckets splitlet uses. */
export const BUCKETS: readonly BucketSpec[] = [
  perPod(Buckets.desired),
  perPod(Buckets.kill),
  perPod(Buckets.worker),
  small(Buckets.leases, 10_000),
  small(Buckets.members, 10_000),
  perPod(Buckets.runtime),
  perPod(Buckets.volumes),
  perPod(Buckets.status),
  perPod(Buckets.probe),
  small(Buckets.node),
  small(Buckets.syncLoopLeader, 10_000),
  // The node's crash-loop and image-pull backoff tables: one value for every pod of the node.
  { name: Buckets.criBackoff, history: 1, maxBytes: 64 * MB, maxValueSize: MB },
  small(Buckets.nodeCapacity),
  small(Buckets.nodeRuntime),
  small(Buckets.criFences),
  perPod(Buckets.apiPods),
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
  /** See `ConsumeOptions.takeOver`. */
  readonly takeOver?: boolean;
}

/** The durable consumers splitlet uses, per node (and partition). */
export const CONSUMERS = {
  /**
   * sync-loop's PodUpdates, in order: one in flight (max_ack_pending 1). With more, a sync-loop killed
   * holding unacked updates had them redelivered (after the ack wait) behind newer ones its successor
   * had already applied — an old ADD re-adding a removed pod, an old image undoing a newer one (found
   * by the chaos suite). A new leader takes the consumer over, so the update its killed predecessor
   * held is delivered again at once, not after the 30 s ack wait (on a loaded machine the chaos suite
   * saw a takeover stall that long, with the whole node's config behind it). An update is never
   * dropped: a retryable failure is retried until it succeeds (max deliver -1), as the kubelet's
   * config channel blocks rather than loses a pod.
   */
  syncLoopConfig: (node: string): ConsumerSpec => ({
    stream: Streams.config,
    durable: Consumers.syncLoopConfig(node),
    filterSubject: Subjects.configAll(node),
    maxAckPending: 1,
    maxDeliver: -1,
    takeOver: true,
  }),
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
    // A partition changes hands (rebalance, a dead instance): the new owner ends what the previous
    // one left — unsettled pokes and waiting pull requests — rather than wait 30 s for them.
    takeOver: true,
  }),
  /** status-manager's status updates. */
  statusManager: (node: string): ConsumerSpec => ({
    stream: Streams.status,
    durable: Consumers.statusManager(node),
    filterSubject: Subjects.statusAll(node),
    // One status-manager per node: a restarted one takes the consumer over, so the updates its
    // predecessor left unacknowledged come again at once and in order, before newer ones (after the
    // 30 s ack wait they would land behind newer ones already applied).
    takeOver: true,
  }),
  /** status-manager's events to post to the API server (cluster mode): only new ones when first created. */
  statusManagerEvents: (node: string): ConsumerSpec => ({
    stream: Streams.events,
    durable: Consumers.statusManagerEvents(node),
    filterSubject: Subjects.eventsAll(node),
    deliverNew: true,
  }),
} as const;

function streamConfig(s: StreamSpec, replicas: number): Partial<StreamConfig> & { name: string } {
  const cfg: Partial<StreamConfig> & { name: string } = {
    name: s.name,
    subjects: s.subjects,
    retention: s.retention === 'workqueue' ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: s.discard === 'new' ? DiscardPolicy.New : DiscardPolicy.Old,
    max_age: nanos(s.maxAgeMs),
    max_bytes: s.maxBytes,
    max_msgs: s.maxMsgs,
    max_msg_size: s.maxMsgSize,
    num_replicas: replicas,
  };
  if (s.maxMsgsPerSubject !== undefined) cfg.max_msgs_per_subject = s.maxMsgsPerSubject;
  if (s.duplicateWindowMs !== undefined) cfg.duplicate_window = nanos(s.duplicateWindowMs);
  return cfg;
}

function isNotFound(e: unknown): boolean {
  return isJsApiError(e, JsApiCodes.StreamNotFound) || (isJsApiError(e) && e.status === HTTP_NOT_FOUND);
}

/** The HTTP-like status of a JetStream API error for a missing resource. */
const HTTP_NOT_FOUND = 404;

/**
 * Creates or updates one stream. `replicas` applies at creation only: an update keeps the stream's
 * replica count, so a process provisioning with the default never scales down a stream that
 * `splitlet up --nats-cluster` created replicated.
 */
export async function ensureStream(jsm: JetStreamManager, spec: StreamSpec, replicas = 1): Promise<void> {
  const cfg = streamConfig(spec, replicas);
  try {
    const info = await jsm.streams.info(spec.name);
    const cur = info.config;
    const same =
      JSON.stringify([...cur.subjects].sort()) === JSON.stringify([...spec.subjects].sort()) &&
      cur.max_age === cfg.max_age &&
      cur.discard === cfg.discard &&
      (cur.max_msgs ?? -1) === (cfg.max_msgs ?? -1) &&
      (cur.max_msg_size ?? -1) === (cfg.max_msg_size ?? -1) &&
      (cur.max_bytes ?? -1) === (cfg.max_bytes ?? -1) &&
      (cur.max_msgs_per_subject ?? -1) === (cfg.max_msgs_per_subject ?? -1);
    if (!same) {
      const { retention: _r, storage: _s, ...updatable } = cfg;
      await jsm.streams.update(spec.name, { ...updatable, num_replicas: cur.num_replicas });
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

function isPermissionViolation(e: unknown): boolean {
  return e instanceof Error && (e.name === 'PermissionViolationError' || (e.cause instanceof Error && e.cause.name === 'PermissionViolationError'));
}

/** An existing bucket (created before these limits, or with others) gets the declared size bounds: `kvm.create` leaves an existing bucket as it is. */
async function ensureBucketLimits(jsm: JetStreamManager, b: BucketSpec): Promise<void> {
  const name = `KV_${b.name}`;
  const { config } = await jsm.streams.info(name);
  if (config.max_bytes === b.maxBytes && config.max_msg_size === b.maxValueSize) return;
  await jsm.streams.update(name, { ...config, max_bytes: b.maxBytes, max_msg_size: b.maxValueSize });
}

/**
 * Creates (or opens) every stream and bucket. Safe to call from every process at once. `replicas`:
 * of what is created (3 on a 3-server cluster); what exists keeps its own. @default 1.
 * `streamMaxAges`: the operator's max ages ({@link StreamMaxAges}); a stream created with other
 * limits is updated in place. @default the declared ones
 */
export async function ensureTopology(nc: NatsConnection, jsm: JetStreamManager, options: { replicas?: number; streamMaxAges?: StreamMaxAges } = {}): Promise<void> {
  const replicas = options.replicas ?? 1;
  for (const s of streamSpecs(options.streamMaxAges)) await ensureStream(jsm, s, replicas);
  const kvm = new Kvm(nc);
  for (const b of BUCKETS) {
    const opts: Partial<KvOptions> = { history: b.history, storage: StorageType.File, max_bytes: b.maxBytes, maxValueSize: b.maxValueSize, replicas };
    if (b.ttlMs !== undefined) opts.ttl = b.ttlMs;
    try {
      await kvm.create(b.name, opts);
      await ensureBucketLimits(jsm, b);
    } catch (e) {
      if (isPermissionViolation(e)) throw e;
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
