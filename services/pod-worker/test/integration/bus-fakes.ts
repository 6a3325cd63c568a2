/**
 * Bus-side stand-ins for the processes around pod-worker in integration tests: cri-adapter and
 * volume-manager responders that record per-pod concurrency and fences, a pleg that advances the
 * relist mark, a status-manager that records status updates, and a sync-loop that writes desired
 * records and kill requests and pokes.
 */
import {
  Buckets,
  DesiredPod,
  Keys,
  KillRequest,
  PodStatusUpdate,
  RelistMark,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  Subjects,
  VolumeMountReply,
  VolumeMountRequest,
  VolumeUnmountReply,
  VolumeUnmountRequest,
  WorkPoke,
  partitionOf,
} from '@splitlet/api';
import type { BoundPod, Fence, SyncPodType } from '@splitlet/api';
import type { NatsBus } from '@splitlet/bus';
import { FenceKeeper } from '@splitlet/kube';

/** A request held before its fence check (as a slow receiver would hold it), until released. */
export interface HeldRequest {
  /** Resolves with the fence of the held request once it arrived. */
  readonly arrived: Promise<Fence>;
  /** Lets the held request go on to its fence check. */
  release(): void;
}

/**
 * Per-pod concurrency and fencing checks shared by the fake responders. The fence check is the
 * receivers' own (`FenceKeeper`): a refused request is recorded in `staleFences` and answered
 * with the `FencedOff` error.
 */
export class CallLedger {
  readonly active = new Map<string, number>();
  readonly overlaps: string[] = [];
  readonly staleFences: string[] = [];
  readonly fences = new FenceKeeper();
  readonly calls: { op: string; uid: string; fence: Fence }[] = [];
  readonly #holds = new Map<string, { fence: (f: Fence) => void; gate: Promise<void> }>();

  /** Holds the next `op` request for `uid` before its fence check, until released. */
  hold(op: string, uid: string): HeldRequest {
    let arrived!: (f: Fence) => void;
    let release!: () => void;
    const arrivedP = new Promise<Fence>((r) => (arrived = r));
    const gate = new Promise<void>((r) => (release = r));
    this.#holds.set(`${op} ${uid}`, { fence: arrived, gate });
    return { arrived: arrivedP, release };
  }

  async run<T>(op: string, uid: string, fence: Fence, work: () => Promise<T>): Promise<T> {
    const held = this.#holds.get(`${op} ${uid}`);
    if (held !== undefined) {
      this.#holds.delete(`${op} ${uid}`);
      held.fence(fence);
      await held.gate;
    }
    try {
      this.fences.check(fence);
    } catch (e) {
      this.staleFences.push(`${op} ${uid}: ${(e as Error).message}`);
      throw e;
    }
    const n = (this.active.get(uid) ?? 0) + 1;
    this.active.set(uid, n);
    if (n > 1) this.overlaps.push(`${op} ${uid}`);
    this.calls.push({ op, uid, fence });
    try {
      return await work();
    } finally {
      this.active.set(uid, (this.active.get(uid) ?? 1) - 1);
    }
  }

