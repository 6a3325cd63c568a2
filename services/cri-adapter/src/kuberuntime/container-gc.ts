/**
 * Container garbage collection: removes the dead containers of each (pod, container name) beyond
 * the policy's limits — every one of them for a pod whose content should be removed — then the dead
 * sandboxes nothing refers to, then the log directories of pods that are gone. Running containers
 * and ready sandboxes are never touched.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_gc.go (containerGC: evictableContainers,
 * evictContainers, removeOldestN, evictSandboxes, removeSandbox, evictPodLogsDirectories,
 * GarbageCollect) and helpers.go (parsePodUIDFromLogsDirectory); containers are removed with
 * {@link removeContainer} (their log files first).
 *
 * ```
 *  GarbageCollect ─► evictContainers: list ─► per pod with dead containers, under its lock, relisted:
 *                  │     removable pod (all sources ready): remove every dead container
 *                  │     else: keep the newest MaxPerPodContainer per container name
 *                  │   ─► MaxContainers: an even share per (pod, name), then the oldest overall
 *                  ├─► evictSandboxes: list ─► per pod, under its lock, relisted:
 *                  │     removable pod: remove every inactive sandbox; else all but the newest
 *                  └─► evictPodLogsDirectories (all sources ready): removable pods' directories
 *  errors of the three steps are aggregated; a failed removal is logged and retried next run
 * ```
 *
 * Where splitlet differs, and why: the kubelet asks its pod workers at the moment it decides; here
 * the pods to keep come with the request, from sync-loop's views a moment earlier. So every decision
 * about a pod is made under the pod's lock on a fresh listing (it never races a SyncPod or KillPod of
 * that pod), and a pod that looks removable while the runtime shows it a ready sandbox or a running
 * container (a pod created after that snapshot, or an orphan not killed yet) keeps its newest dead
 * containers and its log directory until it has stopped. The legacy `/var/log/containers` symlinks
 * are not handled: splitlet never creates them.
 *
 * Slightly over ~450 lines: it ports kuberuntime_gc.go whole, one function per kubelet function, so
 * the two read side by side.
 *
 * One file on purpose: the three GC passes (containers, sandboxes, log dirs) run in one order under one lock, as kuberuntime_gc.go does.
 */
