/**
 * KV-backed implementations of the pod-worker's state ports: `sl_desired`, `sl_kill`, `sl_worker`,
 * `sl_status` (PodStateStore), `sl_leases` (LeaseStore) and `sl_members` (MemberStore).
 * Decoding is done by the typed KV (zod on read and write); no business rules here.
 */
import { Buckets, DesiredPod, KillRequest, Keys, MemberHeartbeat, PartitionLease, PodStatusRecord, WorkerRecord, errorMessage, nodeToken } from '@splitlet/api';
import { BUCKETS } from '@splitlet/bus';
import type { Bus, KvBucket } from '@splitlet/bus';
import type { LeaseStore, MemberStore, PodStateStore, Versioned } from '../ports.js';

function versioned<T>(e: { value: T | null; revision: number } | null): Versioned<T> | null {
  return e === null || e.value === null ? null : { value: e.value, revision: e.revision };
}

/** PodStateStore over the node's KV buckets. */
export class KvPodStateStore implements PodStateStore {
  readonly #node: string;
  readonly #desired: KvBucket<DesiredPod>;
  readonly #kill: KvBucket<KillRequest>;
  readonly #worker: KvBucket<WorkerRecord>;
  readonly #status: KvBucket<PodStatusRecord>;

  private constructor(node: string, desired: KvBucket<DesiredPod>, kill: KvBucket<KillRequest>, worker: KvBucket<WorkerRecord>, status: KvBucket<PodStatusRecord>) {
    this.#node = node;
    this.#desired = desired;
    this.#kill = kill;
    this.#worker = worker;
    this.#status = status;
  }

  /** Opens the four buckets. */
  static async open(bus: Pick<Bus, 'kv'>, node: string): Promise<KvPodStateStore> {
    const [desired, kill, worker, status] = await Promise.all([
      bus.kv(Buckets.desired, DesiredPod),
      bus.kv(Buckets.kill, KillRequest),
      bus.kv(Buckets.worker, WorkerRecord),
      bus.kv(Buckets.status, PodStatusRecord),
    ]);
    return new KvPodStateStore(node, desired, kill, worker, status);
  }