  count(op: string, uid?: string): number {
    return this.calls.filter((c) => c.op === op && (uid === undefined || c.uid === uid)).length;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** cri-adapter and volume-manager responders. */
export function serveFakeNodeServices(bus: NatsBus, node: string, ledger: CallLedger, signal: AbortSignal, delayMs = 3): void {
  const opts = { queue: 'fake', signal };
  bus.serve(
    Subjects.rpc.runtime(node, 'syncPod'),
    RuntimeSyncPodRequest,
    RuntimeSyncPodReply,
    (req) =>
      ledger.run('syncPod', req.pod.metadata.uid, req.fence, async () => {
        await pause(delayMs);
        const pod = req.pod;
        return {
          type: 'kubelet.runtime.SyncPodReply.v1' as const,
          results: pod.spec.containers.map((c) => ({ action: 'StartContainer' as const, target: c.name })),
          podStatus: {
            uid: pod.metadata.uid,
            name: pod.metadata.name,
            namespace: pod.metadata.namespace,
            ips: ['10.1.0.2'],
            sandboxes: [{ id: `sb-${pod.metadata.uid}`, state: 'SANDBOX_READY' as const, createdAt: Date.now(), attempt: 0, ip: '10.1.0.2' }],
            containers: pod.spec.containers.map((c) => ({
              id: `${pod.metadata.uid}-${c.name}`,
              name: c.name,
              sandboxId: `sb-${pod.metadata.uid}`,
              state: 'CONTAINER_RUNNING' as const,
              createdAt: Date.now(),
              startedAt: Date.now(),
              image: c.image ?? '',
              imageRef: 'sha256:abc',
              hash: 'h',
              restartCount: 0,
            })),
          },
        };
      }),
    opts,
  );
  bus.serve(
    Subjects.rpc.runtime(node, 'killPod'),
    RuntimeKillPodRequest,
    RuntimeKillPodReply,
    (req) =>
      ledger.run('killPod', req.runningPod.uid, req.fence, async () => {
        await pause(delayMs);
        return {
          type: 'kubelet.runtime.KillPodReply.v1' as const,
          results: [],
          podStatus: { uid: req.runningPod.uid, name: req.runningPod.name, namespace: req.runningPod.namespace, ips: [], sandboxes: [], containers: [] },
        };
      }),
    opts,
  );
  bus.serve(
    Subjects.rpc.volume(node, 'mount'),
    VolumeMountRequest,
    VolumeMountReply,
    (req) =>
      ledger.run('mount', req.pod.metadata.uid, req.fence, async () => {
        await pause(delayMs);
        return { type: 'kubelet.volume.MountReply.v1' as const, podDir: `/tmp/pods/${req.pod.metadata.uid}`, volumes: {} };
      }),
    opts,
  );
  bus.serve(
    Subjects.rpc.volume(node, 'unmount'),
    VolumeUnmountRequest,
    VolumeUnmountReply,
    (req) =>
      ledger.run('unmount', req.uid, req.fence, async () => {
        await pause(delayMs);
        return { type: 'kubelet.volume.UnmountReply.v1' as const, unmounted: [] };
      }),
    opts,
  );
}

/** pleg's relist mark, advanced every `periodMs`. Returns a stop function. */
export async function runFakePleg(bus: NatsBus, node: string, periodMs = 100): Promise<() => void> {
  const kv = await bus.kv(Buckets.runtime, RelistMark);
  const put = () => kv.put(Keys.relistMark(node), { type: 'kubelet.pleg.RelistMark.v1', timestamp: Date.now() }).catch(() => undefined);
  await put();
  const t = setInterval(() => void put(), periodMs);
  return () => clearInterval(t);
}

/** The status updates seen on `sl.<node>.status.*`, by pod. */
export class StatusLog {
  readonly byUid = new Map<string, PodStatusUpdate[]>();
  static listen(bus: NatsBus, node: string, signal: AbortSignal): StatusLog {
    const log = new StatusLog();
    bus.subscribeCore(
      Subjects.statusAll(node),
      (data) => {
        const p = PodStatusUpdate.safeParse(data);
        if (!p.success) return;
        const list = log.byUid.get(p.data.uid) ?? [];
        list.push(p.data);
        log.byUid.set(p.data.uid, list);
      },
      signal,
    );
    return log;
  }
  last(uid: string): PodStatusUpdate | undefined {
    return this.byUid.get(uid)?.at(-1);
  }
  kinds(uid: string): string[] {
    return (this.byUid.get(uid) ?? []).map((u) => u.kind);
  }
}

/** What sync-loop would do: desired `put`, kill `create`, pokes naming the revisions it last wrote (0: no kill). */
export class FakeSyncLoop {
  readonly #bus: NatsBus;
  readonly #node: string;
  readonly #partitions: number;
  readonly #revisions = new Map<string, number>();
  readonly #killRevisions = new Map<string, number>();
  private constructor(bus: NatsBus, node: string, partitions: number) {
    this.#bus = bus;
    this.#node = node;
    this.#partitions = partitions;
  }
  static create(bus: NatsBus, node: string, partitions: number): FakeSyncLoop {
    return new FakeSyncLoop(bus, node, partitions);
  }
  key(uid: string): string {
    return Keys.podInPartition(this.#node, partitionOf(uid, this.#partitions), uid);
  }
  /** A poke naming the revisions of the pod's records as this loop last wrote them; `desiredRevision: null` names none. */
  async poke(uid: string, kind: SyncPodType, o: { desiredRevision?: number | null } = {}): Promise<void> {
    const desiredRevision = o.desiredRevision === null ? undefined : (o.desiredRevision ?? this.#revisions.get(uid));
    await this.#bus.publish(WorkPoke, Subjects.work(this.#node, partitionOf(uid, this.#partitions), uid), {
      type: 'kubelet.podworker.WorkPoke.v1',
      uid,
      kind,
      ...(desiredRevision !== undefined ? { desiredRevision } : {}),
      killRevision: this.#killRevisions.get(uid) ?? 0,
    });
  }
  async create(pod: BoundPod, updateType: SyncPodType = 'create'): Promise<void> {
    const kv = await this.#bus.kv(Buckets.desired, DesiredPod);
    const uid = pod.metadata.uid;
    this.#revisions.set(uid, await kv.put(this.key(uid), { type: 'kubelet.podworker.DesiredPod.v1', pod, updateType, startTime: new Date().toISOString() }));
    await this.poke(uid, updateType);
  }
  async remove(pod: BoundPod): Promise<void> {
    const uid = pod.metadata.uid;
    const desired = await this.#bus.kv(Buckets.desired, DesiredPod);
    const kill = await this.#bus.kv(Buckets.kill, KillRequest);
    this.#revisions.delete(uid);
    await desired.delete(this.key(uid));
    this.#killRevisions.set(
      uid,
      await kill.create(this.key(uid), { type: 'kubelet.podworker.KillRequest.v1', uid, reason: 'removed', pod, requestedAt: new Date().toISOString() }),
    );
    await this.poke(uid, 'kill');
  }
}

/** A small pod with a unique UID. */
export function testPod(i: number, prefix = 'p'): BoundPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${prefix}${i}`,
      namespace: 'default',
      uid: `${prefix}uid-${String(i).padStart(4, '0')}`,
      annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.seen': new Date().toISOString() },
    },
    spec: { containers: [{ name: 'c', image: 'busybox' }], restartPolicy: 'Always', terminationGracePeriodSeconds: 1 },
  };
}
