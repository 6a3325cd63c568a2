/**
 * kubeGenericRuntimeManager: turns a pod spec and the runtime's state into CRI calls — SyncPod,
 * KillPod, killContainer — with the kubelet's events, results, crash-loop backoff and metrics. It
 * only speaks CRI, so the same code drives containerd or any other CRI runtime. Starting one
 * container is container-starter.ts, stopping containers container-killer.ts, creating the
 * sandbox pod-sandbox-creator.ts.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (SyncPod, KillPod, doBackOff) and
 * kuberuntime_container.go (pruneInitContainersBeforeStart, purgeInitContainers).
 *
 * ```
 *  SyncPod: status ─► computePodActions ─► kill pod | kill containers ─► prune init
 *           ─► [create sandbox] ─► sandbox config ─► init containers (in order) ─► containers
 *  start:   backoff? ─► ensure image ─► restartCount ─► config ─► Create ─► Created
 *           ─► Start ─► Started ─► postStart
 * ```
 *
 * One file on purpose (near the limit): SyncPod and KillPod share computePodActions' result and the backoff; starting, stopping and sandbox creation are already split out.
 */
import { isIPv6 } from 'node:net';
import type { Span, Tracer } from '@opentelemetry/api';
import type { BoundPod, Container, MountedVolumes, RunningPodRef, RuntimeContainerStatus, RuntimePodStatus, SyncResult } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import type { CriInput, PodSandboxConfig } from '@splitlet/cri';
import { computePodActions, containersNewestFirst, crashLoopBackOffKey, formatGoDuration, formatPod, jsonEqual, type Backoff, type ProbeResults } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { podSpanAttributes, withSpan } from '@splitlet/telemetry';
import type { ImageManager } from '../images/image-manager.js';
import type { CriImages, CriRuntime, EventRecorder, LogFileRemover, NodeFiles, PullSecret } from '../ports.js';
import { ContainerKiller, isSidecar } from './container-killer.js';
import { containerFieldPath, podRef } from './container-ref.js';
import { ContainerStarter } from './container-starter.js';
import type { EnvContext, EnvObjectSource } from './env.js';
import type { LifecycleHandlerRunner } from './lifecycle-handlers.js';
import type { ContainerType, KubeRuntimeMetrics } from './metrics.js';
import { PodSandboxCreator } from './pod-sandbox-creator.js';
import { removeContainer } from './remove-container.js';
import type { RuntimeStatusReader } from './runtime-status-reader.js';
import type { SandboxSettings } from './sandbox-config.js';
import { PodSyncResult, SyncErrors, type StepFailure } from './sync-result.js';

/** Node facts and knobs the manager needs. */
export interface RuntimeManagerSettings {
  readonly sandbox: SandboxSettings;
  /** The CRI call timeout (runtimeRequestTimeout); StopContainer gets grace + this. */
  readonly runtimeRequestTimeoutMs: number;
  /** The node's memory capacity, for OOM score adjustment. */
  readonly memoryCapacityBytes: number;
  /** Node allocatable, for resourceFieldRef env vars of containers without limits. */
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  /** The node's IPs (downward API `status.hostIP`); [] when unknown. */
  readonly hostIPs: readonly string[];
}

/** Dependencies of the {@link KubeGenericRuntimeManager}. */
export interface RuntimeManagerOptions {
  readonly runtime: CriRuntime;
  readonly images: CriImages;
  readonly imageManager: ImageManager;
  readonly statusReader: RuntimeStatusReader;
  readonly handlers: LifecycleHandlerRunner;
  readonly recorder: EventRecorder;
  readonly nodeFiles: NodeFiles;
  /** Where removed containers' log files go from (as container GC removes them). */
  readonly logFiles: LogFileRemover;
  readonly clock: Clock;
  /** Crash-loop backoff (10 s doubling to 300 s, keyed by crashLoopBackOffKey). */
  readonly crashLoopBackoff: Backoff;
  readonly metrics: KubeRuntimeMetrics;
  readonly settings: RuntimeManagerSettings;
  readonly logger: Logger;
  readonly tracer: Tracer;
  /** Where env `configMapKeyRef` / `secretKeyRef` / `envFrom` read (cluster mode); absent: standalone. */
  readonly envObjects?: EnvObjectSource | undefined;
}

