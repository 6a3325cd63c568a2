/**
 * The three probe types, their names in events and metrics, the spec each reads, and the result
 * vocabulary of a single probe run.
 *
 * Models pkg/kubelet/prober/prober_manager.go (probeType, String) and pkg/probe/probe.go (Result).
 */
import type { Container, Probe } from '@splitlet/api';

/** A probe type, as the kubelet's `probeType`. */
export type ProbeType = 'liveness' | 'readiness' | 'startup';

/** Every probe type. */
export const PROBE_TYPES: readonly ProbeType[] = ['liveness', 'readiness', 'startup'];

/** `probeType.String()`: the word that starts event messages and the `probe_type` metric label. */
export const ProbeTypeNames = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' } as const satisfies Record<ProbeType, string>;

/** The result one handler run gives (pkg/probe Result: success, warning, failure, unknown). */
export type HandlerResult = 'success' | 'warning' | 'failure' | 'unknown';

/** What a handler run returns: the result and its output (the text the events show). */
export interface HandlerOutcome {
  readonly result: HandlerResult;
  readonly output: string;
}

/** The probe spec of `type` on a container, with the API defaults filled in. */
export function probeSpecOf(container: Container, type: ProbeType): Probe | undefined {
  const p = type === 'liveness' ? container.livenessProbe : type === 'readiness' ? container.readinessProbe : container.startupProbe;
  if (p === undefined) return undefined;
  return {
    ...p,
    timeoutSeconds: p.timeoutSeconds ?? 1,
    periodSeconds: p.periodSeconds ?? 10,
    successThreshold: p.successThreshold ?? 1,
    failureThreshold: p.failureThreshold ?? 3,
  };
}

/** The User-Agent of HTTP and gRPC probes: `kube-probe/<major>.<minor>` of the kubelet splitlet follows. */
export const KUBE_PROBE_USER_AGENT = 'kube-probe/1.34';
