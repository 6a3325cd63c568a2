/**
 * The v1 PodStatus the kubelet reports for a pod, from its spec, the runtime's view and the previous
 * status.
 *
 * Models pkg/kubelet/kubelet_pods.go (generateAPIPodStatus, convertStatusToAPIStatus,
 * convertToAPIContainerStatuses, sortPodIPs), pkg/kubelet/prober/prober_manager.go (UpdatePodStatus,
 * isContainerStarted) and pkg/kubelet/status/status_manager.go (startTime and lastTransitionTime).
 */
import type { Container, ContainerReason, ContainerState, ContainerStatus, Pod, PodCondition, PodPhase, PodStatus, RuntimeContainerStatus, RuntimePodStatus } from '@splitlet/api';
import { shouldContainerBeRestarted } from './compute-pod-actions.js';
import { getPhase } from './get-phase.js';
import {
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
  updateLastTransitionTime,
} from './pod-conditions.js';
import type { ProbeResults } from './probe-results.js';
import { getPodQos } from './qos.js';
import { containersNewestFirst, containerStatusFor, sandboxesNewestFirst } from './runtime-status.js';
import { rfc3339 } from './time-format.js';

/** Default waiting reasons. Models kubelet_pods.go (ContainerCreating, PodInitializing). */
export const WaitingReasons = {
  ContainerCreating: 'ContainerCreating',
  PodInitializing: 'PodInitializing',
} as const;

/** The reason of a synthesised terminated state. Models kubecontainer.ContainerReasonStatusUnknown. */
export const CONTAINER_STATUS_UNKNOWN = 'ContainerStatusUnknown';

/**
 * The inputs of {@link generateAPIPodStatus}.
 *
 * Models pkg/kubelet/kubelet_pods.go (generateAPIPodStatus arguments plus the kubelet state it reads: reasonCache, statusManager, probe managers, node IPs).
 */
export interface GenerateStatusInput {
  /** The pod as desired (its `status` is the API's status). */
  readonly pod: Pod;
  /** The runtime's view of the pod. */
  readonly runtimeStatus: RuntimePodStatus;
  /** The CRI runtime name used in container IDs (`containerd` → `containerd://<id>`). */
  readonly runtimeName: string;
  /** reasonCache: container name → why its last start failed (CrashLoopBackOff, ErrImagePull …). */
  readonly reasons?: Readonly<Record<string, ContainerReason>>;
  /** The status manager's cached status; falls back to `pod.status`. */
  readonly oldStatus?: PodStatus;
  /** The pod worker has finished terminating the pod (SyncTerminatingPod). @default false */
  readonly podIsTerminal?: boolean;
  /** Now, ms since the epoch (startTime and condition transition times). */
  readonly now: number;
  /** The node's IPs; sets hostIP/hostIPs, picks the pod IP family, and gives hostNetwork pods their IPs. */
  readonly hostIPs?: readonly string[];
  /** Probe results by container id (readiness → `ready`, startup → `started`). */
  readonly probes?: ProbeResults;
  /** A PodSyncHandler asked to evict (activeDeadlineSeconds): forces Failed with this reason/message. */
  readonly evict?: { readonly reason: string; readonly message: string };
}

