/**
 * kubeGenericRuntimeManager: turns a pod spec and the runtime's state into CRI calls — SyncPod,
 * KillPod, killContainer, startContainer, createPodSandbox — with the kubelet's events, results,
 * crash-loop backoff and metrics. It only speaks CRI, so the same code drives containerd or any
 * other CRI runtime.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (SyncPod, KillPod, killPodWithSyncResult,
 * doBackOff), kuberuntime_container.go (startContainer, killContainer, killContainersWithSyncResult,
 * executePreStopHook, pruneInitContainersBeforeStart, purgeInitContainers,
 * restoreSpecsFromContainerLabels) and kuberuntime_sandbox.go (createPodSandbox).
 *
 * ```
 *  SyncPod: status ─► computePodActions ─► kill pod | kill containers ─► prune init
 *           ─► [create sandbox] ─► sandbox config ─► init containers (in order) ─► containers
 *  start:   backoff? ─► ensure image ─► restartCount ─► config ─► Create ─► Created
 *           ─► Start ─► Started ─► postStart
 * ```
 */
import { isIPv6 } from 'node:net';
import type { Tracer } from '@opentelemetry/api';
import type {
  BoundPod,
  Container,
  MountedVolumes,
  RunningPodRef,
  RuntimeContainerStatus,
  RuntimePodStatus,
  SyncResult,
} from '@splitlet/api';
import type { ContainerConfig, CriInput, Mount, PodSandboxConfig } from '@splitlet/cri';
import { isCriError } from '@splitlet/cri';
import {
  Backoff,
  computePodActions,
  containersNewestFirst,
  containerStatusFor,
  crashLoopBackOffKey,
  formatGoDuration,
  formatPod,
  type ContainerKillReason,
  type ProbeResults,
} from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { withSpan } from '@splitlet/telemetry';
import type { ImageManager } from '../images/image-manager.js';
import type { CriImages, CriRuntime, EventPodRef, EventRecorder, LogFileRemover, NodeFiles, PullSecret } from '../ports.js';
import { ContainerConfigError, generateContainerConfig, verifyRunAsNonRoot, type ImageUser } from './container-config.js';
import { containerFieldPath, podRef, recordContainerEvent } from './container-ref.js';
import { parseResolvConf } from './dns.js';
import type { EnvContext } from './env.js';
import { baseGracePeriod, stopTimeoutSeconds } from './grace.js';
import { makeHostsMount, shouldMountHostsFile } from './hosts-file.js';
import { containerInfoFrom } from './labels.js';
import { removeContainer } from './remove-container.js';
import type { LifecycleHandlerRunner } from './lifecycle-handlers.js';
import type { ContainerType, KubeRuntimeMetrics } from './metrics.js';
import type { RuntimeStatusReader } from './runtime-status-reader.js';
import { buildContainerLogsDirectory, buildPodLogsDirectory, generatePodSandboxConfig, podHostnameAndDomain, type SandboxSettings } from './sandbox-config.js';
import { PodSyncResult, SyncErrors, type PullWindow, type StepFailure } from './sync-result.js';
import { makeTerminationMessageMount } from './termination-message.js';

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
}

/** What a KillPod needs. */
export interface KillPodInput {
  /** The pod, when known; without it, containers are killed from what their labels say. */
  readonly pod?: BoundPod | undefined;
  readonly runningPod: RunningPodRef;
  /** Replaces every container's grace period (KillPodOptions.PodTerminationGracePeriodSecondsOverride). */
  readonly gracePeriodOverride?: number | undefined;
}

/** The result of SyncPod / KillPod: what was done and the runtime status right after. */
export interface RuntimeOpResult {
  readonly results: SyncResult[];
  readonly podStatus: RuntimePodStatus;
  /** SyncPod: when its first image pull started and its last successful one finished (ms since the epoch). */
  readonly imagePullStartedAt?: number;
  readonly imagePullFinishedAt?: number;
}

