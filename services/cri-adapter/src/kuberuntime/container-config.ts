/**
 * The CRI ContainerConfig for one container of a pod.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_container.go (generateContainerConfig),
 * kuberuntime_container_linux.go (generateLinuxContainerConfig, calculateLinuxResources),
 * security_context.go (determineEffectiveSecurityContext), pkg/kubelet/kubelet_pods.go (makeMounts),
 * pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares, MilliCPUToQuota),
 * pkg/kubelet/qos/policy.go (GetContainerOOMScoreAdjust) and pkg/securitycontext/util.go.
 */
import { join, normalize } from 'node:path';
import type { BoundPod, Container, MountedVolumes, SecurityContext } from '@splitlet/api';
import { containerRequests, getPodQos, milliValue, quantityValue } from '@splitlet/kube';
import type { ContainerConfig, CriInput, LinuxContainerResources, LinuxContainerSecurityContext, Mount, MountPropagation } from '@splitlet/cri';
import { expandCommandAndArgs, makeEnvironmentVariables, type EnvContext } from './env.js';
import { newContainerAnnotations, newContainerLabels } from './labels.js';
import { buildContainerLogsPath, namespacesForPod, podSecurityContext } from './sandbox-config.js';

/** The configuration could not be generated: the start fails with CreateContainerConfigError. */
export class ContainerConfigError extends Error {
  override readonly name = 'ContainerConfigError';
}

/** `cpu.shares` bounds and the CFS period (cm/helpers_linux.go). */
const MIN_SHARES = 2;
const MAX_SHARES = 262_144;
const SHARES_PER_CPU = 1024;
const MILLI_CPU_TO_CPU = 1000;
const QUOTA_PERIOD_US = 100_000;
const MIN_QUOTA_PERIOD_US = 1000;

/** OOM score adjustments (qos/policy.go). */
const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;
const SYSTEM_NODE_CRITICAL_PRIORITY = 2_000_001_000;

/** The runtime's default masked and read-only /proc paths (securitycontext util.go). */
const DEFAULT_MASKED_PATHS = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
const DEFAULT_READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/**
 * CPU shares for a request in millicores: `milli × 1024 / 1000`, at least 2 (also for no request),
 * at most 262144.
 *
 * Models cm.MilliCPUToShares.
 */
export function milliCpuToShares(milliCpu: number): number {
  if (milliCpu === 0) return MIN_SHARES;
  const shares = Math.floor((milliCpu * SHARES_PER_CPU) / MILLI_CPU_TO_CPU);
  return Math.min(Math.max(shares, MIN_SHARES), MAX_SHARES);
}

/**
 * CFS quota for a limit in millicores over `periodUs`: 0 for no limit, else `milli × period / 1000`,
 * at least 1000 µs.
 *
 * Models cm.MilliCPUToQuota.
 */
export function milliCpuToQuota(milliCpu: number, periodUs: number = QUOTA_PERIOD_US): number {
  if (milliCpu === 0) return 0;
  return Math.max(Math.floor((milliCpu * periodUs) / MILLI_CPU_TO_CPU), MIN_QUOTA_PERIOD_US);
}

/**
 * The container's OOM score adjustment: -997 for Guaranteed and node-critical pods, 1000 for
 * BestEffort, else `1000 − 1000 × memoryRequest / capacity` clamped to [3, 999].
 *
 * Models qos.GetContainerOOMScoreAdjust.
 */