  async getDesired(partition: number, uid: string): Promise<Versioned<DesiredPod> | null> {
    return versioned(await this.#desired.get(Keys.podInPartition(this.#node, partition, uid)));
  }

  async getKill(partition: number, uid: string): Promise<Versioned<KillRequest> | null> {
    return versioned(await this.#kill.get(Keys.podInPartition(this.#node, partition, uid)));
  }

  async getWorker(partition: number, uid: string): Promise<Versioned<WorkerRecord> | null> {
    return versioned(await this.#worker.get(Keys.podInPartition(this.#node, partition, uid)));
  }

  async getApiStatus(uid: string): Promise<PodStatusRecord | null> {
    return (await this.#status.get(Keys.pod(this.#node, uid)))?.value ?? null;
  }

  putWorker(partition: number, record: WorkerRecord): Promise<number> {
    return this.#worker.put(Keys.podInPartition(this.#node, partition, record.uid), record);
  }

  deleteWorker(partition: number, uid: string): Promise<void> {
    return this.#worker.delete(Keys.podInPartition(this.#node, partition, uid));
  }

  deleteKill(partition: number, uid: string, revision: number): Promise<void> {
    return this.#kill.delete(Keys.podInPartition(this.#node, partition, uid), revision);
  }

  /**
   * Every UID with a message under the partition in `sl_kill`, `sl_desired` or `sl_worker`. Keys
   * whose last message is a delete marker are included: their sync finds nothing and ends.
   */
  async listPartitionUids(partition: number): Promise<string[]> {
    const filter = Keys.partitionPrefix(this.#node, partition);
    const lists = await Promise.all([this.#kill, this.#desired, this.#worker].map((kv) => kv.keys(filter)));
    const uids = new Set<string>();
    for (const list of lists) for (const k of list) uids.add(k.slice(k.lastIndexOf('.') + 1));
    return [...uids];
  }
}

/** LeaseStore over `sl_leases` (bucket TTL expires dead owners). */
export class KvLeaseStore implements LeaseStore {
  readonly #node: string;
  readonly #kv: KvBucket<PartitionLease>;

  private constructor(node: string, kv: KvBucket<PartitionLease>) {
    this.#node = node;
    this.#kv = kv;
  }

  static async open(bus: Pick<Bus, 'kv'>, node: string): Promise<KvLeaseStore> {
    return new KvLeaseStore(node, await bus.kv(Buckets.leases, PartitionLease));
  }

  async get(partition: number): Promise<Versioned<PartitionLease> | null> {
    return versioned(await this.#kv.get(Keys.lease(this.#node, partition)));
  }

  create(partition: number, lease: PartitionLease): Promise<number> {
    return this.#kv.create(Keys.lease(this.#node, partition), lease);
  }

  update(partition: number, lease: PartitionLease, revision: number): Promise<number> {
    return this.#kv.update(Keys.lease(this.#node, partition), lease, revision);
  }

  delete(partition: number, revision: number): Promise<void> {
    return this.#kv.delete(Keys.lease(this.#node, partition), revision);
  }
}

/** The TTL of `sl_members`: a member whose last heartbeat is older is gone. */
const MEMBER_TTL_MS = BUCKETS.find((b) => b.name === Buckets.members)?.ttlMs ?? 10_000;

/**
 * MemberStore over `sl_members`, followed by one watch of the node's member keys. A balance round
 * every 2 s used to list the bucket: each listing created a consumer and read the stream's info;
 * creating consumers was a tenth of nats-server's CPU on a node holding 1,000 pods (its profile).
 * Expiry is silent on nats-server 2.9 (the bucket TTL leaves no marker a watch could see), so a
 * member counts as live until its last heartbeat is older than the bucket's TTL, by this
 * process's clock: the write's server time, never later than when it arrived.
 */
export class KvMemberStore implements MemberStore {
  readonly #node: string;
  readonly #kv: KvBucket<MemberHeartbeat>;
  readonly #now: () => number;
  readonly #signal: AbortSignal | undefined;
  readonly #ttlMs: number;
  /** instance → when its last heartbeat was written (ms, this process's clock). */
  readonly #seen = new Map<string, number>();
  /** The watch, resolved once its replay caught up; undefined before the first `live()` and after it ended. */
  #watching: Promise<void> | undefined;

  private constructor(node: string, kv: KvBucket<MemberHeartbeat>, now: () => number, signal: AbortSignal | undefined, ttlMs: number) {
    this.#node = node;
    this.#kv = kv;
    this.#now = now;
    this.#signal = signal;
    this.#ttlMs = ttlMs;
  }

  /** The watch runs until `signal` aborts (or, without one, for the life of the bus connection). */
  static async open(bus: Pick<Bus, 'kv'>, node: string, now: () => number = Date.now, options: { signal?: AbortSignal; ttlMs?: number } = {}): Promise<KvMemberStore> {
    return new KvMemberStore(node, await bus.kv(Buckets.members, MemberHeartbeat), now, options.signal, options.ttlMs ?? MEMBER_TTL_MS);
  }

  async heartbeat(instance: string): Promise<void> {
    await this.#kv.put(Keys.member(this.#node, instance), {
      type: 'kubelet.podworker.Member.v1',
      instance,
      at: new Date(this.#now()).toISOString(),
    });
  }

  async live(): Promise<string[]> {
    if (this.#signal?.aborted) throw new Error('the member store is closed');
    await (this.#watching ??= this.#watch());
    const now = this.#now();
    for (const [instance, at] of this.#seen) if (now - at >= this.#ttlMs) this.#seen.delete(instance);
    return [...this.#seen.keys()];
  }

  /** Starts the watch; resolves once it has replayed the stored heartbeats. When it ends, the next `live()` starts another. */
  #watch(): Promise<void> {
    const prefix = `${nodeToken(this.#node)}.`;
    return new Promise<void>((resolve, reject) => {
      // Rejects the round still waiting for the replay (after it, a no-op); the next round watches again.
      const ended = (e?: unknown): void => {
        this.#watching = undefined;
        this.#seen.clear();
        reject(new Error(`watching members: ${e === undefined ? 'the watch ended' : errorMessage(e)}`, e === undefined ? undefined : { cause: e }));
      };
      this.#kv
        .watch(
          Keys.nodePrefix(this.#node),
          this.#signal ?? new AbortController().signal,
          (e) => {
            if (!e.key.startsWith(prefix)) return;
            const instance = e.key.slice(prefix.length);
            // A removed member leaves a delete marker; an invalid heartbeat (not written by a
            // pod-worker) is dead-lettered by the watch and never reaches here.
            if (e.value === null) this.#seen.delete(instance);
            else this.#seen.set(instance, Math.min(this.#now(), e.created.getTime()));
          },
          { onCaughtUp: resolve },
        )
        .then((w) => w.done)
        .then(
          () => ended(),
          (e: unknown) => ended(e),
        );
    });
  }

  async remove(instance: string): Promise<void> {
    try {
      await this.#kv.delete(Keys.member(this.#node, instance));
    } catch (e) {
      throw new Error(`removing member ${instance}: ${errorMessage(e)}`, { cause: e });
    }
  }
}