import { join } from 'node:path';
import { SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { errorMessage, type ContainerGCPolicy } from '@splitlet/api';
import type { Container as CriContainer, PodSandbox } from '@splitlet/cri';
import type { Clock } from '@splitlet/service';
import { withSpan, type Logger } from '@splitlet/telemetry';
import type { CriRuntime, LogFileRemover } from '../ports.js';
import { aggregateErrors } from './aggregate-errors.js';
import { RuntimeLabels } from './labels.js';
import { removeContainer } from './remove-container.js';
import type { KubeGenericRuntimeManager } from './runtime-manager.js';

/** A dead container considered for removal (containerGCInfo). */
export interface GcContainer {
  readonly id: string;
  readonly name: string;
  /** Creation time, Unix nanoseconds. */
  readonly createdAt: bigint;
  /** In state UNKNOWN: it could be running, so it is stopped before removal. */
  readonly unknown: boolean;
}

/** What one run needs besides the runtime. */
export interface GarbageCollectInput {
  readonly policy: ContainerGCPolicy;
  /** sourcesReady.AllReady(): gates removing whole pods' containers and log directories. */
  readonly allSourcesReady: boolean;
  /** podStateProvider.ShouldPodContentBeRemoved. */
  readonly shouldPodContentBeRemoved: (uid: string) => boolean;
  /** Runs `fn` holding the pod's lock: no SyncPod or KillPod of the pod runs meanwhile. */
  readonly withPodLock: <T>(uid: string, fn: () => Promise<T>) => Promise<T>;
}

/** What one run did. */
export interface GarbageCollectResult {
  readonly removedContainers: number;
  readonly removedSandboxes: number;
  readonly removedLogDirs: number;
  /** The errors of the steps that failed, aggregated; undefined when every step succeeded. */
  readonly error?: string;
}

/** Dependencies of {@link ContainerGC}. */
export interface ContainerGCOptions {
  readonly runtime: CriRuntime;
  /** Stops containers in state UNKNOWN before their removal. */
  readonly manager: Pick<KubeGenericRuntimeManager, 'killContainer'>;
  readonly logFiles: LogFileRemover;
  /** The root of the pod log directories (`/var/log/pods`). */
  readonly podLogDir: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  /** Pods collected at once. @default 4 */
  readonly concurrency?: number;
}

/** The delimiter of pod log directory names `<namespace>_<name>_<uid>` (logPathDelimiter). */
const LOG_PATH_DELIMITER = '_';

/**
 * The pod UID of a pod log directory name: its last `_`-separated field, so both the old `<uid>`
 * and the current `<namespace>_<name>_<uid>` layouts work.
 *
 * Models kuberuntime.parsePodUIDFromLogsDirectory.
 */
export function parsePodUIDFromLogsDirectory(name: string): string {
  const parts = name.split(LOG_PATH_DELIMITER);
  return parts[parts.length - 1] ?? '';
}

function nanos(createdAt: string): bigint {
  try {
    return BigInt(createdAt === '' ? '0' : createdAt);
  } catch {
    return 0n;
  }
}

/** Newest first by creation time (byCreated / sandboxByCreated). */
function newestFirst<T extends { createdAt: bigint }>(a: T, b: T): number {
  return a.createdAt === b.createdAt ? 0 : a.createdAt > b.createdAt ? -1 : 1;
}

function podUidOf(labels: Readonly<Record<string, string>>): string {
  return labels[RuntimeLabels.podUid] ?? '';
}

/**
 * The evictable containers — not running, created at or before `newestGCTime` — of the pods that
 * carry the kubelet's pod-uid label, grouped by pod UID and container name, newest first.
 *
 * Models containerGC.evictableContainers.
 */
export function evictableContainers(containers: readonly CriContainer[], newestGCTime: bigint): Map<string, Map<string, GcContainer[]>> {
  const byPod = new Map<string, Map<string, GcContainer[]>>();
  for (const c of containers) {
    if (c.state === 'CONTAINER_RUNNING') continue;
    const createdAt = nanos(c.createdAt);
    if (createdAt > newestGCTime) continue;
    const uid = podUidOf(c.labels);
    if (uid === '') continue;
    const name = c.metadata?.name ?? c.labels[RuntimeLabels.containerName] ?? '';
    let units = byPod.get(uid);
    if (units === undefined) byPod.set(uid, (units = new Map<string, GcContainer[]>()));
    let unit = units.get(name);
    if (unit === undefined) units.set(name, (unit = []));
    unit.push({ id: c.id, name, createdAt, unknown: c.state === 'CONTAINER_UNKNOWN' });
  }
  for (const units of byPod.values()) for (const unit of units.values()) unit.sort(newestFirst);
  return byPod;
}

/**
 * The sandboxes of one pod to remove, oldest first: every inactive one when the pod's content
 * should be removed, else every inactive one but the newest sandbox. A sandbox is active when it is
 * ready or a container still refers to it (`referenced`: {@link referencedSandboxes}).
 *
 * Models containerGC.evictSandboxes and removeOldestNSandboxes for one pod.
 */
export function sandboxesToRemove(sandboxes: readonly PodSandbox[], referenced: ReadonlySet<string>, podRemovable: boolean): string[] {
  // The common case, a pod that keeps its one sandbox, allocates nothing.
  if (!podRemovable && sandboxes.length <= 1) return [];
  const infos = sandboxes.map((s) => ({ id: s.id, createdAt: nanos(s.createdAt), active: s.state === 'SANDBOX_READY' || referenced.has(s.id) })).sort(newestFirst);
  const numToKeep = podRemovable ? 0 : Math.min(1, infos.length);
  const out: string[] = [];
  for (let i = infos.length - 1; i >= numToKeep; i--) {
    const s = infos[i];
    if (s !== undefined && !s.active) out.push(s.id);
  }
  return out;
}

/** The IDs of the sandboxes some container refers to. */
export function referencedSandboxes(containers: readonly CriContainer[]): Set<string> {
  return new Set(containers.map((c) => c.podSandboxId));
}

/** What one pod has in the runtime right now. */
interface PodObjects {
  readonly containers: CriContainer[];
  readonly sandboxes: PodSandbox[];
}

function isPodActive(objs: PodObjects): boolean {
  return objs.sandboxes.some((s) => s.state === 'SANDBOX_READY') || objs.containers.some((c) => c.state === 'CONTAINER_RUNNING');
}

/** The counters and errors of one run. */
interface Tally {
  containers: number;
  sandboxes: number;
  logDirs: number;
  readonly errors: string[];
}

async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
}