const KUBELET_CONDITIONS = new Set(['PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'PodReadyToStartContainers']);
const TERMINAL: ReadonlySet<PodPhase | undefined> = new Set<PodPhase | undefined>(['Failed', 'Succeeded']);

/**
 * Generates the pod's API status:
 * - `podIP`/`podIPs` from the runtime (first IP of the node's family, then the other family), for
 *   hostNetwork pods the node's IPs; `hostIP`/`hostIPs` when given; `qosClass`;
 * - container statuses per spec container (init in spec order, others by name): `state` from the
 *   newest runtime instance (`running`, `waiting` for created, `terminated` with the runtime's
 *   reason/message/exitCode/times), `lastState` from the instance before it, default waiting
 *   `ContainerCreating` (`PodInitializing` when the pod has init containers), a reasonCache waiting
 *   reason for a container that will be restarted, `containerID` `<runtime>://<id>`, `image`,
 *   `imageID`, `restartCount`, `started` and `ready` (no readiness probe → ready once started);
 * - `phase` from {@link getPhase}; a terminal phase already in `oldStatus` or the API is kept; an
 *   unchanged phase keeps its reason/message; `evict` forces Failed;
 * - conditions: the API's non-kubelet conditions, DisruptionTarget from `oldStatus`, then
 *   PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled, each with its
 *   `lastTransitionTime` kept when its status did not change;
 * - `startTime` kept from `oldStatus`, else `now`.
 *
 * Models Kubelet.generateAPIPodStatus.
 */
export function generateAPIPodStatus(input: GenerateStatusInput): PodStatus {
  const { pod, runtimeStatus, now } = input;
  const apiStatus: PodStatus = pod.status ?? {};
  const oldStatus: PodStatus = input.oldStatus ?? apiStatus;
  const hasInit = (pod.spec.initContainers ?? []).length > 0;
  const s: PodStatus = {};

  const hostIPs = [...(input.hostIPs ?? [])];
  const podIPs = sortPodIPs(runtimeIPs(runtimeStatus), hostIPs[0]);
  if (podIPs.length > 0) {
    s.podIP = podIPs[0]!;
    s.podIPs = podIPs.map((ip) => ({ ip }));
  }
  s.qosClass = getPodQos(pod);

  const ctx: ConvertContext = { pod, runtimeStatus, runtimeName: input.runtimeName, reasons: input.reasons ?? {}, hasInit };
  const containerStatuses = convertToAPIContainerStatuses(ctx, oldStatus.containerStatuses ?? [], pod.spec.containers, false);
  const initStatuses = convertToAPIContainerStatuses(ctx, oldStatus.initContainerStatuses ?? [], pod.spec.initContainers ?? [], true);
  const ephemeralSpecs = (pod.spec.ephemeralContainers ?? []) as unknown as Container[];
  const ephemeralStatuses = convertToAPIContainerStatuses(ctx, oldStatus.ephemeralContainerStatuses ?? [], ephemeralSpecs, false);

  let phase = getPhase(pod, [...containerStatuses, ...initStatuses], input.podIsTerminal ?? false);
  if (!TERMINAL.has(phase)) {
    if (TERMINAL.has(oldStatus.phase)) phase = oldStatus.phase!;
    else if (TERMINAL.has(apiStatus.phase)) phase = apiStatus.phase!;
  }
  s.phase = phase;
  if (phase === oldStatus.phase) {
    const reason = nonEmpty(oldStatus.reason) ?? nonEmpty(apiStatus.reason);
    const message = nonEmpty(oldStatus.message) ?? nonEmpty(apiStatus.message);
    if (reason !== undefined) s.reason = reason;
    if (message !== undefined) s.message = message;
  }
  if (input.evict !== undefined) {
    s.phase = 'Failed';
    s.reason = input.evict.reason;
    s.message = input.evict.message;
  }
  if (TERMINAL.has(apiStatus.phase) && s.phase !== apiStatus.phase) s.phase = apiStatus.phase!;

  applyProbeResults(pod, containerStatuses, initStatuses, input.probes ?? {});
  s.containerStatuses = containerStatuses;
  if (initStatuses.length > 0) s.initContainerStatuses = initStatuses;
  if (ephemeralStatuses.length > 0) s.ephemeralContainerStatuses = ephemeralStatuses;

  const conditions: PodCondition[] = (apiStatus.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.has(c.type) && c.type !== 'DisruptionTarget');
  const disruption = oldStatus.conditions?.find((c) => c.type === 'DisruptionTarget');
  if (disruption !== undefined) conditions.push(disruption);
  conditions.push(generatePodReadyToStartContainersCondition(pod, runtimeStatus));
  const all = [...initStatuses, ...containerStatuses];
  conditions.push(generatePodInitializedCondition(pod, all, s.phase));
  conditions.push(generatePodReadyCondition(pod, conditions, all, s.phase));
  conditions.push(generateContainersReadyCondition(pod, all, s.phase));
  conditions.push({ type: 'PodScheduled', status: 'True' });
  s.conditions = conditions;

  if (hostIPs.length > 0) {
    s.hostIP = hostIPs[0]!;
    s.hostIPs = hostIPs.slice(0, 2).map((ip) => ({ ip }));
    if (pod.spec.hostNetwork === true) {
      if (s.podIP === undefined || s.podIP === '') {
        s.podIP = hostIPs[0]!;
        s.podIPs = [{ ip: hostIPs[0]! }];
      }
      const second = hostIPs[1];
      if (second !== undefined && s.podIPs?.length === 1 && isIPv6(s.podIPs[0]!.ip) !== isIPv6(second)) {
        s.podIPs = [...s.podIPs, { ip: second }];
      }
    }
  }

  let out: PodStatus = s;
  for (const t of [...KUBELET_CONDITIONS, 'DisruptionTarget']) out = updateLastTransitionTime(out, oldStatus, t, now);
  out.startTime = nonEmpty(oldStatus.startTime) ?? rfc3339(now);
  return out;
}

interface ConvertContext {
  readonly pod: Pod;
  readonly runtimeStatus: RuntimePodStatus;
  readonly runtimeName: string;
  readonly reasons: Readonly<Record<string, ContainerReason>>;
  readonly hasInit: boolean;
}

/**
 * The API statuses of one list of containers (regular, init or ephemeral), before probe results.
 *
 * Models Kubelet.convertToAPIContainerStatuses.
 */
function convertToAPIContainerStatuses(ctx: ConvertContext, previous: readonly ContainerStatus[], containers: readonly Container[], isInit: boolean): ContainerStatus[] {
  const { pod, runtimeStatus, runtimeName } = ctx;
  const oldStatuses = new Map(previous.map((s) => [s.name, s]));
  const defaultReason = ctx.hasInit ? WaitingReasons.PodInitializing : WaitingReasons.ContainerCreating;
  const statuses = new Map<string, ContainerStatus>();

  for (const c of containers) {
    const old = oldStatuses.get(c.name);
    if (old?.state?.terminated !== undefined) {
      statuses.set(c.name, structuredClone(old));
      continue;
    }
    const st: ContainerStatus = { name: c.name, image: c.image ?? '', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: defaultReason } } };
    if (old !== undefined) {
      st.restartCount = old.restartCount;
      if (old.lastState !== undefined && !isEmptyState(old.lastState)) st.lastState = structuredClone(old.lastState);
    }
    statuses.set(c.name, st);
  }

  for (const c of containers) {
    if (runtimeStatus.containers.some((r) => r.name === c.name)) continue;
    const old = oldStatuses.get(c.name);
    if (old === undefined || old.state?.terminated !== undefined || old.state?.running === undefined) continue;
    const st = statuses.get(c.name)!;
    if (st.state?.waiting?.reason !== defaultReason) continue;
    if (st.lastState?.terminated !== undefined) continue;
    st.lastState = {
      terminated: {
        reason: CONTAINER_STATUS_UNKNOWN,
        message: 'The container could not be located when the pod was deleted.  The container used to be Running',
        exitCode: 137,
      },
    };
    if (pod.metadata.deletionTimestamp === undefined || pod.metadata.deletionTimestamp === null) st.restartCount += 1;
  }

  const seen = new Map<string, number>();
  for (const cs of containersNewestFirst(runtimeStatus)) {
    const current = statuses.get(cs.name);
    if (current === undefined) continue;
    const n = seen.get(cs.name) ?? 0;
    if (n >= 2) continue;
    const converted = convertContainerStatus(cs, oldStatuses.get(cs.name), runtimeName);
    if (n === 0) statuses.set(cs.name, converted);
    else if (converted.state !== undefined) current.lastState = converted.state;
    seen.set(cs.name, n + 1);
  }

  for (const c of containers) {
    if (isInit) {
      const r = containerStatusFor(c.name, runtimeStatus);
      if (r !== undefined && r.state === 'CONTAINER_EXITED' && (r.exitCode ?? 0) === 0) continue;
    }
    if (!shouldContainerBeRestarted(c, pod, runtimeStatus)) continue;
    const reason = ctx.reasons[c.name];
    if (reason === undefined) continue;
    const st = statuses.get(c.name)!;
    if (st.state?.terminated !== undefined) st.lastState = st.state;
    st.state = { waiting: { reason: reason.reason, message: reason.message } };
  }

  const list = containers.map((c) => statuses.get(c.name)!);
  if (isInit) return list;
  return list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function convertContainerStatus(cs: RuntimeContainerStatus, old: ContainerStatus | undefined, runtimeName: string): ContainerStatus {
  const cid = `${runtimeName}://${cs.id}`;
  const st: ContainerStatus = { name: cs.name, restartCount: cs.restartCount, image: cs.image, imageID: cs.imageRef, containerID: cid, ready: false };
  switch (cs.state) {
    case 'CONTAINER_RUNNING':
      st.state = { running: withTime({}, 'startedAt', cs.startedAt) };
      break;
    case 'CONTAINER_CREATED':
      st.state = { waiting: {} };
      break;
    case 'CONTAINER_EXITED': {
      const t: NonNullable<ContainerState['terminated']> = { exitCode: cs.exitCode ?? 0 };
      if (nonEmpty(cs.reason) !== undefined) t.reason = cs.reason!;
      if (nonEmpty(cs.message) !== undefined) t.message = cs.message!;
      withTime(t, 'startedAt', cs.startedAt);
      withTime(t, 'finishedAt', cs.finishedAt);
      t.containerID = cid;
      st.state = { terminated: t };
      break;
    }
    default:
      if (old?.state?.running !== undefined) {
        st.state = { terminated: { reason: CONTAINER_STATUS_UNKNOWN, message: 'The container could not be located when the pod was terminated', exitCode: 137 } };
        st.restartCount = old.restartCount + 1;
      } else {
        st.state = { waiting: {} };
      }
  }
  return st;
}

/**
 * Sets `started` and `ready` the way the prober manager does: started = running and (startup result
 * Success, or no startup probe); a started regular container or sidecar is ready when running and
 * (readiness Success, or no readiness probe); a regular init container is ready when it exited 0.
 *
 * Models prober manager.UpdatePodStatus / isContainerStarted.
 */
function applyProbeResults(pod: Pod, statuses: ContainerStatus[], initStatuses: ContainerStatus[], probes: ProbeResults): void {
  const specOf = new Map<string, Container>();
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) specOf.set(c.name, c);
  const idOf = (st: ContainerStatus): string => st.containerID?.split('://')[1] ?? '';
  const started = (st: ContainerStatus): boolean => {
    if (st.state?.running === undefined) return false;
    const r = probes.startup?.[idOf(st)];
    if (r !== undefined) return r === 'Success';
    return specOf.get(st.name)?.startupProbe === undefined;
  };
  const ready = (st: ContainerStatus): boolean => {
    if (st.state?.running === undefined) return false;
    const r = probes.readiness?.[idOf(st)];
    if (r === 'Success') return true;
    return specOf.get(st.name)?.readinessProbe === undefined;
  };
  for (const st of statuses) {
    st.started = started(st);
    if (st.started) st.ready = ready(st);
  }
  for (const st of initStatuses) {
    st.started = started(st);
    if (specOf.get(st.name)?.restartPolicy !== 'Always') {
      st.ready = st.state?.terminated !== undefined && st.state.terminated.exitCode === 0;
      continue;
    }
    if (st.started) st.ready = ready(st);
  }
}

