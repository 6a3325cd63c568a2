/**
 * Test fakes for the pod-worker's ports: deliveries, an in-memory KV, runtime and volume services,
 * status and event sinks, and a controllable sync function.
 */
import type { Context } from '@opentelemetry/api';
import type {
  DesiredPod,
  KillRequest,
  KubeEvent,
  PartitionLease,
  PodStatusRecord,
  PodStatusUpdate,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimePodStatus,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  SyncResult,
  VolumeMountReply,
  VolumeMountRequest,
  VolumeUnmountReply,
  VolumeUnmountRequest,
  WorkerRecord,
} from '@splitlet/api';
import { KubeletError } from '@splitlet/api';
import type { ProbeResultsByType } from '@splitlet/api';
import { hashContainer } from '@splitlet/kube';
import type {
  CachedRuntimeStatus,
  EventSink,
  LeaseStore,
  Log,
  MemberStore,
  PodStateStore,
  PokeDelivery,
  ProbeResultsSource,
  RuntimeClient,
  RuntimeStatusSource,
  StatusSink,
  Versioned,
  VolumeClient,
} from '../src/ports.js';
import type { SyncControl, SyncFunction, SyncReturn } from '../src/pod-workers/pod-workers.js';

/** Lets pending promise continuations run. */
export function tick(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

/** Several turns (a few awaits deep). */
export async function settle(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await tick();
}

export const silentLog: Log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** A log that records records. */
export function recordingLog(): Log & { lines: { level: string; msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const rec = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push(fields === undefined ? { level, msg } : { level, msg, fields });
  };
  return { lines, debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error') };
}

/** A delivery that records how it was settled. */
export class FakeDelivery implements PokeDelivery {
  acked = 0;
  naked = 0;
  workingCalls = 0;
  readonly name: string;
  readonly context?: Context;
  constructor(name = 'd', context?: Context) {
    this.name = name;
    if (context !== undefined) this.context = context;
  }
  ack(): void {
    this.acked++;
  }
  nak(): void {
    this.naked++;
  }
  working(): void {
    this.workingCalls++;
  }
  get settled(): boolean {
    return this.acked + this.naked > 0;
  }
}

/** One sync the fake sync function is running; the test completes it. */
export interface PendingSync {
  readonly uid: string;
  readonly ctl: SyncControl;
  resolve(r?: SyncReturn): void;
  reject(e: unknown): void;
  readonly finished: boolean;
}

/** A sync function whose syncs the test completes by hand; it records per-UID overlaps. */
export function controllableSync(): {
  sync: SyncFunction;
  calls: PendingSync[];
  running(uid?: string): PendingSync[];
  overlaps: string[];
} {
  const calls: PendingSync[] = [];
  const active = new Map<string, number>();
  const overlaps: string[] = [];
  const sync: SyncFunction = (uid, ctl) => {
    const n = (active.get(uid) ?? 0) + 1;
    active.set(uid, n);
    if (n > 1) overlaps.push(uid);
    return new Promise<SyncReturn | undefined>((resolve, reject) => {
      let finished = false;
      const done = (): void => {
        finished = true;
        active.set(uid, (active.get(uid) ?? 1) - 1);
      };
      const call: PendingSync = {
        uid,
        ctl,
        resolve: (r) => {
          if (finished) return;
          done();
          resolve(r);
        },
        reject: (e) => {
          if (finished) return;
          done();
          reject(e);
        },
        get finished() {
          return finished;
        },
      };
      // "stops at its next await"
      ctl.signal.addEventListener('abort', () => call.reject(ctl.signal.reason), { once: true });
      calls.push(call);
    });
  };
  return { sync, calls, running: (uid) => calls.filter((c) => !c.finished && (uid === undefined || c.uid === uid)), overlaps };
}

function conflict(what: string): KubeletError {
  return new KubeletError('Conflict', `${what} conflict`);
}

/** An in-memory KV with revisions shared by all buckets (like one JetStream sequence per bucket). */
export class MemKv<T> {
  readonly entries = new Map<string, { value: T; revision: number }>();
  #rev = 0;
  get(key: string): Versioned<T> | null {
    return this.entries.get(key) ?? null;
  }
  put(key: string, value: T): number {
    const revision = ++this.#rev;
    this.entries.set(key, { value: structuredClone(value), revision });
    return revision;
  }
  create(key: string, value: T): number {
    if (this.entries.has(key)) throw conflict(key);
    return this.put(key, value);
  }
  update(key: string, value: T, revision: number): number {
    const cur = this.entries.get(key);
    if (!cur || cur.revision !== revision) throw conflict(key);
    return this.put(key, value);
  }
  delete(key: string, revision?: number): void {
    const cur = this.entries.get(key);
    if (revision !== undefined && cur?.revision !== revision) throw conflict(key);
    this.entries.delete(key);
  }
}

/** PodStateStore in memory; keys are `<pp>.<uid>`. */
export class FakePodStateStore implements PodStateStore {
  readonly desired = new MemKv<DesiredPod>();
  readonly kill = new MemKv<KillRequest>();
  readonly worker = new MemKv<WorkerRecord>();
  readonly status = new Map<string, PodStatusRecord>();
  /** How many times getDesired and getKill were called. */
  desiredReads = 0;
  killReads = 0;
  async getDesired(pp: number, uid: string) {
    this.desiredReads++;
    return this.desired.get(`${pp}.${uid}`);
  }
  async getKill(pp: number, uid: string) {
    this.killReads++;
    return this.kill.get(`${pp}.${uid}`);
  }
  async getWorker(pp: number, uid: string) {
    return this.worker.get(`${pp}.${uid}`);
  }
  async getApiStatus(uid: string) {
    return this.status.get(uid) ?? null;
  }
  async putWorker(pp: number, record: WorkerRecord) {
    return this.worker.put(`${pp}.${record.uid}`, record);
  }
  async deleteWorker(pp: number, uid: string) {
    this.worker.delete(`${pp}.${uid}`);
  }
  async deleteKill(pp: number, uid: string, revision: number) {
    this.kill.delete(`${pp}.${uid}`, revision);
  }
  async listPartitionUids(pp: number) {
    const out = new Set<string>();
    for (const kv of [this.desired, this.kill, this.worker] as MemKv<unknown>[]) {
      for (const k of kv.entries.keys()) if (k.startsWith(`${pp}.`)) out.add(k.slice(k.indexOf('.') + 1));
    }
    return [...out];
  }
  rec(pp: number, uid: string): WorkerRecord | undefined {
    return this.worker.get(`${pp}.${uid}`)?.value;
  }
}

/** A runtime status source that always has fresh data. */
export class FakeRuntimeCache implements RuntimeStatusSource {
  readonly statuses = new Map<string, RuntimePodStatus>();
  /** The pods' runtime episodes (RuntimeCacheEntry.episode). */
  readonly episodes = new Map<string, NonNullable<CachedRuntimeStatus['episode']>>();
  calls: { uid: string; after: number }[] = [];
  async getNewerThan(uid: string, after: number): Promise<CachedRuntimeStatus> {
    this.calls.push({ uid, after });
    const episode = this.episodes.get(uid);
    return {
      status: this.statuses.get(uid) ?? { uid, name: '', namespace: '', ips: [], sandboxes: [], containers: [] },
      timestamp: after + 1,
      stale: false,
      ...(episode !== undefined ? { episode } : {}),
    };
  }
}

/** A running container status (`hash`: the container's spec hash, as cri-adapter labels it). */
export function runningContainer(name: string, id = `${name}-id`, hash = 'h'): RuntimePodStatus['containers'][number] {
  return { id, name, sandboxId: 'sb1', state: 'CONTAINER_RUNNING', createdAt: 1, startedAt: 2, image: 'busybox', imageRef: 'sha256:1', hash, restartCount: 0 };
}

/** The prober's results per pod, settable by the test. */
export class FakeProbeResults implements ProbeResultsSource {
  readonly results = new Map<string, ProbeResultsByType>();
  async get(uid: string): Promise<ProbeResultsByType | undefined> {
    const r = this.results.get(uid);
    return r === undefined ? undefined : structuredClone(r);
  }
}

/** A fake cri-adapter: syncPod runs every container, killPod stops them; both can be scripted. */
export class FakeRuntime implements RuntimeClient {
  syncCalls: RuntimeSyncPodRequest[] = [];
  killCalls: RuntimeKillPodRequest[] = [];
  /** Results to return from syncPod (default: StartContainer ok for each container). */
  nextResults: SyncResult[] | undefined;
  syncError: Error | undefined;
  killError: Error | undefined;
  /** Containers exit with this code instead of running. */
  exitCode: number | undefined;
  leaveRunningAfterKill = false;
  /** The image-pull window the next syncPod replies report (then cleared). */
  nextPulls: { imagePullStartedAt?: number; imagePullFinishedAt?: number } | undefined;
  /** Runs while a syncPod is in progress (e.g. to let time pass). */
  during: (() => void) | undefined;
  /** The node time syncPod and killPod replies carry (`timestamp`); undefined: none, as an older cri-adapter. */
  replyTimestamp: number | undefined;
  /** The last syncPod reply. */
  lastReply: RuntimeSyncPodReply | undefined;
  async syncPod(req: RuntimeSyncPodRequest): Promise<RuntimeSyncPodReply> {
    this.lastReply = this.#syncPod(req);
    return structuredClone(this.lastReply);
  }
  #syncPod(req: RuntimeSyncPodRequest): RuntimeSyncPodReply {
    this.syncCalls.push(req);
    if (this.syncError) throw this.syncError;
    this.during?.();
    const pulls = this.nextPulls ?? {};
    this.nextPulls = undefined;
    const uid = req.pod.metadata.uid;
    const failed = new Set((this.nextResults ?? []).filter((r) => r.error !== undefined).map((r) => r.target));
    const containers = req.pod.spec.containers
      .filter((c) => !failed.has(c.name))
      .map((c) =>
        this.exitCode === undefined
          ? runningContainer(c.name, `${c.name}-id`, hashContainer(c))
          : {
              ...runningContainer(c.name, `${c.name}-id`, hashContainer(c)),
              state: 'CONTAINER_EXITED' as const,
              exitCode: this.exitCode,
              finishedAt: 3,
              reason: this.exitCode === 0 ? 'Completed' : 'Error',
            },
      );
    return {
      type: 'kubelet.runtime.SyncPodReply.v1',
      ...pulls,
      ...(this.replyTimestamp !== undefined ? { timestamp: this.replyTimestamp } : {}),
      results: this.nextResults ?? req.pod.spec.containers.map((c) => ({ action: 'StartContainer' as const, target: c.name })),
      podStatus: {
        uid,
        name: req.pod.metadata.name,
        namespace: req.pod.metadata.namespace,
        ips: ['10.0.0.2'],
        sandboxes: [{ id: 'sb1', state: 'SANDBOX_READY', createdAt: 1, attempt: 0, ip: '10.0.0.2' }],
        containers,
      },
    };
  }
  async killPod(req: RuntimeKillPodRequest): Promise<RuntimeKillPodReply> {
    this.killCalls.push(req);
    if (this.killError) throw this.killError;
    const pod = req.pod;
    const containers = this.leaveRunningAfterKill
      ? (pod?.spec.containers ?? []).map((c) => runningContainer(c.name))
      : (pod?.spec.containers ?? []).map((c) => ({ ...runningContainer(c.name), state: 'CONTAINER_EXITED' as const, exitCode: 137, finishedAt: 5, reason: 'Error' }));
    return {
      type: 'kubelet.runtime.KillPodReply.v1',
      ...(this.replyTimestamp !== undefined ? { timestamp: this.replyTimestamp } : {}),
      results: [],
      podStatus: {
        uid: req.runningPod.uid,
        name: req.runningPod.name,
        namespace: req.runningPod.namespace,
        ips: [],
        sandboxes: [{ id: 'sb1', state: 'SANDBOX_NOTREADY', createdAt: 1, attempt: 0 }],
        containers,
      },
    };
  }
}

export class FakeVolumes implements VolumeClient {
  mounts: VolumeMountRequest[] = [];
  unmounts: VolumeUnmountRequest[] = [];
  mountError: Error | undefined;
  /** When set, mount waits for this promise. */
  mountGate: Promise<void> | undefined;
  async mount(req: VolumeMountRequest): Promise<VolumeMountReply> {
    this.mounts.push(req);
    if (this.mountGate) await this.mountGate;
    if (this.mountError) throw this.mountError;
    return { type: 'kubelet.volume.MountReply.v1', podDir: `/var/lib/kubelet/pods/${req.pod.metadata.uid}`, volumes: {} };
  }
  async unmount(req: VolumeUnmountRequest): Promise<VolumeUnmountReply> {
    this.unmounts.push(req);
    return { type: 'kubelet.volume.UnmountReply.v1', unmounted: [] };
  }
}

export class FakeStatusSink implements StatusSink {
  updates: PodStatusUpdate[] = [];
  async send(u: PodStatusUpdate): Promise<void> {
    this.updates.push(structuredClone(u));
  }
  of(uid: string): PodStatusUpdate[] {
    return this.updates.filter((u) => u.uid === uid);
  }
}

export class FakeEventSink implements EventSink {
  events: KubeEvent[] = [];
  async record(e: KubeEvent): Promise<void> {
    this.events.push(e);
  }
}

/** LeaseStore in memory with a settable "server time" TTL. */
export class FakeLeaseStore implements LeaseStore {
  readonly kv = new MemKv<PartitionLease>();
  failUpdates = false;
  async get(pp: number) {
    return this.kv.get(String(pp));
  }
  async create(pp: number, lease: PartitionLease) {
    return this.kv.create(String(pp), lease);
  }
  async update(pp: number, lease: PartitionLease, revision: number) {
    if (this.failUpdates) throw new Error('connection lost');
    return this.kv.update(String(pp), lease, revision);
  }
  async delete(pp: number, revision: number) {
    this.kv.delete(String(pp), revision);
  }
}

export class FakeMemberStore implements MemberStore {
  readonly members = new Set<string>();
  async heartbeat(instance: string) {
    this.members.add(instance);
  }
  async live() {
    return [...this.members];
  }
  async remove(instance: string) {
    this.members.delete(instance);
  }
}