/**
 * The container garbage collector of one node's runtime. Runs are not reentrant: the caller runs
 * one at a time (RuntimeOperations serializes them).
 */
export class ContainerGC {
  readonly #o: ContainerGCOptions;

  constructor(options: ContainerGCOptions) {
    this.#o = options;
  }

  /**
   * One garbage collection run, in span `Containers/GarbageCollect`. Never throws: the errors of
   * the steps that could not run (a failed listing) come back aggregated in `error`; a container or
   * sandbox that could not be removed is logged and left for the next run.
   *
   * Models containerGC.GarbageCollect.
   */
  garbageCollect(input: GarbageCollectInput): Promise<GarbageCollectResult> {
    const attributes = {
      'splitlet.gc.all_sources_ready': input.allSourcesReady,
      'splitlet.gc.min_age_ms': input.policy.minAgeMs,
      'splitlet.gc.max_per_pod_container': input.policy.maxPerPodContainer,
      'splitlet.gc.max_containers': input.policy.maxContainers,
    };
    return withSpan(this.#o.tracer, 'Containers/GarbageCollect', { attributes }, async (span) => {
      const tally: Tally = { containers: 0, sandboxes: 0, logDirs: 0, errors: [] };
      const step = async (fn: () => Promise<void>): Promise<void> => {
        try {
          await fn();
        } catch (e) {
          tally.errors.push(errorMessage(e));
        }
      };
      // The sandbox pass decides on the container pass's listing when that pass removed nothing
      // (each pod is listed afresh under its lock before anything goes): a pass over a node with
      // nothing to collect lists the containers and the sandboxes once each.
      let containers: CriContainer[] | undefined;
      await step(async () => {
        const listed = await this.#listContainers();
        const before = tally.containers;
        await this.#evictContainers(input, tally, listed);
        if (tally.containers === before) containers = listed;
      });
      await step(() => this.#evictSandboxes(input, tally, containers));
      await step(() => this.#evictPodLogsDirectories(input, tally));
      const error = aggregateErrors(tally.errors);
      span.setAttributes({
        'splitlet.gc.removed_containers': tally.containers,
        'splitlet.gc.removed_sandboxes': tally.sandboxes,
        'splitlet.gc.removed_log_dirs': tally.logDirs,
      });
      if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
      return {
        removedContainers: tally.containers,
        removedSandboxes: tally.sandboxes,
        removedLogDirs: tally.logDirs,
        ...(error !== undefined ? { error } : {}),
      };
    });
  }

  /** Every container carrying the pod-uid label (getKubeletContainers). */
  async #listContainers(): Promise<CriContainer[]> {
    return (await this.#o.runtime.ListContainers({})).containers.filter((x) => podUidOf(x.labels) !== '');
  }

  /** Every sandbox carrying the pod-uid label (getKubeletSandboxes). */
  async #listSandboxes(): Promise<PodSandbox[]> {
    return (await this.#o.runtime.ListPodSandbox({})).items.filter((x) => podUidOf(x.labels) !== '');
  }

  /** One pod's containers and sandboxes, listed afresh. */
  async #podObjects(uid: string): Promise<PodObjects> {
    const labelSelector = { [RuntimeLabels.podUid]: uid };
    const [c, s] = await Promise.all([this.#o.runtime.ListContainers({ filter: { labelSelector } }), this.#o.runtime.ListPodSandbox({ filter: { labelSelector } })]);
    return { containers: c.containers, sandboxes: s.items };
  }

  /** `fn` for each pod, a few at a time, each under the pod's lock; a pod's failure is recorded, the others go on. */
  async #perPod(input: GarbageCollectInput, uids: Iterable<string>, tally: Tally, fn: (uid: string) => Promise<void>): Promise<void> {
    await forEachLimit([...uids].sort(), this.#o.concurrency ?? 4, async (uid) => {
      try {
        await input.withPodLock(uid, () => fn(uid));
      } catch (e) {
        tally.errors.push(errorMessage(e));
      }
    });
  }