function runtimeIPs(rs: RuntimePodStatus): string[] {
  if (rs.ips.length > 0) return rs.ips;
  const latest = sandboxesNewestFirst(rs)[0];
  if (latest === undefined || latest.state !== 'SANDBOX_READY') return [];
  return [latest.ip ?? '', ...(latest.additionalIps ?? [])].filter((ip) => ip !== '');
}

/**
 * The first IP of the node's family (IPv4 unless the first host IP is IPv6), then the first of the
 * other family.
 *
 * Models Kubelet.sortPodIPs.
 */
function sortPodIPs(ips: readonly string[], firstHostIP: string | undefined): string[] {
  const v6First = firstHostIP !== undefined && isIPv6(firstHostIP);
  const out: string[] = [];
  const primary = ips.find((ip) => isIPv6(ip) === v6First);
  const secondary = ips.find((ip) => isIPv6(ip) !== v6First);
  if (primary !== undefined) out.push(primary);
  if (secondary !== undefined) out.push(secondary);
  return out;
}

function isIPv6(ip: string): boolean {
  return ip.includes(':');
}

function nonEmpty(s: string | null | undefined): string | undefined {
  return s === undefined || s === null || s === '' ? undefined : s;
}

function isEmptyState(s: ContainerState): boolean {
  return s.waiting === undefined && s.running === undefined && s.terminated === undefined;
}

function withTime<T extends Record<string, unknown>>(obj: T, key: string, ms: number | undefined): T {
  if (ms !== undefined && ms > 0) (obj as Record<string, unknown>)[key] = rfc3339(ms);
  return obj;
}
