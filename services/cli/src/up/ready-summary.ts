/**
 * The line `splitlet up` prints once every process answers /readyz: where the node's NATS, health
 * and metrics endpoints and traces are.
 */

/** A process and its health port, as the supervisor knows it. */
export interface ProcessPort {
  name: string;
  healthPort?: number;
}

/** Options of {@link readySummary}. */
export interface ReadySummaryInput {
  nodeName: string;
  natsUrl: string;
  processes: readonly ProcessPort[];
  startedMs: number;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces one), when traces leave the machine. */
  otlpEndpoint: string | undefined;
  /** The embedded API server's kubeconfig, when `up` started it. */
  kubeconfig?: string | undefined;
}

/** One line (plus the per-process ports) telling where everything is. */
export function readySummary(i: ReadySummaryInput): string {
  const traces = i.otlpEndpoint
    ? `traces: OTLP to ${i.otlpEndpoint} (Jaeger) and \`splitlet trace POD\``
    : 'traces: `splitlet trace POD` (no OTLP collector: set OTEL_EXPORTER_OTLP_ENDPOINT for Jaeger)';
  const ports = i.processes.map((p) => `${p.name}:${p.healthPort ?? '?'}`).join(' ');
  return (
    `node ${i.nodeName} ready: ${i.processes.length} processes in ${(i.startedMs / 1000).toFixed(1)}s · NATS ${i.natsUrl} · ${traces}\n` +
    `  health and metrics: http://127.0.0.1:<port>/{healthz,readyz,metrics} — ${ports}\n` +
    (i.kubeconfig ? `  API server: kubectl --kubeconfig ${i.kubeconfig} get pods\n` : '')
  );
}

/** Every process answers /readyz with 200 (a process without a port yet is not ready). */
export async function allReady(processes: readonly ProcessPort[]): Promise<{ ready: boolean; waiting: string[] }> {
  const results = await Promise.all(
    processes.map(async (p) => {
      if (p.healthPort === undefined) return false;
      try {
        const res = await fetch(`http://127.0.0.1:${p.healthPort}/readyz`, { signal: AbortSignal.timeout(2000) });
        await res.body?.cancel();
        return res.ok;
      } catch {
        return false;
      }
    }),
  );
  const waiting = processes.filter((_, i) => !results[i]).map((p) => p.name);
  return { ready: waiting.length === 0, waiting };
}