export function containerOomScoreAdjust(pod: BoundPod, container: Container, memoryCapacityBytes: number): number {
  if ((pod.spec.priority ?? 0) >= SYSTEM_NODE_CRITICAL_PRIORITY) return GUARANTEED_OOM_SCORE_ADJ;
  const qos = getPodQos(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  const memoryRequest = containerRequests(container)['memory'] ?? 0;
  if (memoryCapacityBytes <= 0) return BESTEFFORT_OOM_SCORE_ADJ - 1;
  const adj = 1000 - Math.floor((1000 * memoryRequest) / memoryCapacityBytes);
  if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (adj === BESTEFFORT_OOM_SCORE_ADJ) return adj - 1;
  return adj;
}

/**
 * Linux resources from requests and limits: `cpu_shares` from the cpu request (or the limit when
 * only a limit is set), `cpu_quota`/`cpu_period` from the cpu limit, `memory_limit_in_bytes` from
 * the memory limit, and the OOM score adjustment.
 *
 * Models kubeGenericRuntimeManager.calculateLinuxResources (+ the OomScoreAdj of generateLinuxContainerResources).
 */
export function linuxContainerResources(pod: BoundPod, container: Container, memoryCapacityBytes: number): CriInput<LinuxContainerResources> {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const cpuLimit = limits['cpu'] !== undefined ? milliValue(limits['cpu']) : 0;
  const cpuRequest = requests['cpu'] !== undefined ? milliValue(requests['cpu']) : 0;
  const memLimit = limits['memory'] !== undefined ? quantityValue(limits['memory']) : 0;
  const shares = cpuRequest === 0 && cpuLimit !== 0 ? milliCpuToShares(cpuLimit) : milliCpuToShares(cpuRequest);
  const r: CriInput<LinuxContainerResources> = {
    cpuShares: String(shares),
    cpuPeriod: String(QUOTA_PERIOD_US),
    cpuQuota: String(milliCpuToQuota(cpuLimit)),
    oomScoreAdj: String(containerOomScoreAdjust(pod, container, memoryCapacityBytes)),
  };
  if (memLimit !== 0) r.memoryLimitInBytes = String(memLimit);
  return r;
}

interface EffectiveSecurityContext extends SecurityContext {
  procMount?: string;
  seLinuxOptions?: { user?: string; role?: string; type?: string; level?: string };
}

/**
 * The container's security context over the pod's: runAsUser, runAsGroup, runAsNonRoot and SELinux
 * options default from the pod level.
 *
 * Models securitycontext.DetermineEffectiveSecurityContext.
 */
export function effectiveSecurityContext(pod: BoundPod, container: Container): EffectiveSecurityContext {
  const podSc = podSecurityContext(pod) as { runAsUser?: number; runAsGroup?: number; runAsNonRoot?: boolean; seLinuxOptions?: EffectiveSecurityContext['seLinuxOptions'] };
  const sc: EffectiveSecurityContext = { ...(container.securityContext ?? {}) };
  if (sc.runAsUser === undefined && podSc.runAsUser !== undefined) sc.runAsUser = podSc.runAsUser;
  if (sc.runAsGroup === undefined && podSc.runAsGroup !== undefined) sc.runAsGroup = podSc.runAsGroup;
  if (sc.runAsNonRoot === undefined && podSc.runAsNonRoot !== undefined) sc.runAsNonRoot = podSc.runAsNonRoot;
  if (sc.seLinuxOptions === undefined && podSc.seLinuxOptions !== undefined) sc.seLinuxOptions = podSc.seLinuxOptions;
  return sc;
}

/** The image's user, as ImageStatus reports it (for the runAsNonRoot check). */
export interface ImageUser {
  /** The numeric uid, when the image names one. */
  readonly uid?: number;
  /** A non-numeric user name, when the image names one. */
  readonly username?: string;
}

/**
 * Refuses to run a container whose effective user is root when `runAsNonRoot` is set.
 *
 * Models kuberuntime.verifyRunAsNonRoot.
 */
export function verifyRunAsNonRoot(pod: BoundPod, container: Container, image: ImageUser): void {
  const sc = effectiveSecurityContext(pod, container);
  if (sc.runAsNonRoot !== true) return;
  const podDesc = `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;
  if (sc.runAsUser !== undefined) {
    if (sc.runAsUser === 0) {
      throw new ContainerConfigError(`container's runAsUser breaks non-root policy (pod: ${JSON.stringify(podDesc)}, container: ${container.name})`);
    }
    return;
  }
  if (image.uid !== undefined && image.uid === 0) {
    throw new ContainerConfigError(`container has runAsNonRoot and image will run as root (pod: ${JSON.stringify(podDesc)}, container: ${container.name})`);
  }
  if (image.uid === undefined && image.username !== undefined && image.username !== '') {
    throw new ContainerConfigError(
      `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root (pod: ${JSON.stringify(podDesc)}, container: ${container.name})`,
    );
  }
}

/**
 * The Linux security context: capabilities, privileged, runAsUser/Group, read-only rootfs,
 * no_new_privs (= `allowPrivilegeEscalation: false`), SELinux, the pod's namespace modes and
 * supplemental groups (fsGroup first), and the default masked / read-only paths (none for
 * `procMount: Unmasked`).
 *
 * Models kubeGenericRuntimeManager.determineEffectiveSecurityContext and convertToRuntimeSecurityContext.
 */
export function linuxContainerSecurityContext(pod: BoundPod, container: Container): CriInput<LinuxContainerSecurityContext> {
  const sc = effectiveSecurityContext(pod, container);
  const podSc = podSecurityContext(pod);
  const groups: number[] = [];
  if (podSc.fsGroup !== undefined) groups.push(podSc.fsGroup);
  groups.push(...(podSc.supplementalGroups ?? []));
  const unmasked = sc.procMount === 'Unmasked';
  const out: CriInput<LinuxContainerSecurityContext> = {
    privileged: sc.privileged === true,
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    namespaceOptions: namespacesForPod(pod),
    maskedPaths: unmasked ? [] : [...DEFAULT_MASKED_PATHS],
    readonlyPaths: unmasked ? [] : [...DEFAULT_READONLY_PATHS],
  };
  if (sc.capabilities !== undefined) {
    out.capabilities = { addCapabilities: [...(sc.capabilities.add ?? [])], dropCapabilities: [...(sc.capabilities.drop ?? [])] };
  }
  if (sc.runAsUser !== undefined) out.runAsUser = { value: String(sc.runAsUser) };
  if (sc.runAsGroup !== undefined) out.runAsGroup = { value: String(sc.runAsGroup) };
  if (sc.seLinuxOptions !== undefined) out.selinuxOptions = { ...sc.seLinuxOptions };
  if (groups.length > 0) out.supplementalGroups = groups.map(String);
  return out;
}