/** A running container to kill. */
interface RunningContainer {
  readonly id: string;
  readonly name: string;
  readonly init: boolean;
}

const CONTAINER_TYPE: Record<'regular' | 'init', ContainerType> = { regular: 'container', init: 'init_container' };

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The runtime's own text of a CRI error (`desc`), as the kubelet puts it in events (grpc status Message). */
function statusMessage(e: unknown): string {
  if (isCriError(e) && typeof (e as { details?: unknown }).details === 'string') return (e as { details: string }).details;
  return errText(e);
}

function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

function findSpec(pod: BoundPod, name: string): { container: Container; init: boolean } | undefined {
  const regular = pod.spec.containers.find((c) => c.name === name);
  if (regular !== undefined) return { container: regular, init: false };
  const init = (pod.spec.initContainers ?? []).find((c) => c.name === name);
  if (init !== undefined) return { container: init, init: true };
  return undefined;
}

/**
 * The runtime manager. Stateless between calls apart from the backoffs and the status reader's
 * caches; the caller serializes operations per pod UID.
 */
export class KubeGenericRuntimeManager {
  readonly #o: RuntimeManagerOptions;

  constructor(options: RuntimeManagerOptions) {
    this.#o = options;
  }

  /** The runtime's status of one pod (fresh). */
  getPodStatus(ref: RunningPodRef): Promise<RuntimePodStatus> {
    return this.#o.statusReader.getPodStatus(ref.uid, ref.name, ref.namespace);
  }

  /** Every pod the runtime knows. */
  relist(): Promise<RuntimePodStatus[]> {
    return this.#o.statusReader.relist();
  }