/** What a SyncPod needs besides the pod. */
export interface SyncPodInput {
  readonly pod: BoundPod;
  /** Host paths volume-manager mounted, by volume name. */
  readonly volumes: MountedVolumes;
  /** The pod's pull secrets, resolved on the node (see credentials/pull-secrets.ts). */
  readonly pullSecrets: readonly PullSecret[];
  /**
   * The pod's data directory, for the kubelet-managed `etc-hosts` and termination-message files.
   * Absent: containers get neither.
   */
  readonly podDir?: string | undefined;
  /** The prober's liveness and startup results by container id (a Failure kills the container). */
  readonly probes?: ProbeResults | undefined;
  /**
   * The runtime status the caller based its decision on (the pleg cache's, newer than the pod's
   * last runtime change). When it equals the status this manager read at the end of the pod's
   * last SyncPod or KillPod, both views agree and the runtime is not read again before the sync.
   */
  readonly cachedStatus?: RuntimePodStatus | undefined;
  /**
   * The node's time `cachedStatus` is valid as of (the pleg cache's timestamp). When it is after
   * `lastChangeAt`, an empty cached status (the runtime has nothing of the pod) is taken without a
   * read, as the kubelet's SyncPod takes its pod cache's status: the relist behind it came after
   * every change this process made to the pod, and after this process started.
   */
  readonly cachedAt?: number | undefined;
  /** The node's time of the caller's last runtime change to the pod, or of its start when it knows none; see `cachedAt`. */
  readonly lastChangeAt?: number | undefined;
}

/** What a KillPod needs. */
export interface KillPodInput {
  /** The pod, when known; without it, containers are killed from what their labels say. */
  readonly pod?: BoundPod | undefined;
  readonly runningPod: RunningPodRef;
  /** Replaces every container's grace period (KillPodOptions.PodTerminationGracePeriodSecondsOverride). */
  readonly gracePeriodOverride?: number | undefined;
  /** The runtime status the caller based the kill on; see {@link SyncPodInput.cachedStatus}. */
  readonly cachedStatus?: RuntimePodStatus | undefined;
}

/** The result of SyncPod / KillPod: what was done and the runtime status right after. */
export interface RuntimeOpResult {
  readonly results: SyncResult[];
  readonly podStatus: RuntimePodStatus;
  /** When the read of `podStatus` started, if it was read after the operation's changes (ms since the epoch). */
  readonly statusReadAt?: number;
  /** SyncPod: when its first image pull started and its last successful one finished (ms since the epoch). */
  readonly imagePullStartedAt?: number;
  readonly imagePullFinishedAt?: number;
}

const CONTAINER_TYPE: Record<'regular' | 'init', ContainerType> = { regular: 'container', init: 'init_container' };

/** At most this many pods' last statuses are kept (the oldest go first). */
export const MAX_KNOWN_STATUSES = 10_000;

/**
 * The runtime manager. Stateless between calls apart from the backoffs and the status reader's
 * caches; the caller serializes operations per pod UID.
 */
export class KubeGenericRuntimeManager {
  readonly #o: RuntimeManagerOptions;
  readonly #sandboxes: PodSandboxCreator;
  readonly #starter: ContainerStarter;
  readonly #killer: ContainerKiller;
  /**
   * Per pod, the status read at the end of its last SyncPod or KillPod (taken out while an
   * operation runs, so a failed one leaves none). Pods with nothing left are dropped; bounded.
   */
  readonly #known = new Map<string, RuntimePodStatus>();

