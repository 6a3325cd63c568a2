/**
 * Stopping containers and pods the kubelet's way: the Killing event, the preStop hook within the
 * grace period, the 2 s floor, the override, StopContainer with a deadline of grace + the runtime
 * timeout; sidecars last, in reverse order; sandboxes after every container. Without a pod spec
 * (an orphan, or a container GC found in state UNKNOWN), what the container's labels and
 * annotations say stands in for it.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_container.go (killContainer, executePreStopHook,
 * killContainersWithSyncResult, restoreSpecsFromContainerLabels) and kuberuntime_manager.go
 * (killPodWithSyncResult).
 */
import type { BoundPod, Container, RunningPodRef, RuntimePodStatus, SyncResult } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { isCriError } from '@splitlet/cri';
import { formatPod, type ContainerKillReason } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { CriRuntime, EventPodRef, EventRecorder } from '../ports.js';
import { containerFieldPath, podRef, recordContainerEvent } from './container-ref.js';
import { baseGracePeriod, stopTimeoutSeconds } from './grace.js';
import { containerInfoFrom } from './labels.js';
import type { LifecycleHandlerRunner } from './lifecycle-handlers.js';
import { PodSyncResult, SyncErrors } from './sync-result.js';

/** Dependencies of a {@link ContainerKiller}. */
export interface ContainerKillerDeps {
  readonly runtime: CriRuntime;
  readonly handlers: LifecycleHandlerRunner;
  readonly recorder: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The CRI call timeout (runtimeRequestTimeout); StopContainer gets grace + this. */
  readonly runtimeRequestTimeoutMs: number;
  /** The pod's runtime status (for the preStop hook's pod IP). */
  readonly getPodStatus: (ref: RunningPodRef) => Promise<RuntimePodStatus>;
}

/** A running container to kill. */
export interface RunningContainer {
  readonly id: string;
  readonly name: string;
  readonly init: boolean;
}

/** What killContainer knows of the container it stops. */
interface KillTarget {
  readonly ref: EventPodRef;
  readonly fieldPath: string;
  readonly spec: Container;
  readonly grace: number;
  readonly pod: BoundPod | undefined;
}

/** Kills containers and pods. Stateless; the caller serializes operations per pod. */
export class ContainerKiller {
  readonly #d: ContainerKillerDeps;

  constructor(deps: ContainerKillerDeps) {
    this.#d = deps;
  }

  /**
   * Stops every running container of the pod (see {@link killContainersWithSyncResult}), then every
   * sandbox (StopPodSandbox, NotFound ignored).
   *
   * Models kubeGenericRuntimeManager.killPodWithSyncResult.
   */
  async killPodWithSyncResult(pod: BoundPod | undefined, status: RuntimePodStatus, gracePeriodOverride: number | undefined): Promise<PodSyncResult> {
    const result = new PodSyncResult();
    const running: RunningContainer[] = status.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => ({ id: c.id, name: c.name, init: c.init === true }));
    result.results.push(...(await this.killContainersWithSyncResult(pod, running, gracePeriodOverride)));
    const r = result.add('KillPodSandbox', status.uid);
    for (const sb of status.sandboxes) {
      try {
        await this.#d.runtime.StopPodSandbox({ podSandboxId: sb.id });
      } catch (e) {
        if (isCriError(e, 'NotFound')) continue;
        PodSyncResult.fail(r, SyncErrors.KillPodSandboxError, errorMessage(e));
        this.#d.logger.error('Failed to stop sandbox', { podSandboxId: sb.id, err: e });
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
  async killContainersWithSyncResult(pod: BoundPod | undefined, running: RunningContainer[], gracePeriodOverride: number | undefined): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    const killOne = async (c: RunningContainer): Promise<void> => {
      const r: SyncResult = { action: 'KillContainer', target: c.name };
      results.push(r);
      try {
        await this.killContainer(pod, c.id, c.name, '', 'Unknown', gracePeriodOverride);
      } catch (e) {
        PodSyncResult.fail(r, SyncErrors.KillContainerError, errorMessage(e));
        this.#d.logger.error('killContainer failed', { containerName: c.name, containerId: c.id, err: e });
      }
    };
    const sidecarOrder = pod === undefined ? [] : (pod.spec.initContainers ?? []).filter(isSidecar).map((c) => c.name);
    const sidecars = running.filter((c) => sidecarOrder.includes(c.name)).sort((a, b) => sidecarOrder.indexOf(b.name) - sidecarOrder.indexOf(a.name));
    const others = running.filter((c) => !sidecars.includes(c));
    await Promise.all(others.map(killOne));
    for (const c of sidecars) await killOne(c);
    return results;
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
  async killContainer(
    pod: BoundPod | undefined,
    containerId: string,
    containerName: string,
    message: string,
    reason: ContainerKillReason,
    gracePeriodOverride: number | undefined,
  ): Promise<void> {
    const d = this.#d;
    let target: KillTarget;
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
    recordContainerEvent(d.recorder, target.ref, target.fieldPath, target.spec.name, containerId, 'Normal', 'Killing', text);

    // The override replaces the grace before the preStop hook gets its share (killContainer [1.33]).
    if (gracePeriodOverride !== undefined) grace = gracePeriodOverride;
    let preStopElapsed = 0;
    const preStop = target.spec.lifecycle?.preStop;
    if (preStop !== undefined && grace > 0 && target.pod !== undefined) {
      preStopElapsed = await this.#executePreStopHook(target.pod, containerId, target.spec, preStop, grace, target);
    }
    grace = stopTimeoutSeconds(grace, preStopElapsed, undefined);
    d.logger.debug('Killing container with a grace period', { containerName, containerId, gracePeriod: grace });
    try {
      await d.runtime.StopContainer({ containerId, timeout: String(grace) }, { deadlineMs: d.runtimeRequestTimeoutMs + grace * 1000 });
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
    const d = this.#d;
    const started = d.clock.now();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), grace * 1000);
    const status = await d.getPodStatus({ uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace }).catch(() => undefined);
    try {
      await d.handlers.run({ pod, container: spec, containerId, podIP: status?.ips[0] ?? '' }, preStop, abort.signal);
    } catch (e) {
      if (!abort.signal.aborted) {
        d.logger.warn('PreStop hook failed', { pod: formatPod(pod), container: spec.name, err: e });
        recordContainerEvent(d.recorder, target.ref, target.fieldPath, spec.name, containerId, 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
      } else {
        d.logger.info('PreStop hook not completed in grace period', { pod: formatPod(pod), container: spec.name, gracePeriod: grace });
      }
    } finally {
      clearTimeout(timer);
    }
    return Math.trunc((d.clock.now() - started) / 1000);
  }

  /**
   * Rebuilds what killContainer needs for a container whose pod spec is unknown, from its labels and
   * annotations (pod identity, grace periods, preStop handler).
   *
   * Models kubeGenericRuntimeManager.restoreSpecsFromContainerLabels.
   */
  async #restoreSpecFromLabels(containerId: string, reason: ContainerKillReason): Promise<KillTarget> {
    const resp = await this.#d.runtime.ContainerStatus({ containerId });
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
}

/** A restartable init container (a sidecar). */
export function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

function findSpec(pod: BoundPod, name: string): { container: Container; init: boolean } | undefined {
  const regular = pod.spec.containers.find((c) => c.name === name);
  if (regular !== undefined) return { container: regular, init: false };
  const init = (pod.spec.initContainers ?? []).find((c) => c.name === name);
  if (init !== undefined) return { container: init, init: true };
  return undefined;
}
