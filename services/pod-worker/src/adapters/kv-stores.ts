/**
 * KV-backed implementations of the pod-worker's state ports: `sl_desired`, `sl_kill`, `sl_worker`,
 * `sl_status` (PodStateStore), `sl_leases` (LeaseStore) and `sl_members` (MemberStore).
 * Decoding is done by the typed KV (zod on read and write); no business rules here.
 */
import { Buckets, DesiredPod, KillRequest, Keys, MemberHeartbeat, PartitionLease, PodStatusRecord, WorkerRecord, errorMessage, nodeToken } from '@splitlet/api';
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

/** MemberStore over `sl_members` (bucket TTL expires silent members). */
export class KvMemberStore implements MemberStore {
  readonly #node: string;
  readonly #kv: KvBucket<MemberHeartbeat>;
  readonly #now: () => number;

  private constructor(node: string, kv: KvBucket<MemberHeartbeat>, now: () => number) {
    this.#node = node;
    this.#kv = kv;
    this.#now = now;
  }

  static async open(bus: Pick<Bus, 'kv'>, node: string, now: () => number = Date.now): Promise<KvMemberStore> {
    return new KvMemberStore(node, await bus.kv(Buckets.members, MemberHeartbeat), now);
  }

  async heartbeat(instance: string): Promise<void> {
    await this.#kv.put(Keys.member(this.#node, instance), {
      type: 'kubelet.podworker.Member.v1',
      instance,
      at: new Date(this.#now()).toISOString(),
    });
  }

  async live(): Promise<string[]> {
    const prefix = `${nodeToken(this.#node)}.`;
    // A removed member leaves a delete marker until it expires: only keys whose value is present count.
    // An invalid heartbeat (not written by a pod-worker) is dead-lettered by the listing and does not
    // count, instead of failing the whole balance round.
    return (await this.#kv.list(Keys.nodePrefix(this.#node))).filter((e) => e.value !== null && e.key.startsWith(prefix)).map((e) => e.key.slice(prefix.length));
  }

  async remove(instance: string): Promise<void> {
    try {
      await this.#kv.delete(Keys.member(this.#node, instance));
    } catch (e) {
      throw new Error(`removing member ${instance}: ${errorMessage(e)}`, { cause: e });
    }
  }
}
