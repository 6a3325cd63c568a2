/**
 * `@splitlet/kube`: the kubelet's pure pod-domain logic, with no I/O.
 *
 * Models pkg/kubelet (config merge, admission, pod workers' grace and requeue rules, kuberuntime's
 * computePodActions, status generation, flowcontrol backoff).
 */
export { KubeError, isKubeError } from './errors.js';
export type { KubeErrorCode } from './errors.js';
export { KubeletPeriods, WorkerJitter, ConfigAnnotations, PodSources, NETWORK_NOT_READY_ERROR_MSG } from './constants.js';
export { canonicalJson, jsonEqual } from './canonical-json.js';
export { fnv1a128Hex, fnv1a32 } from './fnv.js';
export { rfc3339, rfc3339Nano, parseTime, formatGoDuration } from './time-format.js';
export { parseQuantity, milliValue, quantityValue, resourceAmount } from './quantity.js';
export type { Quantity } from './quantity.js';
export { formatDownwardMap, podFieldValue, resourceFieldContainer, resourceFieldValue } from './downward-api.js';
export type { DownwardApiContext, ResourceFieldRef } from './downward-api.js';
export { humanDuration, podCreatedAt, podRow } from './pod-printer.js';
export type { PodRow } from './pod-printer.js';
export { podRequests, containerRequests } from './pod-requests.js';
export type { ResourceAmounts } from './pod-requests.js';
export { getPodQos } from './qos.js';
export type { QosClass } from './qos.js';
export { podFullName, buildPodFullName, parsePodFullName, formatPod } from './pod-full-name.js';
export { podSource, isStaticPod, isMirrorPod, isCriticalPod } from './pod-source.js';
export { sortPodsByCreationTime } from './sort-pods.js';
export { hashContainer } from './hash-container.js';
export { applyPodApiDefaults, defaultPullPolicy } from './api-defaults.js';
export { staticPodUid, applyStaticPodDefaults } from './static-pod-defaults.js';
export type { StaticPodOrigin } from './static-pod-defaults.js';
export { validatePod, formatFieldError, formatInvalidPod, POD_NAME_REQUIRED_MESSAGE } from './validate-pod.js';
export type { FieldError, FieldErrorType } from './validate-pod.js';
export { prepareStaticPod } from './prepare-static-pod.js';
export type { PreparedStaticPod } from './prepare-static-pod.js';
export { PodStorage, checkAndUpdatePod, podsDifferSemantically } from './pod-storage.js';
export type { SourceOperation, MergedOperation, PodConfigUpdate, FailedValidation, MergeResult } from './pod-storage.js';
export { canAdmitPod, matchesNodeSelectorAndAffinity } from './admission.js';
export type { AdmissionNode, AdmitResult, Taint } from './admission.js';
export { rejectedPodStatus } from './rejected-pod-status.js';
export { calculateEffectiveGracePeriod } from './grace-period.js';
export type { GracePeriodInput } from './grace-period.js';
export { jitter, requeueDelay } from './jitter.js';
export type { SyncOutcome } from './jitter.js';
export { Backoff, crashLoopBackOffKey } from './backoff.js';
export type { BackoffOptions, BackoffEntry, BackoffState } from './backoff.js';
export { FenceKeeper, FencedOffError, FENCED_OFF } from './fence-keeper.js';
export { containerStatusFor, findRuntimeContainer, containersNewestFirst, podIPsAfterTeardown, podSandboxIPs, sandboxesNewestFirst } from './runtime-status.js';
export { podSandboxChanged } from './pod-sandbox-changed.js';
export type { SandboxChange } from './pod-sandbox-changed.js';
export type { ProbeResult, ProbeResults } from './probe-results.js';
export { computePodActions, shouldContainerBeRestarted, isInitContainerFailed, findNextInitContainerToRun } from './compute-pod-actions.js';
export type { PodActions, ContainerToKill, ContainerKillReason } from './compute-pod-actions.js';
export { getPhase, hasAnyRegularContainerStarted } from './get-phase.js';
export {
  ConditionReasons,
  KubeletConditionTypes,
  generateContainersReadyCondition,
  generatePodReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyToStartContainersCondition,
  updateLastTransitionTime,
} from './pod-conditions.js';
export { generateAPIPodStatus, WaitingReasons, CONTAINER_STATUS_UNKNOWN } from './generate-api-pod-status.js';
export type { GenerateStatusInput } from './generate-api-pod-status.js';
