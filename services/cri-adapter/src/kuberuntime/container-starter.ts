/**
 * Starting one container: ensure the image, work out the restart count, generate the config
 * (with the kubelet-managed /etc/hosts and termination-message mounts), CreateContainer,
 * StartContainer, the postStart hook — with the kubelet's events at each step.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_container.go (startContainer, makeMounts,
 * getImageUser, calcRestartCountByLogDir) and the kubelet-managed parts of
 * Kubelet.GenerateRunContainerOptions.
 *
 * ```
 *  start: ensure image ─► restartCount ─► config ─► Create ─► Created ─► Start ─► Started ─► postStart
 * ```
 */
import type { BoundPod, Container, MountedVolumes, RuntimePodStatus } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import type { ContainerConfig, CriInput, Mount, PodSandboxConfig } from '@splitlet/cri';
import { isCriError } from '@splitlet/cri';
import { containerStatusFor, formatPod } from '@splitlet/kube';
import type { Logger } from '@splitlet/telemetry';
import type { ImageManager } from '../images/image-manager.js';
import type { CriImages, CriRuntime, EventRecorder, NodeFiles, PullSecret } from '../ports.js';
import { ContainerConfigError, generateContainerConfig, verifyRunAsNonRoot, type ImageUser } from './container-config.js';
import { containerFieldPath, podRef, recordContainerEvent } from './container-ref.js';
import { fetchEnvObjects, type EnvContext, type EnvObjectSource } from './env.js';
import { makeHostsMount, shouldMountHostsFile } from './hosts-file.js';
import type { LifecycleHandlerRunner } from './lifecycle-handlers.js';
import { buildContainerLogsDirectory, podHostnameAndDomain, type SandboxSettings } from './sandbox-config.js';
import { SyncErrors, type PullWindow, type StepFailure } from './sync-result.js';
import { makeTerminationMessageMount } from './termination-message.js';

/** Dependencies of a {@link ContainerStarter}. */
export interface ContainerStarterDeps {
  readonly runtime: CriRuntime;
  readonly images: CriImages;
  readonly imageManager: ImageManager;
  readonly handlers: LifecycleHandlerRunner;
  readonly recorder: EventRecorder;
  readonly nodeFiles: NodeFiles;
  readonly logger: Logger;
  readonly sandbox: SandboxSettings;
  /** The node's memory capacity, for OOM score adjustment. */
  readonly memoryCapacityBytes: number;
  /** Where env configMap / secret references read (cluster mode); absent: standalone mode. */
  readonly envObjects?: EnvObjectSource | undefined;
  /** Kills a container whose postStart hook failed (killContainer with reason FailedPostStartHook). */
  readonly killAfterPostStart: (pod: BoundPod, containerId: string, containerName: string) => Promise<void>;
}

/** One container to start, with what its pod's sync worked out. */
export interface StartContainerArgs {
  readonly pod: BoundPod;
  readonly container: Container;
  readonly isInit: boolean;
  readonly sandboxId: string;
  readonly sandboxConfig: CriInput<PodSandboxConfig>;
  readonly podStatus: RuntimePodStatus;
  readonly volumes: MountedVolumes;
  readonly pullSecrets: readonly PullSecret[];
  /** The pod's data directory; absent: no managed /etc/hosts or termination-message file. */
  readonly podDir: string | undefined;
  readonly env: EnvContext;
  readonly pulls: PullWindow;
  /** Receives the id of the container once created. */
  readonly created?: string[];
}

/** Starts containers. Stateless; the caller serializes operations per pod. */
export class ContainerStarter {
  readonly #d: ContainerStarterDeps;

  constructor(deps: ContainerStarterDeps) {
    this.#d = deps;
  }