  /**
   * Removes the dead containers of removable pods (once all sources are ready), then enforces
   * MaxPerPodContainer per (pod, container name), then MaxContainers over the node. `listed`: the
   * node's containers (each candidate pod is listed afresh under its lock).
   *
   * Models containerGC.evictContainers.
   */
  async #evictContainers(input: GarbageCollectInput, tally: Tally, listed: readonly CriContainer[]): Promise<void> {
    const { policy } = input;
    const newestGCTime = BigInt(Math.floor(this.#o.clock.now() - policy.minAgeMs)) * 1_000_000n;
    const candidates = evictableContainers(listed, newestGCTime);
    /** What is left per pod and container name after the per-pod pass, newest first. */
    const retained = new Map<string, Map<string, GcContainer[]>>();

    await this.#perPod(input, candidates.keys(), tally, async (uid) => {
      const fresh = await this.#podObjects(uid);
      const units = evictableContainers(fresh.containers, newestGCTime).get(uid) ?? new Map<string, GcContainer[]>();
      const removeAll = input.allSourcesReady && input.shouldPodContentBeRemoved(uid) && !isPodActive(fresh);
      const left = new Map<string, GcContainer[]>();
      for (const [name, unit] of units) {
        if (removeAll) {
          await this.#removeOldestN(unit, unit.length, tally);
          continue;
        }
        const toRemove = policy.maxPerPodContainer >= 0 ? unit.length - policy.maxPerPodContainer : 0;
        left.set(name, toRemove > 0 ? await this.#removeOldestN(unit, toRemove, tally) : unit);
      }
      if (left.size > 0) retained.set(uid, left);
    });

    if (policy.maxContainers < 0) return;
    const count = (): number => [...retained.values()].reduce((n, units) => n + [...units.values()].reduce((m, u) => m + u.length, 0), 0);
    const numContainers = count();
    if (numContainers <= policy.maxContainers) return;
    // Leave an equal number of containers per evict unit (min: 1).
    const numUnits = [...retained.values()].reduce((n, units) => n + units.size, 0);
    const perUnit = Math.max(1, Math.floor(policy.maxContainers / numUnits));
    const over = [...retained].filter(([, units]) => [...units.values()].some((u) => u.length > perUnit)).map(([uid]) => uid);
    await this.#perPod(input, over, tally, async (uid) => {
      const units = retained.get(uid);
      if (units === undefined) return;
      const victims: GcContainer[] = [];
      for (const [name, unit] of units) {
        if (unit.length <= perUnit) continue;
        victims.push(...unit.slice(perUnit));
        // Assume they were removed, so that we are not too aggressive.
        units.set(name, unit.slice(0, perUnit));
      }
      await this.#removeStillDead(uid, victims, tally);
    });
    // If we still need to evict, evict the oldest first.
    const left = count();
    if (left <= policy.maxContainers) return;
    const flattened = [...retained].flatMap(([uid, units]) => [...units.values()].flat().map((c) => ({ ...c, uid }))).sort(newestFirst);
    const byPod = new Map<string, GcContainer[]>();
    for (const c of flattened.slice(policy.maxContainers)) {
      let list = byPod.get(c.uid);
      if (list === undefined) byPod.set(c.uid, (list = []));
      list.push(c);
    }
    await this.#perPod(input, byPod.keys(), tally, (uid) => this.#removeStillDead(uid, byPod.get(uid) ?? [], tally));
  }

  /**
   * Removes `victims` (newest first) that are still there and not running, relisting the pod first:
   * a decision made on an earlier listing is re-checked under the pod's lock.
   */
  async #removeStillDead(uid: string, victims: readonly GcContainer[], tally: Tally): Promise<void> {
    if (victims.length === 0) return;
    const now = new Map((await this.#podObjects(uid)).containers.map((c) => [c.id, c]));
    const still = victims.flatMap((v) => {
      const c = now.get(v.id);
      return c === undefined || c.state === 'CONTAINER_RUNNING' ? [] : [{ ...v, unknown: c.state === 'CONTAINER_UNKNOWN' }];
    });
    await this.#removeOldestN(still, still.length, tally);
  }

  /**
   * Removes the oldest `toRemove` of `containers` (newest first), oldest first; a container in state
   * UNKNOWN is stopped first. Returns the ones kept (assumed removed either way, so as not to be too
   * aggressive).
   *
   * Models containerGC.removeOldestN.
   */
  async #removeOldestN(containers: readonly GcContainer[], toRemove: number, tally: Tally): Promise<GcContainer[]> {
    const { logger, manager } = this.#o;
    const numToKeep = containers.length - toRemove;
    for (let i = containers.length - 1; i >= numToKeep; i--) {
      const c = containers[i];
      if (c === undefined) continue;
      if (c.unknown) {
        // A container in unknown state could be running: stop it before removal.
        try {
          await manager.killContainer(c.id, c.name, 'Container is in unknown state, try killing it before removal');
        } catch (e) {
          logger.error('Failed to stop container', { containerID: c.id, err: errorMessage(e) });
          continue;
        }
      }
      try {
        await removeContainer(this.#o, c.id);
        tally.containers++;
      } catch (e) {
        logger.error('Failed to remove container', { containerID: c.id, err: errorMessage(e) });
      }
    }
    return containers.slice(0, Math.max(0, numToKeep));
  }

  /**
   * Removes the inactive sandboxes of each pod: all of them for a removable pod, else all but the
   * newest sandbox.
   *
   * Models containerGC.evictSandboxes.
   */
  async #evictSandboxes(input: GarbageCollectInput, tally: Tally, listedContainers: readonly CriContainer[] | undefined): Promise<void> {
    const [containers, sandboxes] = await Promise.all([listedContainers ?? this.#listContainers(), this.#listSandboxes()]);
    const byPod = new Map<string, PodSandbox[]>();
    for (const s of sandboxes) {
      const uid = podUidOf(s.labels);
      let list = byPod.get(uid);
      if (list === undefined) byPod.set(uid, (list = []));
      list.push(s);
    }
    // One set for the whole listing: built per pod, it made a pass O(pods × containers).
    const referenced = referencedSandboxes(containers);
    const candidates = [...byPod].filter(([uid, sandboxes]) => sandboxesToRemove(sandboxes, referenced, input.shouldPodContentBeRemoved(uid)).length > 0).map(([uid]) => uid);
    await this.#perPod(input, candidates, tally, async (uid) => {
      const fresh = await this.#podObjects(uid);
      // Only inactive sandboxes ever go, so a pod that still runs loses nothing it uses.
      for (const id of sandboxesToRemove(fresh.sandboxes, referencedSandboxes(fresh.containers), input.shouldPodContentBeRemoved(uid))) {
        if (await this.#removeSandbox(id)) tally.sandboxes++;
      }
    });
  }

  /**
   * Stops, then removes a sandbox (the kubelet should have stopped it already; stopping guards the
   * rare case it did not). Failures are logged; returns whether it was removed.
   *
   * Models containerGC.removeSandbox.
   */
  async #removeSandbox(podSandboxId: string): Promise<boolean> {
    const { runtime, logger } = this.#o;
    logger.debug('Removing sandbox', { sandboxID: podSandboxId });
    try {
      await runtime.StopPodSandbox({ podSandboxId });
    } catch (e) {
      logger.error('Failed to stop sandbox before removing', { sandboxID: podSandboxId, err: errorMessage(e) });
      return false;
    }
    try {
      await runtime.RemovePodSandbox({ podSandboxId });
      return true;
    } catch (e) {
      logger.error('Failed to remove sandbox', { sandboxID: podSandboxId, err: errorMessage(e) });
      return false;
    }
  }

  /**
   * Once all sources are ready, removes the log directory of every pod whose content should be
   * removed. A missing log root is nothing to collect (no pod ever ran here).
   *
   * Models containerGC.evictPodLogsDirectories.
   */
  async #evictPodLogsDirectories(input: GarbageCollectInput, tally: Tally): Promise<void> {
    if (!input.allSourcesReady) return;
    const { logFiles, podLogDir, logger } = this.#o;
    let names: string[];
    try {
      names = await logFiles.listDir(podLogDir);
    } catch (e) {
      if ((e as { code?: unknown }).code === 'ENOENT') return;
      throw new Error(`failed to read podLogsDirectory ${JSON.stringify(podLogDir)}: ${errorMessage(e)}`, { cause: e });
    }
    const removable = new Map<string, string[]>();
    for (const name of names) {
      const uid = parsePodUIDFromLogsDirectory(name);
      if (!input.shouldPodContentBeRemoved(uid)) continue;
      removable.set(uid, [...(removable.get(uid) ?? []), name]);
    }
    await this.#perPod(input, removable.keys(), tally, async (uid) => {
      if (isPodActive(await this.#podObjects(uid))) {
        logger.debug('Keeping pod logs: the pod still runs', { podUID: uid });
        return;
      }
      logger.debug('Removing pod logs', { podUID: uid });
      for (const name of removable.get(uid) ?? []) {
        try {
          await logFiles.removeAll(join(podLogDir, name));
          tally.logDirs++;
        } catch (e) {
          logger.error('Failed to remove pod logs directory', { path: name, err: errorMessage(e) });
        }
      }
    });
  }
}
