/**
 * Whether a pod needs a new sandbox.
 *
 * Models pkg/kubelet/kuberuntime/util/util.go (PodSandboxChanged).
 */
import type { RuntimePodStatus } from '@splitlet/api';
import { sandboxesNewestFirst } from './runtime-status.js';

/**
 * The answer of {@link podSandboxChanged}.
 *
 * Models pkg/kubelet/kuberuntime/util/util.go (PodSandboxChanged results).
 */
export interface SandboxChange {
  /** A new sandbox must be created (and the old one, if any, killed). */
  readonly changed: boolean;
  /** The attempt number for the sandbox to create (or of the current one when unchanged). */
  readonly attempt: number;
  /** The id of the latest sandbox; `''` when there is none, or when the network namespace changed. */
  readonly sandboxId: string;
}

/**
 * A new sandbox is needed when: there is none (attempt 0); more than one is READY; the newest is not
 * READY; its network mode differs from `spec.hostNetwork` (id `''`); or, for a non-hostNetwork pod,
 * it reported a network status with an empty IP (`ip: ''`). Otherwise the newest sandbox stays.
 * Attempts are max(attempt) + 1. A sandbox whose `hostNetwork` or `ip` is absent is not judged on it
 * (the runtime did not report it).
 *
 * Models runtimeutil.PodSandboxChanged.
 */
export function podSandboxChanged(pod: { spec: { hostNetwork?: boolean | undefined } }, runtimeStatus: Pick<RuntimePodStatus, 'sandboxes'>): SandboxChange {
  const sandboxes = sandboxesNewestFirst(runtimeStatus);
  const latest = sandboxes[0];
  if (latest === undefined) return { changed: true, attempt: 0, sandboxId: '' };
  let ready = 0;
  let maxAttempt = 0;
  for (const s of sandboxes) {
    if (s.state === 'SANDBOX_READY') ready++;
    if (s.attempt > maxAttempt) maxAttempt = s.attempt;
  }
  if (ready > 1) return { changed: true, attempt: maxAttempt + 1, sandboxId: latest.id };
  if (latest.state !== 'SANDBOX_READY') return { changed: true, attempt: maxAttempt + 1, sandboxId: latest.id };
  const hostNetwork = pod.spec.hostNetwork === true;
  if (latest.hostNetwork !== undefined && latest.hostNetwork !== hostNetwork) {
    return { changed: true, attempt: maxAttempt + 1, sandboxId: '' };
  }
  if (!hostNetwork && latest.ip === '') return { changed: true, attempt: maxAttempt + 1, sandboxId: latest.id };
  return { changed: false, attempt: maxAttempt, sandboxId: latest.id };
}