  /**
   * Starts one container: ensure the image, work out the restart count, generate the config,
   * create, start, run postStart. Returns the failure, or undefined when it started.
   *
   * Models kubeGenericRuntimeManager.startContainer.
   */
  async start(args: StartContainerArgs): Promise<StepFailure | undefined> {
    const d = this.#d;
    const { pod, container, isInit } = args;
    const ref = podRef(pod);
    const fieldPath = containerFieldPath(pod, container, isInit);
    const event = (id: string, type: 'Normal' | 'Warning', reason: string, message: string): void =>
      recordContainerEvent(d.recorder, ref, fieldPath, container.name, id, type, reason, message);

    // Step 1: the image.
    const image = await d.imageManager.ensureImageExists({
      pod,
      podRef: ref,
      container,
      fieldPath,
      pullSecrets: args.pullSecrets,
      sandboxConfig: args.sandboxConfig,
      pulls: args.pulls,
    });
    if (!image.ok) {
      event('', 'Warning', 'Failed', `Error: ${image.error}`);
      return { error: image.error, message: image.message, ...(image.retryAt !== undefined ? { retryAt: image.retryAt } : {}) };
    }

    // Steps 2 and 3: the restart count and the config. Their file and runtime reads run side by side
    // (each a trip to the thread pool or the runtime); a failure is reported in the kubelet's order:
    // the log directory, runAsNonRoot, the managed mounts, the environment's objects.
    const previous = containerStatusFor(container.name, args.podStatus);
    let config: CriInput<ContainerConfig>;
    try {
      const [restartCount, logDir, user, managedMounts, objects] = await Promise.allSettled([
        previous !== undefined ? previous.restartCount + 1 : this.#restartCountFromLogDir(pod, container.name),
        d.nodeFiles.ensureDir(buildContainerLogsDirectory(d.sandbox.podLogDir, pod, container.name)),
        runsAsNonRoot(pod, container) ? this.#imageUser(image.imageRef) : undefined,
        this.#kubeletManagedMounts(pod, container, args.env.podIPs, args.podDir),
        // The configMaps and secrets the environment reads, fetched here on the node (never carried on the bus).
        d.envObjects !== undefined ? fetchEnvObjects(pod, container, d.envObjects) : undefined,
      ]);
      if (logDir.status === 'rejected') throw new ContainerConfigError(`create container log directory for container ${container.name} failed: ${errorMessage(logDir.reason)}`);
      if (user.status === 'rejected') throw user.reason;
      if (user.value !== undefined) verifyRunAsNonRoot(pod, container, user.value);
      if (managedMounts.status === 'rejected') throw managedMounts.reason;
      if (objects.status === 'rejected') throw objects.reason;
      if (restartCount.status === 'rejected') throw restartCount.reason;
      const env: EnvContext = {
        ...args.env,
        ...(objects.value !== undefined ? { objects: objects.value } : {}),
        warn: (reason, message) => d.recorder.record({ pod: ref, eventType: 'Warning', reason, message }),
      };
      config = generateContainerConfig({
        pod,
        container,
        isInit,
        restartCount: restartCount.value,
        imageRef: image.imageRef,
        volumes: args.volumes,
        managedMounts: managedMounts.value,
        env,
        memoryCapacityBytes: d.memoryCapacityBytes,
      });
    } catch (e) {
      event('', 'Warning', 'Failed', `Error: ${errorMessage(e)}`);
      return { error: SyncErrors.CreateContainerConfigError, message: errorMessage(e) };
    }

    // Step 4: create.
    let containerId: string;
    try {
      containerId = (await d.runtime.CreateContainer({ podSandboxId: args.sandboxId, config, sandboxConfig: args.sandboxConfig })).containerId;
    } catch (e) {
      event('', 'Warning', 'Failed', `Error: ${statusMessage(e)}`);
      return { error: SyncErrors.CreateContainerError, message: statusMessage(e) };
    }
    args.created?.push(containerId);
    event(containerId, 'Normal', 'Created', `Created container: ${container.name}`);

    // Step 5: start.
    try {
      await d.runtime.StartContainer({ containerId });
    } catch (e) {
      event(containerId, 'Warning', 'Failed', `Error: ${statusMessage(e)}`);
      return { error: SyncErrors.RunContainerError, message: statusMessage(e) };
    }
    event(containerId, 'Normal', 'Started', `Started container ${container.name}`);

    // Step 6: postStart.
    const postStart = container.lifecycle?.postStart;
    if (postStart !== undefined) {
      try {
        await d.handlers.run({ pod, container, containerId, podIP: args.env.podIP }, postStart, new AbortController().signal);
      } catch (e) {
        d.logger.warn('PostStartHook failed', { pod: formatPod(pod), container: container.name, err: e });
        // The message stays out of the event: it could reveal secrets.
        event(containerId, 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
        try {
          await d.killAfterPostStart(pod, containerId, container.name);
        } catch (killErr) {
          d.logger.error('failed to kill container after a failed postStart hook', { pod: formatPod(pod), container: container.name, err: killErr });
        }
        return { error: SyncErrors.PostStartHookError, message: errorMessage(e) };
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
    const d = this.#d;
    const { hostname, domain } = podHostnameAndDomain(pod, d.sandbox.dns.clusterDomain);
    if (podDir === undefined) {
      d.logger.debug('no pod directory in the SyncPod request: no managed /etc/hosts or termination-message file', { pod: formatPod(pod), container: container.name });
      return [];
    }
    const mounts: CriInput<Mount>[] = [];
    if (shouldMountHostsFile(container, podIPs)) mounts.push(await makeHostsMount(d.nodeFiles, { pod, podDir, podIPs, hostname, domain }));
    const termination = await makeTerminationMessageMount(d.nodeFiles, d.logger, { container, podDir });
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
    const st = await this.#d.images.ImageStatus({ image: { image: imageRef } });
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
      names = await this.#d.nodeFiles.listDir(buildContainerLogsDirectory(this.#d.sandbox.podLogDir, pod, containerName));
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
}

function runsAsNonRoot(pod: BoundPod, container: Container): boolean {
  const podSc = (pod.spec.securityContext ?? {}) as { runAsNonRoot?: boolean };
  return (container.securityContext?.runAsNonRoot ?? podSc.runAsNonRoot) === true;
}

/** The runtime's own text of a CRI error (`desc`), as the kubelet puts it in events (grpc status Message). */
function statusMessage(e: unknown): string {
  if (isCriError(e) && typeof (e as { details?: unknown }).details === 'string') return (e as { details: string }).details;
  return errorMessage(e);
}
