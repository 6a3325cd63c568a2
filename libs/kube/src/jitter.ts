/**
 * Jittered delays and the pod workers' requeue rule.
 *
 * Models k8s.io/apimachinery/pkg/util/wait (Jitter) and pkg/kubelet/pod_workers.go (completeWork).
 */
import { KubeletPeriods, NETWORK_NOT_READY_ERROR_MSG, WorkerJitter } from './constants.js';

/**
 * `d + random() * maxFactor * d`; a factor ≤ 0 means 1. `random` returns a number in [0, 1)
 * (inject a seeded one in tests).
 *
 * Models wait.Jitter.
 */
export function jitter(durationMs: number, maxFactor: number, random: () => number): number {
  const f = maxFactor <= 0 ? 1 : maxFactor;
  return durationMs + random() * f * durationMs;
}

/**
 * What a finished sync reports to {@link requeueDelay}.
 *
 * Models pkg/kubelet/pod_workers.go (completeWork arguments).
 */
export interface SyncOutcome {
  /** The sync moved the pod to another worker state (sync → terminating → terminated). */
  readonly phaseTransition?: boolean;
  /** The sync error's message, when it failed (a cancelled sync is not an error). */
  readonly error?: string;
}

/**
 * The delay before a pod is synced again: 0 after a phase transition; jitter(syncFrequency (1m), 0.5) after success;
 * jitter(1s, 0.5) after an error containing "network is not ready"; jitter(10s, 0.5) after any other
 * error.
 *
 * Models podWorkers.completeWork.
 */
export function requeueDelay(outcome: SyncOutcome, random: () => number, resyncMs: number = KubeletPeriods.resyncIntervalMs): number {
  if (outcome.phaseTransition === true) return 0;
  if (outcome.error === undefined) return jitter(resyncMs, WorkerJitter.resync, random);
  if (outcome.error.includes(NETWORK_NOT_READY_ERROR_MSG)) {
    return jitter(KubeletPeriods.networkNotReadyBackOffMs, WorkerJitter.backOff, random);
  }
  return jitter(KubeletPeriods.backOffPeriodMs, WorkerJitter.backOff, random);
}
