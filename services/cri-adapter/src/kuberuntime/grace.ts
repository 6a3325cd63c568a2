/**
 * How long a container gets between its stop signal and SIGKILL.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_container.go (setTerminationGracePeriod, the grace
 * steps of killContainer, minimumGracePeriodInSeconds).
 */
import type { Container, ObjectMeta, PodSpec } from '@splitlet/api';
import { KubeletPeriods, type ContainerKillReason } from '@splitlet/kube';

/** `minimumGracePeriodInSeconds`: every container gets at least this long after its preStop hook. */
export const MINIMUM_GRACE_PERIOD_SECONDS = KubeletPeriods.minimumKillGracePeriodSeconds;

/** The API default of `spec.terminationGracePeriodSeconds` (for a pod that was not defaulted). */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;

/** What the grace period is computed from: a pod's metadata and spec (possibly restored from annotations). */
export interface GraceSource {
  readonly metadata: Pick<ObjectMeta, 'deletionGracePeriodSeconds'>;
  readonly spec: Pick<PodSpec, 'terminationGracePeriodSeconds'>;
}

/**
 * The container's base grace period in seconds: `metadata.deletionGracePeriodSeconds` when set;
 * else the probe's `terminationGracePeriodSeconds` for a liveness/startup kill when set; else
 * `spec.terminationGracePeriodSeconds`, defaulting to 30 as the API does.
 *
 * Models kuberuntime.setTerminationGracePeriod.
 */
export function baseGracePeriod(pod: GraceSource, container: Container | undefined, reason: ContainerKillReason): number {
  const deletion = pod.metadata.deletionGracePeriodSeconds;
  if (deletion !== undefined && deletion !== null) return deletion;
  const probe = reason === 'LivenessProbe' ? container?.livenessProbe : reason === 'StartupProbe' ? container?.startupProbe : undefined;
  const probeGrace = probe?.terminationGracePeriodSeconds;
  if (probeGrace !== undefined && probeGrace !== null) return probeGrace;
  const spec = pod.spec.terminationGracePeriodSeconds;
  return spec !== undefined && spec !== null ? spec : DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
}

/**
 * The StopContainer timeout: the grace period — an explicit override (kill-pod grace, eviction,
 * orphan cleanup) replacing the base — minus the whole seconds the preStop hook took, and never less
 * than the 2 s minimum ("always give containers a minimal shutdown window"), also when the override
 * is smaller. Current kubelets apply the floor after the override (checked in the 1.3x source);
 * older ones (1.2x) let an override replace the floored value.
 *
 * Models the grace steps of kubeGenericRuntimeManager.killContainer `[1.33]`.
 */
export function stopTimeoutSeconds(base: number, preStopElapsedSeconds: number, override: number | undefined): number {
  return Math.max((override ?? base) - preStopElapsedSeconds, MINIMUM_GRACE_PERIOD_SECONDS);
}
