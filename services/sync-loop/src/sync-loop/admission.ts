/**
 * Admission helpers around libs/kube `canAdmitPod`: the node as admission sees it, which pods count
 * as active, and the metric label of a rejection reason.
 *
 * Models pkg/kubelet/kubelet.go (HandlePodAdditions admission, filterOutInactivePods,
 * recordAdmissionRejection).
 */
import type { DesiredPod, NodeResources, WorkerRecord } from '@splitlet/api';
import type { AdmissionNode } from '@splitlet/kube';

/** The node as admission sees it: its name, labels (configuration) and allocatable resources (published by the node). */
export interface NodeFacts {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly allocatable: NodeResources;
}

/** The admission view of the node. */
export function admissionNode(n: NodeFacts): AdmissionNode {
  return { name: n.name, labels: { ...n.labels }, allocatable: { ...n.allocatable }, os: 'linux' };
}

/** True for Succeeded and Failed. */
export function isTerminalPhase(phase: string | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * True for a desired pod that counts against the node: admitted (not rejected), not terminal, and
 * whose worker has not terminated or finished. Models filterOutInactivePods.
 */
export function isActivePod(desired: DesiredPod, worker: WorkerRecord | undefined): boolean {
  if (desired.rejected !== undefined) return false;
  if (isTerminalPhase(desired.pod.status?.phase)) return false;
  if (worker !== undefined && (worker.state === 'terminated' || worker.finished)) return false;
  return true;
}

/** The known admission rejection reasons (kubelet.go `admissionRejectionReasons`). */
const KNOWN_REJECTION_REASONS: ReadonlySet<string> = new Set([
  'AppArmor',
  'PodOSSelectorNodeLabelDoesNotMatch',
  'PodOSNotSupported',
  'InvalidNodeInfo',
  'InitContainerRestartPolicyForbidden',
  'SupplementalGroupsPolicyNotSupported',
  'UnexpectedAdmissionError',
  'UnknownReason',
  'UnexpectedPredicateFailureType',
  'OutOfcpu',
  'OutOfmemory',
  'OutOfephemeral-storage',
  'OutOfpods',
  'PodLevelResourcesNotAdmitted',
  'PodFeatureUnsupported',
  "node(s) had taints that the pod didn't tolerate",
  'Evicted',
  'SysctlForbidden',
  'TopologyAffinityError',
  'NodeShutdown',
  'VolumeAttachmentLimitExceeded',
]);

/**
 * The `reason` label of kubelet_admission_rejections_total: a known reason as is, another `OutOf…`
 * as `OutOfExtendedResources`, anything else as `Other`. Models recordAdmissionRejection.
 */
export function admissionRejectionLabel(reason: string): string {
  if (KNOWN_REJECTION_REASONS.has(reason)) return reason;
  if (reason.startsWith('OutOf')) return 'OutOfExtendedResources';
  return 'Other';
}