function mountPropagation(p: string | undefined): MountPropagation {
  switch (p) {
    case 'HostToContainer':
      return 'PROPAGATION_HOST_TO_CONTAINER';
    case 'Bidirectional':
      return 'PROPAGATION_BIDIRECTIONAL';
    default:
      return 'PROPAGATION_PRIVATE';
  }
}

/**
 * The container's mounts: each volumeMount's volume must be among the host paths volume-manager
 * mounted for the pod (`cannot find volume "<v>" to mount into container "<c>"` otherwise); a
 * `subPath` is joined under it and may not escape it; read-only when the mount or the volume says so.
 *
 * Models kubelet.makeMounts (the volume mounts; the kubelet-managed /etc/hosts and termination-log
 * mounts are made by hosts-file.ts and termination-message.ts).
 */
export function makeMounts(container: Container, volumes: MountedVolumes): CriInput<Mount>[] {
  const out: CriInput<Mount>[] = [];
  for (const m of container.volumeMounts ?? []) {
    const vol = volumes[m.name];
    if (vol === undefined) throw new ContainerConfigError(`cannot find volume ${JSON.stringify(m.name)} to mount into container ${JSON.stringify(container.name)}`);
    let hostPath = vol.hostPath;
    if (m.subPath !== undefined && m.subPath !== '') {
      const sub = normalize(m.subPath);
      if (sub.startsWith('/') || sub === '..' || sub.startsWith('../')) {
        throw new ContainerConfigError(
          `subPath ${JSON.stringify(m.subPath)} of volume ${JSON.stringify(m.name)} in container ${JSON.stringify(container.name)} must be a relative path inside the volume`,
        );
      }
      hostPath = join(hostPath, sub);
    }
    out.push({
      containerPath: m.mountPath,
      hostPath,
      readonly: m.readOnly === true || vol.readOnly === true,
      selinuxRelabel: false,
      propagation: mountPropagation(m.mountPropagation),
    });
  }
  return out;
}

/** Everything besides pod and container that the config depends on. */
export interface ContainerConfigInput {
  readonly pod: BoundPod;
  readonly container: Container;
  readonly isInit: boolean;
  readonly restartCount: number;
  /** The image id (from ImageStatus / PullImage) the container runs. */
  readonly imageRef: string;
  readonly volumes: MountedVolumes;
  /** The kubelet-managed mounts (/etc/hosts, the termination-message file), after the volume mounts. */
  readonly managedMounts?: readonly CriInput<Mount>[];
  readonly env: EnvContext;
  readonly memoryCapacityBytes: number;
}

/**
 * The container config: metadata {name, attempt = restartCount}; image = the resolved image ref with
 * the user's reference alongside; command and args with `$(VAR)` expanded; environment; working dir;
 * mounts; labels and annotations (hash, restart count, grace periods, init marker …); log path
 * `<container>/<restartCount>.log`; stdin/tty; Linux resources and security context. Throws
 * {@link ContainerConfigError} (or an env resolution error) for what makes it impossible.
 *
 * Models kubeGenericRuntimeManager.generateContainerConfig.
 */
export function generateContainerConfig(input: ContainerConfigInput): CriInput<ContainerConfig> {
  const { pod, container, restartCount } = input;
  const envs = makeEnvironmentVariables(pod, container, input.env);
  const { command, args } = expandCommandAndArgs(container, envs);
  const stdinOnce = (container as { stdinOnce?: boolean }).stdinOnce === true;
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: input.imageRef, userSpecifiedImage: container.image ?? '' },
    command,
    args,
    workingDir: container.workingDir ?? '',
    envs: envs.map((e) => ({ key: e.name, value: e.value })),
    mounts: [...makeMounts(container, input.volumes), ...(input.managedMounts ?? [])],
    labels: newContainerLabels(container, pod),
    annotations: newContainerAnnotations(container, pod, restartCount, input.isInit),
    logPath: buildContainerLogsPath(container.name, restartCount),
    stdin: container.stdin === true,
    stdinOnce,
    tty: container.tty === true,
    linux: {
      resources: linuxContainerResources(pod, container, input.memoryCapacityBytes),
      securityContext: linuxContainerSecurityContext(pod, container),
    },
  };
}
