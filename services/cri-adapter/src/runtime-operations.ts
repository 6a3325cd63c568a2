/**
 * The runtime operations the cri-adapter serves — syncPod, killPod, getPodStatus, relist and
 * garbageCollect — with the guards around them: fencing, one operation per pod UID, a pleg poke
 * after any runtime change, and persisting the backoff tables when they moved.
 */
import type {
  RuntimeGarbageCollectReply,
  RuntimeGarbageCollectRequest,
  RuntimeGetPodStatusReply,
  RuntimeGetPodStatusRequest,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimeRelistReply,
  RuntimeRelistRequest,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
} from '@splitlet/api';
import type { Backoff, BackoffState } from '@splitlet/kube';
import type { Clock, KeyedMutex } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { PullSecretResolver } from './credentials/pull-secrets.js';
import type { Fences } from './guard/durable-fences.js';
import type { ContainerGC } from './kuberuntime/container-gc.js';
import type { KubeGenericRuntimeManager } from './kuberuntime/runtime-manager.js';
import type { RuntimeEventForwarder } from './evented/runtime-event-forwarder.js';
import { podScope, type PodOperation } from './pod-scope.js';
import type { StateStore } from './ports.js';

/** At most this many pods' last change times are kept (the oldest go first). */
export const MAX_CHANGE_TIMES = 10_000;

/** The persisted backoff tables of a node. */
export interface BackoffTables {
  readonly crashLoop: BackoffState;
  readonly imagePull: BackoffState;
}

/** Dependencies of {@link RuntimeOperations}. */
export interface RuntimeOperationsOptions {
  readonly manager: KubeGenericRuntimeManager;
  /** Resolves the request's pull secret names on the node (the kubelet's getPullSecretsForPod). */
  readonly pullSecrets: PullSecretResolver;
  /** Container garbage collection (garbageCollect). */
  readonly gc: ContainerGC;
  /** Fencing; `admit` waits until a newer epoch is stored, so a restart keeps refusing older ones. */
  readonly fences: Fences;
  readonly podLocks: KeyedMutex;
  /** Asks pleg to relist pod `uid` now (its operation changed the runtime: podScope counted a mutating CRI call). */
  readonly pokePleg: (uid: string) => void;
  /**
   * The evented PLEG's hooks around each pod operation (RuntimeEventForwarder): `opEnded` returns
   * whether the operation's changes reach pleg without a poke (the runtime's events are live); it
   * gets what a SyncPod or KillPod read after its changes. Absent: every change pokes.
   */
  readonly runtimeEvents?: Pick<RuntimeEventForwarder, 'opStarted' | 'opEnded'>;
  /** Called when each pod operation ends, with its pod's UID (the event recorder publishes what it held for it). */
  readonly operationEnded?: (uid: string) => void;
  readonly backoffs: { readonly crashLoop: Backoff; readonly imagePull: Backoff };
  /** Where the backoff tables are persisted; absent: memory only. */
  readonly backoffStore?: StateStore<BackoffTables> | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * The operations. Safe for concurrent use: operations on one pod UID run one at a time in arrival
 * order, operations on different pods run concurrently, relist never waits for a pod.
 */
export class RuntimeOperations {
  readonly #o: RuntimeOperationsOptions;
  #savedBackoffs = '';
  #saving: Promise<void> = Promise.resolve();
  readonly #inflight = new Set<Promise<unknown>>();
  /** The last garbage collection run queued (runs go one at a time). */
  #gcTail: Promise<unknown> = Promise.resolve();
  /** Per pod, the node's time after its last operation that changed the runtime (see #replyTime). */
  readonly #changedAt = new Map<string, number>();
  /** The latest change time `#changedAt` dropped (its bound), else this instance's start: no pod it does not list changed later. */
  #changesKnownSince: number;

  constructor(options: RuntimeOperationsOptions) {
    this.#o = options;
    this.#changesKnownSince = options.clock.now();
    this.#savedBackoffs = JSON.stringify(this.#tables());
  }

  #tables(): BackoffTables {
    return { crashLoop: this.#o.backoffs.crashLoop.toJSON(), imagePull: this.#o.backoffs.imagePull.toJSON() };
  }