  /**
   * Syncs the running pod into the desired pod: reads the pod's runtime status afresh, computes the
   * actions, then kills (the pod, or single containers), prunes init containers, creates the
   * sandbox if needed, starts init containers strictly in order (a failed sidecar does not stop the
   * walk) and regular containers each independently — all with the kubelet's events and results.
   * Returns the results and the runtime status afterwards.
   *
   * Models kubeGenericRuntimeManager.SyncPod.
   */
  syncPod(input: SyncPodInput): Promise<RuntimeOpResult> {
    const { pod } = input;
    return withSpan(this.#o.tracer, 'kuberuntime.SyncPod', { attributes: podAttributes(pod) }, async (span) => {
      const result = new PodSyncResult();
      await this.#syncPod(input, result);
      const podStatus = await this.getPodStatus(refOf(pod));
      if (result.failed) span.setAttribute('splitlet.sync.errors', result.results.filter((r) => r.error !== undefined).map((r) => `${r.target}:${r.error}`).join(','));
      const { startedAt, finishedAt } = result.pulls;
      return {
        results: result.results,
        podStatus,
        ...(startedAt !== undefined ? { imagePullStartedAt: startedAt } : {}),
        ...(finishedAt !== undefined ? { imagePullFinishedAt: finishedAt } : {}),
      };
    });
  }

  async #syncPod(input: SyncPodInput, result: PodSyncResult): Promise<void> {
    const o = this.#o;
    const { pod } = input;
    const ref = podRef(pod);
    const podStatus = await this.getPodStatus(refOf(pod));
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
      const killResult = await this.#killPodWithSyncResult(pod, podStatus, undefined);
      result.results.push(...killResult.results);
      if (killResult.failed) return;
      if (changes.createSandbox) await this.#purgeInitContainers(pod, podStatus);
    } else {
      for (const [id, info] of Object.entries(changes.containersToKill)) {
        const r = result.add('KillContainer', info.name);
        try {
          await this.#killContainer(pod, id, info.name, info.message, info.reason, undefined);
        } catch (e) {
          PodSyncResult.fail(r, SyncErrors.KillContainerError, errText(e));
          o.logger.error('killContainer for pod failed', { pod: formatPod(pod), container: info.name, containerId: id, err: e });
          return;
        }
      }
    }

    // Step 3: keep exited init containers under control.
    await this.#pruneInitContainersBeforeStart(pod, podStatus);

    // A hostNetwork pod has the node's IPs (Kubelet.SyncPod takes the pod IPs from the API status,
    // which gives hostNetwork pods the node's; the runtime reports none for them).
    let podIPs = pod.spec.hostNetwork === true ? hostNetworkPodIPs(o.settings.hostIPs) : [...podStatus.ips];
    let sandboxId = changes.sandboxId;

    // Step 4: create the sandbox.
    if (changes.createSandbox) {
      o.metrics.startedPod();
      o.metrics.containersPerPod(pod.spec.containers.length);
      const r = result.add('CreatePodSandbox', pod.metadata.uid);
      const created = await this.#createPodSandbox(pod, changes.attempt);
      if (!created.ok) {
        o.metrics.startedPodError();
        PodSyncResult.fail(r, SyncErrors.CreatePodSandboxError, created.message);
        o.recorder.record({ pod: ref, eventType: 'Warning', reason: 'FailedCreatePodSandBox', message: `Failed to create pod sandbox: ${created.errorText}` });
        return;
      }
      sandboxId = created.sandboxId;
      try {
        const resp = await o.runtime.PodSandboxStatus({ podSandboxId: sandboxId });
        if (pod.spec.hostNetwork !== true && resp.status?.network) {
          podIPs = [resp.status.network.ip, ...resp.status.network.additionalIps.map((p) => p.ip)].filter((ip) => ip !== '');
        }
      } catch (e) {
        o.recorder.record({ pod: ref, eventType: 'Warning', reason: 'FailedPodSandBoxStatus', message: `Unable to get pod sandbox status: ${errText(e)}` });
        PodSyncResult.fail(r, SyncErrors.CreatePodSandboxError, `Unable to get pod sandbox status: ${errText(e)}`);
        return;
      }
    }

    // Step 5: the sandbox config the containers are created with.
    let sandboxConfig: CriInput<PodSandboxConfig>;
    try {
      sandboxConfig = (await this.#generatePodSandboxConfig(pod, changes.attempt)).config;
    } catch (e) {
      const r = result.add('ConfigPodSandbox', pod.metadata.uid);
      PodSyncResult.fail(r, SyncErrors.ConfigPodSandboxError, `GeneratePodSandboxConfig for pod ${JSON.stringify(formatPod(pod))} failed: ${errText(e)}`);
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
      const failure = await this.#startContainer({ pod, container, isInit: type === 'init', sandboxId, sandboxConfig, podStatus, input, env, pulls: result.pulls });
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
   * The sandbox config, with the node's resolv.conf read afresh (as GetPodDNS does).
   *
   * Models kubeGenericRuntimeManager.generatePodSandboxConfig.
   */
  async #generatePodSandboxConfig(pod: BoundPod, attempt: number): Promise<ReturnType<typeof generatePodSandboxConfig>> {
    const text = await this.#o.nodeFiles.readResolvConf();
    return generatePodSandboxConfig(pod, attempt, this.#o.settings.sandbox, parseResolvConf(text));
  }

  /**
   * Creates the sandbox: its config (DNS warnings recorded as events), the pod log directory, then
   * RunPodSandbox.
   *
   * Models kubeGenericRuntimeManager.createPodSandbox.
   */
  async #createPodSandbox(pod: BoundPod, attempt: number): Promise<{ ok: true; sandboxId: string } | { ok: false; message: string; errorText: string }> {
    const o = this.#o;
    let config: CriInput<PodSandboxConfig>;
    try {
      const generated = await this.#generatePodSandboxConfig(pod, attempt);
      config = generated.config;
      for (const w of generated.warnings) o.recorder.record({ pod: podRef(pod), eventType: 'Warning', reason: w.reason, message: w.message });
    } catch (e) {
      return { ok: false, message: `Failed to generate sandbox config for pod ${JSON.stringify(formatPod(pod))}: ${errText(e)}`, errorText: errText(e) };
    }
    try {
      await o.nodeFiles.ensureDir(buildPodLogsDirectory(o.settings.sandbox.podLogDir, pod));
    } catch (e) {
      return { ok: false, message: `Failed to create log directory for pod ${JSON.stringify(formatPod(pod))}: ${errText(e)}`, errorText: errText(e) };
    }
    try {
      const resp = await o.runtime.RunPodSandbox({ config });
      return { ok: true, sandboxId: resp.podSandboxId };
    } catch (e) {
      return { ok: false, message: `Failed to create sandbox for pod ${JSON.stringify(formatPod(pod))}: ${errText(e)}`, errorText: errText(e) };
    }
  }

  /**
   * Starts one container: ensure the image, work out the restart count, generate the config,
   * create, start, run postStart. Returns the failure, or undefined when it started.
   *
   * Models kubeGenericRuntimeManager.startContainer.
   */
  async #startContainer(args: {
    pod: BoundPod;
    container: Container;
    isInit: boolean;
    sandboxId: string;
    sandboxConfig: CriInput<PodSandboxConfig>;
    podStatus: RuntimePodStatus;
    input: SyncPodInput;
    env: EnvContext;
    pulls: PullWindow;
  }): Promise<StepFailure | undefined> {
    const o = this.#o;
    const { pod, container, isInit } = args;
    const ref = podRef(pod);
    const fieldPath = containerFieldPath(pod, container, isInit);
    const event = (id: string, type: 'Normal' | 'Warning', reason: string, message: string): void =>
      recordContainerEvent(o.recorder, ref, fieldPath, container.name, id, type, reason, message);

    // Step 1: the image.
    const image = await o.imageManager.ensureImageExists({ pod, podRef: ref, container, fieldPath, pullSecrets: args.input.pullSecrets, sandboxConfig: args.sandboxConfig, pulls: args.pulls });
    if (!image.ok) {
      event('', 'Warning', 'Failed', `Error: ${image.error}`);
      return { error: image.error, message: image.message, ...(image.retryAt !== undefined ? { retryAt: image.retryAt } : {}) };
    }

    // Step 2: the restart count.
    const previous = containerStatusFor(container.name, args.podStatus);
    const restartCount = previous !== undefined ? previous.restartCount + 1 : await this.#restartCountFromLogDir(pod, container.name);

    // Step 3: the config.
    let config: CriInput<ContainerConfig>;
    try {
      await o.nodeFiles.ensureDir(buildContainerLogsDirectory(o.settings.sandbox.podLogDir, pod, container.name)).catch((e: unknown) => {
        throw new ContainerConfigError(`create container log directory for container ${container.name} failed: ${errText(e)}`);
      });
      if (runsAsNonRoot(pod, container)) verifyRunAsNonRoot(pod, container, await this.#imageUser(image.imageRef));
      const managedMounts = await this.#kubeletManagedMounts(pod, container, args.env.podIPs, args.input.podDir);
      config = generateContainerConfig({
        pod,
        container,
        isInit,
        restartCount,
        imageRef: image.imageRef,
        volumes: args.input.volumes,
        managedMounts,
        env: args.env,
        memoryCapacityBytes: o.settings.memoryCapacityBytes,
      });
    } catch (e) {
      event('', 'Warning', 'Failed', `Error: ${errText(e)}`);
      return { error: SyncErrors.CreateContainerConfigError, message: errText(e) };
    }

    // Step 4: create.
    let containerId: string;
    try {
      containerId = (await o.runtime.CreateContainer({ podSandboxId: args.sandboxId, config, sandboxConfig: args.sandboxConfig })).containerId;
    } catch (e) {
      event('', 'Warning', 'Failed', `Error: ${statusMessage(e)}`);
      return { error: SyncErrors.CreateContainerError, message: statusMessage(e) };
    }
    event(containerId, 'Normal', 'Created', `Created container: ${container.name}`);

    // Step 5: start.
    try {
      await o.runtime.StartContainer({ containerId });
    } catch (e) {
      event(containerId, 'Warning', 'Failed', `Error: ${statusMessage(e)}`);
      return { error: SyncErrors.RunContainerError, message: statusMessage(e) };
    }
    event(containerId, 'Normal', 'Started', `Started container ${container.name}`);

    // Step 6: postStart.
    const postStart = container.lifecycle?.postStart;
    if (postStart !== undefined) {
      try {
        await o.handlers.run({ pod, container, containerId, podIP: args.env.podIP }, postStart, new AbortController().signal);
      } catch (e) {
        o.logger.warn('PostStartHook failed', { pod: formatPod(pod), container: container.name, err: e });
        // The message stays out of the event: it could reveal secrets.
        event(containerId, 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
        try {
          await this.#killContainer(pod, containerId, container.name, 'FailedPostStartHook', 'FailedPostStartHook', undefined);
        } catch (killErr) {
          o.logger.error('failed to kill container after a failed postStart hook', { pod: formatPod(pod), container: container.name, err: killErr });
        }
        return { error: SyncErrors.PostStartHookError, message: errText(e) };
      }
    }
    return undefined;
  }

  /**
   * The mounts the kubelet adds to a container's volume mounts: the managed /etc/hosts (when the pod
   * has IPs and the container does not mount /etc/hosts itself) and the termination-message file.
   * The pod's hostname is checked first (an invalid one fails the container's config). Without a
   * pod directory (an older pod-worker) neither file is made. Rejects when the hosts file cannot be
   * written; a termination-message file that cannot be made is logged and left out.
   *
   * Models the kubelet-managed parts of Kubelet.GenerateRunContainerOptions, kubelet.makeMounts and
   * kubeGenericRuntimeManager.makeMounts.
   */
  async #kubeletManagedMounts(pod: BoundPod, container: Container, podIPs: readonly string[], podDir: string | undefined): Promise<CriInput<Mount>[]> {
    const o = this.#o;
    const { hostname, domain } = podHostnameAndDomain(pod, o.settings.sandbox.dns.clusterDomain);
    if (podDir === undefined) {
      o.logger.debug('no pod directory in the SyncPod request: no managed /etc/hosts or termination-message file', { pod: formatPod(pod), container: container.name });
      return [];
    }
    const mounts: CriInput<Mount>[] = [];
    if (shouldMountHostsFile(container, podIPs)) mounts.push(await makeHostsMount(o.nodeFiles, { pod, podDir, podIPs, hostname, domain }));
    const termination = await makeTerminationMessageMount(o.nodeFiles, o.logger, { container, podDir });
    if (termination !== undefined) mounts.push(termination);
    return mounts;
  }

  /**
   * The user the image runs as: its uid, else its user name, else root (uid 0) when it names
   * neither (busybox, and most images).
   *
   * Models kubeGenericRuntimeManager.getImageUser ("If non of them is set, treat it as root").
   */
  async #imageUser(imageRef: string): Promise<ImageUser> {
    const st = await this.#o.images.ImageStatus({ image: { image: imageRef } });
    const img = st.image;
    if (img !== null) {
      if (img.uid !== null) return { uid: Number(img.uid.value) };
      if (img.username !== '') return { username: img.username };
    }
    return { uid: 0 };
  }

  /**
   * The restart count of a container the runtime no longer knows: one past the highest
   * `<n>.log` in its log directory, 0 when there is none.
   *
   * Models kuberuntime.calcRestartCountByLogDir.
   */
  async #restartCountFromLogDir(pod: BoundPod, containerName: string): Promise<number> {
    let names: string[];
    try {
      names = await this.#o.nodeFiles.listDir(buildContainerLogsDirectory(this.#o.settings.sandbox.podLogDir, pod, containerName));
    } catch {
      return 0;
    }
    let max = -1;
    for (const n of names) {
      const m = /^([0-9]+)\.log(\..*)?$/.exec(n);
      if (m?.[1] !== undefined) max = Math.max(max, Number.parseInt(m[1], 10));
    }
    return max + 1;
  }

  /**
   * Stops every running container of the pod (see {@link #killContainersWithSyncResult}), then every
   * sandbox (StopPodSandbox, NotFound ignored), and returns the results and the status afterwards.
   *
   * Models kubeGenericRuntimeManager.KillPod.
   */
  killPod(input: KillPodInput): Promise<RuntimeOpResult> {
    const attrs = {
      'k8s.pod.uid': input.runningPod.uid,
      'k8s.pod.name': input.runningPod.name,
      'k8s.namespace.name': input.runningPod.namespace,
      ...(input.gracePeriodOverride !== undefined ? { 'splitlet.kill.grace_override_seconds': input.gracePeriodOverride } : {}),
    };
    return withSpan(this.#o.tracer, 'kuberuntime.KillPod', { attributes: attrs }, async () => {
      const status = await this.getPodStatus(input.runningPod);
      const result = await this.#killPodWithSyncResult(input.pod, status, input.gracePeriodOverride);
      return { results: result.results, podStatus: await this.getPodStatus(input.runningPod) };
    });
  }

  async #killPodWithSyncResult(pod: BoundPod | undefined, status: RuntimePodStatus, gracePeriodOverride: number | undefined): Promise<PodSyncResult> {
    const result = new PodSyncResult();
    const running: RunningContainer[] = status.containers
      .filter((c) => c.state === 'CONTAINER_RUNNING')
      .map((c) => ({ id: c.id, name: c.name, init: c.init === true }));
    result.results.push(...(await this.#killContainersWithSyncResult(pod, running, gracePeriodOverride)));
    const r = result.add('KillPodSandbox', status.uid);
    for (const sb of status.sandboxes) {
      try {
        await this.#o.runtime.StopPodSandbox({ podSandboxId: sb.id });
      } catch (e) {
        if (isCriError(e, 'NotFound')) continue;
        PodSyncResult.fail(r, SyncErrors.KillPodSandboxError, errText(e));
        this.#o.logger.error('Failed to stop sandbox', { podSandboxId: sb.id, err: e });
      }
    }
    return result;
  }

  /**
   * Kills the running containers: regular (and non-sidecar init) containers in parallel first,
   * then sidecars one by one in reverse spec order, each getting what is left of the grace period.
   * Without a pod spec (an orphan) every container is killed in parallel.
   *
   * Models kubeGenericRuntimeManager.killContainersWithSyncResult (with terminationOrdering).
   */
  async #killContainersWithSyncResult(pod: BoundPod | undefined, running: RunningContainer[], gracePeriodOverride: number | undefined): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    const killOne = async (c: RunningContainer): Promise<void> => {
      const r: SyncResult = { action: 'KillContainer', target: c.name };
      results.push(r);
      try {
        await this.#killContainer(pod, c.id, c.name, '', 'Unknown', gracePeriodOverride);
      } catch (e) {
        PodSyncResult.fail(r, SyncErrors.KillContainerError, errText(e));
        this.#o.logger.error('killContainer failed', { containerName: c.name, containerId: c.id, err: e });
      }
    };
    const sidecarOrder = pod === undefined ? [] : (pod.spec.initContainers ?? []).filter(isSidecar).map((c) => c.name);
    const sidecars = running
      .filter((c) => sidecarOrder.includes(c.name))
      .sort((a, b) => sidecarOrder.indexOf(b.name) - sidecarOrder.indexOf(a.name));
    const others = running.filter((c) => !sidecars.includes(c));
    await Promise.all(others.map(killOne));
    for (const c of sidecars) await killOne(c);
    return results;
  }

  /**
   * Kills a container without its pod spec (what its labels and annotations say stands in for it),
   * with `message` as the Killing event's text and reason Unknown: the garbage collector stops a
   * container in state UNKNOWN this way before removing it.
   *
   * Models the killContainer call of containerGC.removeOldestN.
   */
  killContainer(containerId: string, containerName: string, message: string): Promise<void> {
    return this.#killContainer(undefined, containerId, containerName, message, 'Unknown', undefined);
  }

  /**
   * Kills one container: Killing event ("Stopping container <c>" or the given message), preStop
   * hook within the grace period (its whole seconds subtracted; a failure records
   * FailedPreStopHook), the 2 s floor, the override, then StopContainer with a deadline of grace +
   * the runtime timeout. NotFound is not an error. Without a pod spec, the container's labels and
   * annotations stand in for it.
   *
   * Models kubeGenericRuntimeManager.killContainer.
   */
  async #killContainer(
    pod: BoundPod | undefined,
    containerId: string,
    containerName: string,
    message: string,
    reason: ContainerKillReason,
    gracePeriodOverride: number | undefined,
  ): Promise<void> {
    const o = this.#o;
    let target: { ref: EventPodRef; fieldPath: string; spec: Container; grace: number; pod: BoundPod | undefined };
    if (pod !== undefined) {
      const found = findSpec(pod, containerName);
      if (found === undefined) {
        throw new Error(
          `failed to get containerSpec ${JSON.stringify(containerName)} (id=${JSON.stringify(containerId)}) in pod ${JSON.stringify(formatPod(pod))} when killing container for reason ${JSON.stringify(message)}`,
        );
      }
      target = {
        ref: podRef(pod),
        fieldPath: containerFieldPath(pod, found.container, found.init),
        spec: found.container,
        grace: baseGracePeriod(pod, found.container, reason),
        pod,
      };
    } else {
      target = await this.#restoreSpecFromLabels(containerId, reason);
    }
    let grace = target.grace;
    const text = message !== '' ? message : `Stopping container ${target.spec.name}`;
    recordContainerEvent(o.recorder, target.ref, target.fieldPath, target.spec.name, containerId, 'Normal', 'Killing', text);

    // The override replaces the grace before the preStop hook gets its share (killContainer [1.33]).
    if (gracePeriodOverride !== undefined) grace = gracePeriodOverride;
    let preStopElapsed = 0;
    const preStop = target.spec.lifecycle?.preStop;
    if (preStop !== undefined && grace > 0 && target.pod !== undefined) {
      preStopElapsed = await this.#executePreStopHook(target.pod, containerId, target.spec, preStop, grace, target);
    }
    grace = stopTimeoutSeconds(grace, preStopElapsed, undefined);
    o.logger.debug('Killing container with a grace period', { containerName, containerId, gracePeriod: grace });
    try {
      await o.runtime.StopContainer({ containerId, timeout: String(grace) }, { deadlineMs: o.settings.runtimeRequestTimeoutMs + grace * 1000 });
    } catch (e) {
      if (isCriError(e, 'NotFound')) return;
      throw e;
    }
  }

  /**
   * Runs the preStop hook for at most `grace` seconds and returns the whole seconds it took.
   *
   * Models kubeGenericRuntimeManager.executePreStopHook.
   */
  async #executePreStopHook(
    pod: BoundPod,
    containerId: string,
    spec: Container,
    preStop: NonNullable<NonNullable<Container['lifecycle']>['preStop']>,
    grace: number,
    target: { ref: EventPodRef; fieldPath: string },
  ): Promise<number> {
    const o = this.#o;
    const started = o.clock.now();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), grace * 1000);
    const status = await this.getPodStatus(refOf(pod)).catch(() => undefined);
    try {
      await o.handlers.run({ pod, container: spec, containerId, podIP: status?.ips[0] ?? '' }, preStop, abort.signal);
    } catch (e) {
      if (!abort.signal.aborted) {
        o.logger.warn('PreStop hook failed', { pod: formatPod(pod), container: spec.name, err: e });
        recordContainerEvent(o.recorder, target.ref, target.fieldPath, spec.name, containerId, 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
      } else {
        o.logger.info('PreStop hook not completed in grace period', { pod: formatPod(pod), container: spec.name, gracePeriod: grace });
      }
    } finally {
      clearTimeout(timer);
    }
    return Math.trunc((o.clock.now() - started) / 1000);
  }

  /**
   * Rebuilds what killContainer needs for a container whose pod spec is unknown, from its labels and
   * annotations (pod identity, grace periods, preStop handler).
   *
   * Models kubeGenericRuntimeManager.restoreSpecsFromContainerLabels.
   */
  async #restoreSpecFromLabels(
    containerId: string,
    reason: ContainerKillReason,
  ): Promise<{ ref: EventPodRef; fieldPath: string; spec: Container; grace: number; pod: BoundPod | undefined }> {
    const resp = await this.#o.runtime.ContainerStatus({ containerId });
    if (resp.status === null) throw new Error(`container status of ${containerId} is nil`);
    const info = containerInfoFrom(resp.status.labels, resp.status.annotations);
    const spec: Container = { name: info.containerName, ...(info.preStop !== undefined ? { lifecycle: { preStop: info.preStop } } : {}) };
    const pod: BoundPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: info.podName,
        namespace: info.podNamespace,
        uid: info.podUid,
        ...(info.podDeletionGracePeriod !== undefined ? { deletionGracePeriodSeconds: info.podDeletionGracePeriod } : {}),
      },
      spec: {
        containers: [spec],
        ...(info.podTerminationGracePeriod !== undefined ? { terminationGracePeriodSeconds: info.podTerminationGracePeriod } : {}),
      },
    };
    return {
      ref: podRef(pod),
      fieldPath: info.init ? `spec.initContainers{${spec.name}}` : `spec.containers{${spec.name}}`,
      spec,
      grace: baseGracePeriod(pod, spec, reason),
      pod,
    };
  }

  /**
   * Removes every instance of every init container (before a new sandbox starts from the first).
   *
   * Models kubeGenericRuntimeManager.purgeInitContainers.
   */
  async #purgeInitContainers(pod: BoundPod, status: RuntimePodStatus): Promise<void> {
    const names = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    for (const c of status.containers) {
      if (!names.has(c.name)) continue;
      await this.#removeContainer(c, pod);
    }
  }

  /**
   * Removes exited instances of each init container except the newest.
   *
   * Models kubeGenericRuntimeManager.pruneInitContainersBeforeStart.
   */
  async #pruneInitContainersBeforeStart(pod: BoundPod, status: RuntimePodStatus): Promise<void> {
    const names = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    const seen = new Set<string>();
    for (const c of containersNewestFirst(status)) {
      if (!names.has(c.name) || c.state !== 'CONTAINER_EXITED') continue;
      if (!seen.has(c.name)) {
        seen.add(c.name);
        continue;
      }
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

function runsAsNonRoot(pod: BoundPod, container: Container): boolean {
  const podSc = (pod.spec.securityContext ?? {}) as { runAsNonRoot?: boolean };
  return (container.securityContext?.runAsNonRoot ?? podSc.runAsNonRoot) === true;
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

function podAttributes(pod: BoundPod): Record<string, string> {
  return {
    'k8s.pod.uid': pod.metadata.uid,
    'k8s.pod.name': pod.metadata.name,
    'k8s.namespace.name': pod.metadata.namespace,
    'k8s.pod': `${pod.metadata.namespace}/${pod.metadata.name}`,
  };
}
