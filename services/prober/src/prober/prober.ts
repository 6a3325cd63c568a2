/**
 * Runs one probe of a container with the handler its spec names, retrying a probe *error* up to 3
 * times, and records the kubelet's events: Warning `Unhealthy` "<Type> probe failed: <output>",
 * "<Type> probe errored and resulted in <result> state: <error>", Warning `ProbeWarning`
 * "<Type> probe warning: <output>".
 *
 * Models pkg/kubelet/prober/prober.go (probe, runProbeWithRetries, runProbe).
 */
import { errorMessage, type BoundPod, type Container, type Probe } from '@splitlet/api';
import { execProbe, type ExecRuntime } from '../handlers/exec-probe.js';
import { grpcProbe } from '../handlers/grpc-probe.js';
import { httpProbe } from '../handlers/http-probe.js';
import { resolveContainerPort } from '../handlers/resolve-port.js';
import { tcpProbe } from '../handlers/tcp-probe.js';
import type { ProbeEventSink } from '../ports.js';
import { KUBE_PROBE_USER_AGENT, ProbeTypeNames, probeSpecOf, type HandlerOutcome, type ProbeType } from './probe-type.js';

/** maxProbeRetries. */
const MAX_PROBE_RETRIES = 3;

/** What a probe run concludes: the results-manager value, or an error (the run is thrown away). */
export interface ProbeRun {
  readonly result: 'Success' | 'Failure' | 'Unknown';
  /** Set when the probe errored: the worker throws the result away. */
  readonly error?: string;
  /** The handler's output (a failure's reason). */
  readonly output: string;
}

/** Where a container is reached. */
export interface ProbeTarget {
  readonly pod: BoundPod;
  readonly container: Container;
  /** Whether it is an init container (for the event's field path). */
  readonly init: boolean;
  readonly containerId: string;
  /** The pod's IP (`status.podIP`); '' when it has none. */
  readonly podIP: string;
}

/** Options of {@link createProber}. */
export interface ProberOptions {
  readonly runtime: ExecRuntime;
  readonly events: ProbeEventSink;
  /** @default KUBE_PROBE_USER_AGENT */
  readonly userAgent?: string;
}

/** The prober: `probe(type, target)` runs one probe and records its events. */
export interface Prober {
  probe(type: ProbeType, target: ProbeTarget, signal?: AbortSignal): Promise<ProbeRun>;
}

/** The pkg/probe result names, as the "errored and resulted in %s state" text prints them. */
const RESULT_TEXT = { success: 'success', warning: 'warning', failure: 'failure', unknown: 'unknown' } as const;

export function createProber(o: ProberOptions): Prober {
  const userAgent = o.userAgent ?? KUBE_PROBE_USER_AGENT;

  async function runOnce(spec: Probe, t: ProbeTarget, signal: AbortSignal | undefined): Promise<HandlerOutcome> {
    const timeoutS = spec.timeoutSeconds ?? 1;
    if (spec.exec !== undefined) return execProbe(o.runtime, t.containerId, spec.exec.command ?? [], timeoutS, signal);
    if (spec.httpGet !== undefined) {
      const h = spec.httpGet;
      const port = resolveContainerPort(h.port, t.container);
      const host = h.host !== undefined && h.host !== '' ? h.host : t.podIP;
      if (host === '') throw new Error('the pod has no IP address to probe');
      return httpProbe({ scheme: h.scheme === 'HTTPS' ? 'https' : 'http', host, port, path: h.path ?? '', headers: h.httpHeaders ?? [], userAgent }, timeoutS * 1000, signal);
    }
    if (spec.tcpSocket !== undefined) {
      const port = resolveContainerPort(spec.tcpSocket.port, t.container);
      const host = spec.tcpSocket.host !== undefined && spec.tcpSocket.host !== '' ? spec.tcpSocket.host : t.podIP;
      if (host === '') throw new Error('the pod has no IP address to probe');
      return tcpProbe(host, port, timeoutS * 1000, signal);
    }
    if (spec.grpc !== undefined) {
      if (t.podIP === '') throw new Error('the pod has no IP address to probe');
      return grpcProbe(t.podIP, spec.grpc.port, spec.grpc.service ?? '', timeoutS * 1000, userAgent);
    }
    throw new Error(`missing probe handler for ${t.pod.metadata.name}_${t.pod.metadata.namespace}(${t.pod.metadata.uid}):${t.container.name}`);
  }

  function event(t: ProbeTarget, reason: string, message: string): void {
    o.events.record({ pod: t.pod, containerName: t.container.name, init: t.init, eventType: 'Warning', reason, message });
  }

  return {
    async probe(type, t, signal) {
      const spec = probeSpecOf(t.container, type);
      if (spec === undefined) return { result: 'Success', output: '' };
      const name = ProbeTypeNames[type];
      let outcome: HandlerOutcome = { result: 'unknown', output: '' };
      let error: unknown;
      for (let i = 0; i < MAX_PROBE_RETRIES; i++) {
        try {
          outcome = await runOnce(spec, t, signal);
          error = undefined;
          break;
        } catch (e) {
          outcome = { result: 'unknown', output: '' };
          error = e;
        }
      }
      if (error !== undefined) {
        const msg = errorMessage(error);
        event(t, 'Unhealthy', `${name} probe errored and resulted in ${RESULT_TEXT[outcome.result]} state: ${msg}`);
        return { result: 'Failure', error: msg, output: '' };
      }
      switch (outcome.result) {
        case 'success':
          return { result: 'Success', output: outcome.output };
        case 'warning':
          event(t, 'ProbeWarning', `${name} probe warning: ${outcome.output}`);
          return { result: 'Success', output: outcome.output };
        case 'failure':
          event(t, 'Unhealthy', `${name} probe failed: ${outcome.output}`);
          return { result: 'Failure', output: outcome.output };
        case 'unknown':
          return { result: 'Failure', output: outcome.output };
      }
    },
  };
}