  /**
   * Runtime SyncPod for the request's pod: its pull secrets are resolved here, on the node (only
   * their names travel on the bus), then kuberuntime SyncPod runs. Refuses a stale fence (FencedOff)
   * before and after waiting for the pod's lock.
   */
  syncPod(req: RuntimeSyncPodRequest): Promise<RuntimeSyncPodReply> {
    this.#o.fences.check(req.fence);
    return this.#track(
      this.#guarded(req.pod.metadata.uid, async (op) => {
        await this.#o.fences.admit(req.fence);
        const pullSecrets = await this.#o.pullSecrets.getPullSecretsForPod(req.pod, req.pullSecrets);
        const r = await this.#o.manager.syncPod({
          pod: req.pod,
          volumes: req.volumes,
          pullSecrets,
          podDir: req.podDir,
          probes: req.probes,
          cachedStatus: req.podStatus,
          cachedAt: req.podStatusTimestamp,
          lastChangeAt: this.#changedAt.get(req.pod.metadata.uid) ?? this.#changesKnownSince,
        });
        // After the last runtime change and before pleg hears of it (once this returns).
        const timestamp = this.#replyTime(op);
        if (r.statusReadAt !== undefined) op.observed = { status: r.podStatus, readAt: r.statusReadAt, timestamp };
        return {
          type: 'kubelet.runtime.SyncPodReply.v1',
          results: r.results,
          podStatus: r.podStatus,
          ...(r.imagePullStartedAt !== undefined ? { imagePullStartedAt: r.imagePullStartedAt } : {}),
          ...(r.imagePullFinishedAt !== undefined ? { imagePullFinishedAt: r.imagePullFinishedAt } : {}),
          timestamp,
        };
      }),
    );
  }

  /** Runtime KillPod for the request's pod (or orphan). Fenced like {@link syncPod}. */
  killPod(req: RuntimeKillPodRequest): Promise<RuntimeKillPodReply> {
    this.#o.fences.check(req.fence);
    return this.#track(
      this.#guarded(req.runningPod.uid, async (op) => {
        await this.#o.fences.admit(req.fence);
        const r = await this.#o.manager.killPod({ pod: req.pod, runningPod: req.runningPod, gracePeriodOverride: req.gracePeriodOverride, cachedStatus: req.podStatus });
        const timestamp = this.#replyTime(op);
        if (r.statusReadAt !== undefined) op.observed = { status: r.podStatus, readAt: r.statusReadAt, timestamp };
        return { type: 'kubelet.runtime.KillPodReply.v1', results: r.results, podStatus: r.podStatus, timestamp };
      }),
    );
  }

  /** The pod's runtime status, read after any running operation on it finished. */
  getPodStatus(req: RuntimeGetPodStatusRequest): Promise<RuntimeGetPodStatusReply> {
    return this.#track(
      this.#o.podLocks.run(req.pod.uid, async () => {
        const timestamp = this.#o.clock.now();
        const podStatus = await this.#o.manager.getPodStatus(req.pod);
        return { type: 'kubelet.runtime.GetPodStatusReply.v1', podStatus, timestamp };
      }),
    );
  }

  /** Every runtime pod, or the pods `req.uids` names; `timestamp` is taken before the runtime is read (the cache time). */
  relist(req: RuntimeRelistRequest): Promise<RuntimeRelistReply> {
    return this.#track(
      (async (): Promise<RuntimeRelistReply> => {
        const timestamp = this.#o.clock.now();
        const pods = await this.#o.manager.relist(req.uids);
        return { type: 'kubelet.runtime.RelistReply.v1', pods, timestamp };
      })(),
    );
  }

  /**
   * Container garbage collection (see ContainerGC). Runs go one at a time: a request that arrives
   * while one runs waits for it. Each pod's part runs under the pod's lock, so it never overlaps a
   * SyncPod or KillPod of that pod. A pod not in `keep` is one whose content should be removed once
   * all sources are ready (ShouldPodContentBeRemoved); before that, no pod's is.
   */
  garbageCollect(req: RuntimeGarbageCollectRequest): Promise<RuntimeGarbageCollectReply> {
    const keep = new Set(req.keep);
    const run = this.#gcTail.then(() =>
      this.#o.gc.garbageCollect({
        policy: req.policy,
        allSourcesReady: req.allSourcesReady,
        shouldPodContentBeRemoved: (uid) => req.allSourcesReady && !keep.has(uid),
        withPodLock: (uid, fn) =>
          this.#guarded(uid, () => {
            this.#o.manager.forgetKnownStatus(uid);
            return fn();
          }),
      }),
    );
    this.#gcTail = run.catch(() => undefined);
    return this.#track(
      run.then((r) => ({
        type: 'kubelet.runtime.GarbageCollectReply.v1' as const,
        removedContainers: r.removedContainers,
        removedSandboxes: r.removedSandboxes,
        removedLogDirs: r.removedLogDirs,
        ...(r.error !== undefined ? { error: r.error } : {}),
      })),
    );
  }

  /** Waits for the operations in flight, then for pending backoff saves (shutdown). */
  async flush(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
    await this.#saving;
  }

  /** Operations in flight. */
  get inflight(): number {
    return this.#inflight.size;
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#inflight.add(p);
    const forget = (): void => {
      this.#inflight.delete(p);
    };
    p.then(forget, forget);
    return p;
  }

  /**
   * Runs `fn` as pod `uid`'s operation, under its lock. Afterwards, if it changed the runtime, pleg
   * learns of it: through the runtime's events and what the operation read afterwards while the
   * event stream is live, else by a relist poke naming the pod.
   */
  async #guarded<T>(uid: string, fn: (op: PodOperation) => Promise<T>): Promise<T> {
    return this.#o.podLocks.run(uid, () =>
      podScope.run(uid, async (op) => {
        this.#o.runtimeEvents?.opStarted(uid);
        try {
          return await fn(op);
        } finally {
          // Only this operation's own changes: concurrent operations on other pods do not count.
          if (op.mutations > 0) this.#noteChange(uid, op.changedAt ?? this.#o.clock.now());
          const covered = this.#o.runtimeEvents?.opEnded(uid, op.mutations > 0 ? op.observed : undefined) ?? false;
          if (op.mutations > 0 && !covered) this.#o.pokePleg(uid);
          this.#o.operationEnded?.(uid);
          this.#persistBackoffs();
        }
      }),
    );
  }

  /**
   * The reply's `timestamp`: a time after which a relist sees the pod's runtime as the operation
   * left it — the pleg cache the pod-worker's next sync waits for is newer than this. After runtime
   * changes, now (after the last one, before the pleg poke sent once the operation returns); after
   * an operation that read the runtime, now (the next sync's cache must be as new as the status
   * replied); after one that made no CRI call (its status was the pleg cache's, which agreed with the
   * pod's last one), the time of the pod's last change — were it now, the next sync would wait for
   * a relist newer than a sync that changed nothing, i.e. the next periodic one, while the relist the
   * last change started already satisfies it.
   */
  #replyTime(op: PodOperation): number {
    const now = this.#o.clock.now();
    if (op.mutations > 0) {
      op.changedAt = now;
      return now;
    }
    return op.calls === 0 ? (this.#changedAt.get(op.uid) ?? now) : now;
  }

  /** Remembers pod `uid`'s last runtime change (bounded: the oldest entries go first). */
  #noteChange(uid: string, at: number): void {
    this.#changedAt.delete(uid);
    this.#changedAt.set(uid, at);
    if (this.#changedAt.size > MAX_CHANGE_TIMES) {
      const oldest = this.#changedAt.keys().next().value;
      if (oldest !== undefined) {
        this.#changesKnownSince = Math.max(this.#changesKnownSince, this.#changedAt.get(oldest)!);
        this.#changedAt.delete(oldest);
      }
    }
  }

  #persistBackoffs(): void {
    const store = this.#o.backoffStore;
    if (store === undefined) return;
    const tables = this.#tables();
    const json = JSON.stringify(tables);
    if (json === this.#savedBackoffs) return;
    this.#savedBackoffs = json;
    this.#saving = this.#saving
      .then(() => store.save(tables))
      .catch((e: unknown) => {
        this.#savedBackoffs = '';
        this.#o.logger.warn('could not persist the backoff tables', { err: e });
      });
  }
}
