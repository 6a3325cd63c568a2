/**
 * Probe results as the kubelet's results managers hold them, keyed by runtime container id.
 *
 * Models pkg/kubelet/prober/results/results_manager.go (Result, Manager.Get).
 */

/**
 * A probe result.
 *
 * Models pkg/kubelet/prober/results/results_manager.go (Result).
 */
export type ProbeResult = 'Success' | 'Failure' | 'Unknown';

/**
 * The liveness, readiness and startup results known for a pod's containers, keyed by runtime
 * container id (without the `<runtime>://` prefix). A missing entry means the probe has not run yet
 * (or the container has no such probe).
 *
 * Models the three proberesults.Manager instances (livenessManager, readinessManager, startupManager).
 */
export interface ProbeResults {
  readonly liveness?: Readonly<Record<string, ProbeResult>> | undefined;
  readonly readiness?: Readonly<Record<string, ProbeResult>> | undefined;
  readonly startup?: Readonly<Record<string, ProbeResult>> | undefined;
}
