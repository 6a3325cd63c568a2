/**
 * When a pod's worker syncs again, as its worker record says: `nextSyncAt` (sync-loop's 1 s tick
 * pokes the pod when it is due) and the trace the due sync continues.
 *
 * Models pkg/kubelet/pod_workers.go (completeWork's requeue into the work queue), persisted.
 */
import { TraceFlags, trace } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';
import type { TraceCarrier, WorkerRecord } from '@splitlet/api';
import { injectContext } from '@splitlet/telemetry';

/**
 * `rec` due again at `at`; the due sync continues the span of `retryOf` (the sync of an unfinished
 * episode) when it is sampled, else sync-loop pokes it unsampled.
 */
export function requeued(rec: WorkerRecord, at: number, retryOf: Context | undefined): WorkerRecord {
  const out: WorkerRecord = { ...rec, nextSyncAt: at };
  const carrier: TraceCarrier | undefined = retryOf === undefined ? undefined : sampledCarrier(retryOf);
  if (carrier !== undefined) out.nextSyncTrace = carrier;
  else delete out.nextSyncTrace;
  return out;
}

/** `rec` with no requeue pending. */
export function withoutRequeue(rec: WorkerRecord): WorkerRecord {
  const out = { ...rec };
  delete out.nextSyncAt;
  delete out.nextSyncTrace;
  return out;
}

/** The carrier of a context's span when it is sampled (an unsampled one would only say "do not trace"). */
function sampledCarrier(ctx: Context): TraceCarrier | undefined {
  const sc = trace.getSpanContext(ctx);
  if (sc === undefined || !trace.isSpanContextValid(sc) || (sc.traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return injectContext(ctx);
}