  constructor(options: RuntimeManagerOptions) {
    this.#o = options;
    const { runtime, recorder, nodeFiles, logger, handlers, settings } = options;
    this.#sandboxes = new PodSandboxCreator({ runtime, recorder, nodeFiles, sandbox: settings.sandbox });
    this.#killer = new ContainerKiller({
      runtime,
      handlers,
      recorder,
      clock: options.clock,
      logger,
      runtimeRequestTimeoutMs: settings.runtimeRequestTimeoutMs,
      getPodStatus: (ref) => this.getPodStatus(ref),
    });
    this.#starter = new ContainerStarter({
      runtime,
      images: options.images,
      imageManager: options.imageManager,
      handlers,
      recorder,
      nodeFiles,
      logger,
      sandbox: settings.sandbox,
      memoryCapacityBytes: settings.memoryCapacityBytes,
      envObjects: options.envObjects,
      killAfterPostStart: (pod, id, name) => this.#killer.killContainer(pod, id, name, 'FailedPostStartHook', 'FailedPostStartHook', undefined),
    });
  }

  /** The runtime's status of one pod (fresh); `changedContainers`: see RuntimeStatusReader.getPodStatus. */
  getPodStatus(ref: RunningPodRef, changedContainers?: readonly string[]): Promise<RuntimePodStatus> {
    return this.#o.statusReader.getPodStatus(ref.uid, ref.name, ref.namespace, changedContainers);
  }

  /** Every pod the runtime knows, or only the pods `uids` names. */
  relist(uids?: readonly string[]): Promise<RuntimePodStatus[]> {
    return this.#o.statusReader.relist(uids);
  }

  /**
   * Syncs the running pod into the desired pod: reads the pod's runtime status afresh, computes the
   * actions, then kills (the pod, or single containers), prunes init containers, creates the
   * sandbox if needed, starts init containers strictly in order (a failed sidecar does not stop the
   * walk) and regular containers each independently — all with the kubelet's events and results.
   * Returns the results and the runtime status afterwards.
   *
   * The runtime is read before the sync unless the caller's status agrees with the one this
   * manager read after the pod's last operation (the kubelet syncs on the pleg cache's status
   * alone), and after it only when the sync changed something (else the status before is the
   * status after), so a sync with nothing to do makes no CRI call. The read afterwards asks for the
   * statuses of the containers the sync created alongside the lists (one round trip, not two).
   *
   * Models kubeGenericRuntimeManager.SyncPod.
   */
  syncPod(input: SyncPodInput): Promise<RuntimeOpResult> {
    const { pod } = input;
    return withSpan(this.#o.tracer, 'kuberuntime.SyncPod', { attributes: podSpanAttributes(pod.metadata) }, async (span) => {
      const result = new PodSyncResult();
      const emptyCacheIsFresh = input.cachedAt !== undefined && input.lastChangeAt !== undefined && input.cachedAt > input.lastChangeAt;
      const before = await this.#statusBefore(refOf(pod), input.cachedStatus, span, emptyCacheIsFresh);
      await this.#syncPod(input, result, before);
      const changed = result.results.length > 0 || result.removedContainers;
      const statusReadAt = changed ? this.#o.clock.now() : undefined;
      const podStatus = changed ? await this.getPodStatus(refOf(pod), result.createdContainers) : before;
      this.#remember(podStatus);
      if (result.failed)
        span.setAttribute(
          'splitlet.sync.errors',
          result.results
            .filter((r) => r.error !== undefined)
            .map((r) => `${r.target}:${r.error}`)
            .join(','),
        );
      const { startedAt, finishedAt } = result.pulls;
      return {
        results: result.results,
        podStatus,
        ...(statusReadAt !== undefined ? { statusReadAt } : {}),
        ...(startedAt !== undefined ? { imagePullStartedAt: startedAt } : {}),
        ...(finishedAt !== undefined ? { imagePullFinishedAt: finishedAt } : {}),
      };
    });
  }

  /**
   * The pod's status an operation starts from: the one read at the end of its last operation when
   * the caller's `cached` status equals it (both views agree, nothing changed since); the caller's
   * empty status when this manager knows none and `emptyCacheIsFresh` (see SyncPodInput.cachedAt:
   * a new pod's first sync); else read afresh. The known status is taken out either way (a failed
   * operation leaves none). The span says which (`splitlet.runtime.status_before`).
   */
  async #statusBefore(ref: RunningPodRef, cached: RuntimePodStatus | undefined, span: Span, emptyCacheIsFresh = false): Promise<RuntimePodStatus> {
    const known = this.#known.get(ref.uid);
    this.#known.delete(ref.uid);
    let source: 'known' | 'pleg-cache' | 'read' = 'read';
    if (known !== undefined && cached !== undefined && jsonEqual(known, cached)) source = 'known';
    else if (known === undefined && cached !== undefined && emptyCacheIsFresh && cached.sandboxes.length === 0 && cached.containers.length === 0) source = 'pleg-cache';
    span.setAttribute('splitlet.runtime.status_reused', source !== 'read');
    span.setAttribute('splitlet.runtime.status_before', source);
    if (source === 'known') return known!;
    if (source === 'pleg-cache') return cached!;
    return this.getPodStatus(ref);
  }

  /** Forgets the pod's last known status (something else changes its runtime objects: container GC). */
  forgetKnownStatus(uid: string): void {
    this.#known.delete(uid);
  }

  /** Keeps `status` as the pod's last known one; a pod with nothing left is forgotten. */
  #remember(status: RuntimePodStatus): void {
    if (status.sandboxes.length === 0 && status.containers.length === 0) return;
    this.#known.set(status.uid, status);
    if (this.#known.size > MAX_KNOWN_STATUSES) {
      const oldest = this.#known.keys().next().value;
      if (oldest !== undefined) this.#known.delete(oldest);
    }
  }

  async #syncPod(input: SyncPodInput, result: PodSyncResult, podStatus: RuntimePodStatus): Promise<void> {
    const o = this.#o;
    const { pod } = input;
    const ref = podRef(pod);
    const changes = computePodActions(pod, podStatus, input.probes ?? {});
    if (o.logger.isEnabled('debug')) {
      // Names only: container specs may hold literal env values.
      o.logger.debug('computePodActions', {
        pod: formatPod(pod),
        killPod: changes.killPod,
        createSandbox: changes.createSandbox,
        attempt: changes.attempt,
        initContainersToStart: changes.initContainersToStart,
        containersToStart: changes.containersToStart,
        containersToKill: Object.values(changes.containersToKill).map((k) => k.name),
      });
    }

    if (changes.createSandbox && changes.sandboxId !== '') {
      o.recorder.record({ pod: ref, eventType: 'Normal', reason: 'SandboxChanged', message: 'Pod sandbox changed, it will be killed and re-created.' });
    }

    // Step 2: kill the pod, or the containers that must go.
    if (changes.killPod) {
      const killResult = await this.#killer.killPodWithSyncResult(pod, podStatus, undefined);
      result.results.push(...killResult.results);
      if (killResult.failed) return;
      if (changes.createSandbox) await this.#purgeInitContainers(pod, podStatus, result);
    } else {
      for (const [id, info] of Object.entries(changes.containersToKill)) {
        const r = result.add('KillContainer', info.name);
        try {
          await this.#killer.killContainer(pod, id, info.name, info.message, info.reason, undefined);
        } catch (e) {
          PodSyncResult.fail(r, SyncErrors.KillContainerError, errorMessage(e));
          o.logger.error('killContainer for pod failed', { pod: formatPod(pod), container: info.name, containerId: id, err: e });
          return;
        }
      }
    }

    // Step 3: keep exited init containers under control.
    await this.#pruneInitContainersBeforeStart(pod, podStatus, result);

    // A hostNetwork pod has the node's IPs (Kubelet.SyncPod takes the pod IPs from the API status,
    // which gives hostNetwork pods the node's; the runtime reports none for them).
    let podIPs = pod.spec.hostNetwork === true ? hostNetworkPodIPs(o.settings.hostIPs) : [...podStatus.ips];
    let sandboxId = changes.sandboxId;

    // Step 4: create the sandbox.
    if (changes.createSandbox) {
      o.metrics.startedPod();
      o.metrics.containersPerPod(pod.spec.containers.length);
      const r = result.add('CreatePodSandbox', pod.metadata.uid);
      const created = await this.#sandboxes.create(pod, changes.attempt);
      if (!created.ok) {
        o.metrics.startedPodError();
        PodSyncResult.fail(r, SyncErrors.CreatePodSandboxError, created.message);
        o.recorder.record({ pod: ref, eventType: 'Warning', reason: 'FailedCreatePodSandBox', message: `Failed to create pod sandbox: ${created.errorText}` });
        return;
      }
      sandboxId = created.sandboxId;
      try {
        const resp = await o.statusReader.podSandboxStatus(pod.metadata.uid, sandboxId);
        if (pod.spec.hostNetwork !== true && resp.status?.network) {
          podIPs = [resp.status.network.ip, ...resp.status.network.additionalIps.map((p) => p.ip)].filter((ip) => ip !== '');
        }
      } catch (e) {
        o.recorder.record({ pod: ref, eventType: 'Warning', reason: 'FailedPodSandBoxStatus', message: `Unable to get pod sandbox status: ${errorMessage(e)}` });
        PodSyncResult.fail(r, SyncErrors.CreatePodSandboxError, `Unable to get pod sandbox status: ${errorMessage(e)}`);
        return;
      }
    }

    // Step 5: the sandbox config the containers are created with.
    let sandboxConfig: CriInput<PodSandboxConfig>;
    try {
      sandboxConfig = (await this.#sandboxes.generateConfig(pod, changes.attempt)).config;
    } catch (e) {
      const r = result.add('ConfigPodSandbox', pod.metadata.uid);
      PodSyncResult.fail(r, SyncErrors.ConfigPodSandboxError, `GeneratePodSandboxConfig for pod ${JSON.stringify(formatPod(pod))} failed: ${errorMessage(e)}`);
      return;
    }

    const env: EnvContext = {
      podIP: podIPs[0] ?? '',
      podIPs,
      hostIPs: o.settings.hostIPs,
      nodeAllocatable: o.settings.nodeAllocatable,
    };
    const start = async (container: Container, type: 'regular' | 'init'): Promise<boolean> => {
      const r = result.add('StartContainer', container.name);
      const backoff = this.#doBackOff(pod, container, podStatus);
      if (backoff !== undefined) {
        PodSyncResult.fail(r, backoff.error, backoff.message, backoff.retryAt);
        return false;
      }
      o.metrics.startedContainer(CONTAINER_TYPE[type]);
      const failure = await this.#starter.start({
        pod,
        container,
        isInit: type === 'init',
        sandboxId,
        sandboxConfig,
        podStatus,
        volumes: input.volumes,
        pullSecrets: input.pullSecrets,
        podDir: input.podDir,
        env,
        pulls: result.pulls,
        created: result.createdContainers,
      });
      if (failure !== undefined) {
        o.metrics.startedContainerError(CONTAINER_TYPE[type], failure.error);
        PodSyncResult.fail(r, failure.error, failure.message, failure.retryAt);
        if (failure.error !== SyncErrors.ImagePullBackOff) {
          o.logger.info('container start failed', { pod: formatPod(pod), container: container.name, error: failure.error, message: failure.message });
        }
        return false;
      }
      return true;
    };

    // Step 6: init containers, strictly in order; a failing sidecar does not block the next.
    const inits = pod.spec.initContainers ?? [];
    for (const idx of changes.initContainersToStart) {
      const container = inits[idx];
      if (container === undefined) continue;
      const ok = await start(container, 'init');
      if (!ok) {
        if (isSidecar(container)) continue;
        return;
      }
    }

    // Step 7: regular containers, each on its own.
    for (const idx of changes.containersToStart) {
      const container = pod.spec.containers[idx];
      if (container !== undefined) await start(container, 'regular');
    }
  }

  /**
   * Whether the container is in crash-loop backoff, measured from the last exit's FinishedAt. In
   * backoff: Warning BackOff "Back-off restarting failed container <c> in pod <pod>" and the
   * CrashLoopBackOff failure "back-off <d> restarting failed container=<c> pod=<pod>". Otherwise
   * the backoff moves on (next) and undefined is returned.
   *
   * Models kubeGenericRuntimeManager.doBackOff.
   */
  #doBackOff(pod: BoundPod, container: Container, podStatus: RuntimePodStatus): StepFailure | undefined {
    const exited = containersNewestFirst(podStatus).find((c) => c.name === container.name && c.state === 'CONTAINER_EXITED');
    if (exited === undefined) return undefined;
    const ts = exited.finishedAt ?? 0;
    const key = crashLoopBackOffKey(pod, container);
    const backoff = this.#o.crashLoopBackoff;
    if (backoff.isInBackOffSince(key, ts)) {
      const isInit = (pod.spec.initContainers ?? []).some((c) => c.name === container.name);
      this.#o.recorder.record({
        pod: podRef(pod),
        fieldPath: containerFieldPath(pod, container, isInit),
        eventType: 'Warning',
        reason: 'BackOff',
        message: `Back-off restarting failed container ${container.name} in pod ${formatPod(pod)}`,
      });
      return {
        error: SyncErrors.CrashLoopBackOff,
        message: `back-off ${formatGoDuration(backoff.get(key))} restarting failed container=${container.name} pod=${formatPod(pod)}`,
        // The backoff runs from the last exit: the worker requeues then (kubernetes PR 133066).
        retryAt: ts + backoff.get(key),
      };
    }
    backoff.next(key, ts);
    return undefined;
  }

  /**
   * Stops every running container of the pod (ContainerKiller.killContainersWithSyncResult), then every
   * sandbox (StopPodSandbox, NotFound ignored), and returns the results and the status afterwards.
   * What runs is read from the runtime first, unless the caller's status agrees with the one this
   * manager read after the pod's last operation (the kubelet kills the running pod of its pleg
   * cache), as for {@link syncPod}.
   *
   * Models kubeGenericRuntimeManager.KillPod.
   */
  killPod(input: KillPodInput): Promise<RuntimeOpResult> {
    const attrs = {
      ...podSpanAttributes(input.runningPod),
      ...(input.gracePeriodOverride !== undefined ? { 'splitlet.kill.grace_override_seconds': input.gracePeriodOverride } : {}),
    };
    return withSpan(this.#o.tracer, 'kuberuntime.KillPod', { attributes: attrs }, async (span) => {
      const status = await this.#statusBefore(input.runningPod, input.cachedStatus, span);
      const result = await this.#killer.killPodWithSyncResult(input.pod, status, input.gracePeriodOverride);
      const statusReadAt = this.#o.clock.now();
      const after = await this.getPodStatus(input.runningPod);
      this.#remember(after);
      return { results: result.results, podStatus: after, statusReadAt };
    });
  }

  /**
   * Kills a container without its pod spec (what its labels and annotations say stands in for it),
   * with `message` as the Killing event's text and reason Unknown: the garbage collector stops a
   * container in state UNKNOWN this way before removing it.
   *
   * Models the killContainer call of containerGC.removeOldestN.
   */
  killContainer(containerId: string, containerName: string, message: string): Promise<void> {
    return this.#killer.killContainer(undefined, containerId, containerName, message, 'Unknown', undefined);
  }

  /**
   * Removes every instance of every init container (before a new sandbox starts from the first).
   *
   * Models kubeGenericRuntimeManager.purgeInitContainers.
   */
  async #purgeInitContainers(pod: BoundPod, status: RuntimePodStatus, result: PodSyncResult): Promise<void> {
    const names = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    for (const c of status.containers) {
      if (!names.has(c.name)) continue;
      result.removedContainers = true;
      await this.#removeContainer(c, pod);
    }
  }

  /**
   * Removes exited instances of each init container except the newest.
   *
   * Models kubeGenericRuntimeManager.pruneInitContainersBeforeStart.
   */
  async #pruneInitContainersBeforeStart(pod: BoundPod, status: RuntimePodStatus, result: PodSyncResult): Promise<void> {
    const names = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    const seen = new Set<string>();
    for (const c of containersNewestFirst(status)) {
      if (!names.has(c.name) || c.state !== 'CONTAINER_EXITED') continue;
      if (!seen.has(c.name)) {
        seen.add(c.name);
        continue;
      }
      result.removedContainers = true;
      await this.#removeContainer(c, pod);
    }
  }

  async #removeContainer(c: RuntimeContainerStatus, pod: BoundPod): Promise<void> {
    try {
      await removeContainer(this.#o, c.id);
    } catch (e) {
      this.#o.logger.warn('failed to remove pod init container', { pod: formatPod(pod), container: c.name, containerId: c.id, err: e });
    }
  }
}

/**
 * The pod IPs of a hostNetwork pod: the node's first IP, then its first IP of the other family.
 *
 * Models the hostNetwork pod IPs of Kubelet.generateAPIPodStatus.
 */
export function hostNetworkPodIPs(hostIPs: readonly string[]): string[] {
  const first = hostIPs[0];
  if (first === undefined) return [];
  const other = hostIPs.find((ip) => isIPv6(ip) !== isIPv6(first));
  return other === undefined ? [first] : [first, other];
}

function refOf(pod: BoundPod): RunningPodRef {
  return { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace };
}
