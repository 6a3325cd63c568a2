/**
 * The outcome of one runtime SyncPod / KillPod: one entry per action, with the kubelet's error name.
 *
 * Models pkg/kubelet/container/sync_result.go and the error values of pkg/kubelet/images/types.go
 * and kuberuntime (ErrCreateContainerConfig, ErrPostStartHook …).
 */
import type { SyncResult } from '@splitlet/api';

/** The kubelet's error names, as they appear in `SyncResult.error` and container waiting reasons. */
export const SyncErrors = {
  CrashLoopBackOff: 'CrashLoopBackOff',
  RunContainerError: 'RunContainerError',
  KillContainerError: 'KillContainerError',
  VerifyNonRootError: 'VerifyNonRootError',
  RunInitContainerError: 'RunInitContainerError',
  CreatePodSandboxError: 'CreatePodSandboxError',
  ConfigPodSandboxError: 'ConfigPodSandboxError',
  KillPodSandboxError: 'KillPodSandboxError',
  CreateContainerConfigError: 'CreateContainerConfigError',
  CreateContainerError: 'CreateContainerError',
  PreStartHookError: 'PreStartHookError',
  PostStartHookError: 'PostStartHookError',
  ErrImagePull: 'ErrImagePull',
  ImagePullBackOff: 'ImagePullBackOff',
  ErrImageNeverPull: 'ErrImageNeverPull',
  InvalidImageName: 'InvalidImageName',
  ImageInspectError: 'ImageInspectError',
  RegistryUnavailable: 'RegistryUnavailable',
  SignatureValidationFailed: 'SignatureValidationFailed',
} as const;
export type SyncErrorName = (typeof SyncErrors)[keyof typeof SyncErrors];

/** A failed step: the kubelet error name and the human message. */
export interface StepFailure {
  readonly error: SyncErrorName;
  readonly message: string;
  /** For backoff failures: when the backoff expires (ms since the epoch). */
  readonly retryAt?: number;
}

/**
 * The image pulls of one SyncPod: when the first started and the last successful one finished (ms
 * since the epoch), for the pod start SLI (pod_startup_latency_tracker's firstStartedPulling /
 * lastFinishedPulling).
 */
export class PullWindow {
  startedAt: number | undefined;
  finishedAt: number | undefined;

  /** A pull starts (RecordImageStartedPulling: the first one counts). */
  started(at: number): void {
    this.startedAt ??= at;
  }

  /** A pull succeeded (RecordImageFinishedPulling: the last one counts). */
  finished(at: number): void {
    this.finishedAt = this.finishedAt === undefined ? at : Math.max(this.finishedAt, at);
  }
}

/** Collects SyncResults in order (kubecontainer.PodSyncResult), and the sync's image pulls. */
export class PodSyncResult {
  readonly results: SyncResult[] = [];
  readonly pulls = new PullWindow();
  /** Init containers were removed (a change that has no result of its own). */
  removedContainers = false;
  /** The containers the sync created (their statuses are read with the status afterwards). */
  readonly createdContainers: string[] = [];

  /** Adds a successful (so far) result and returns it for a later `fail`. */
  add(action: SyncResult['action'], target: string): SyncResult {
    const r: SyncResult = { action, target };
    this.results.push(r);
    return r;
  }

  /** Marks `r` failed. */
  static fail(r: SyncResult, error: SyncErrorName, message: string, retryAt?: number): void {
    r.error = error;
    r.message = message;
    if (retryAt !== undefined) r.retryAt = retryAt;
  }

  /** True when any step failed. */
  get failed(): boolean {
    return this.results.some((r) => r.error !== undefined);
  }
}
