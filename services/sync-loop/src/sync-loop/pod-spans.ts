/**
 * The span of one pod of a config update (`admitPod`, `updatePod`): a child of the pod's own trace
 * (the update item's carrier), linked to the message's consumer span; failures recorded on it.
 *
 * Models nothing in the kubelet (its handlers are untraced); see docs/architecture.md, "Traces".
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { PodUpdateItem } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { extractContext, podSpanAttributes } from '@splitlet/telemetry';

/**
 * A span for one pod of an update, child of the pod's trace (the item's carrier), linked to the
 * message's consumer span (the active one).
 */
export function startPodSpan(tracer: Tracer, name: string, item: PodUpdateItem, updateType: string): { span: Span; ctx: Context } {
  const consumer = trace.getSpanContext(context.active());
  const parent = item.trace === undefined ? context.active() : extractContext(item.trace, ROOT_CONTEXT);
  const span = tracer.startSpan(
    name,
    {
      kind: SpanKind.INTERNAL,
      attributes: { ...podSpanAttributes(item.pod.metadata), 'k8s.pod.update_type': updateType },
      ...(consumer !== undefined && item.trace !== undefined ? { links: [{ context: consumer }] } : {}),
    },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

/** Runs `fn` in `ctx`, records a failure on `span`, and ends it. */
export async function inPodSpan(span: Span, ctx: Context, fn: () => Promise<void>): Promise<void> {
  try {
    await context.with(ctx, fn);
  } catch (e) {
    span.recordException(e instanceof Error ? e : String(e));
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(e) });
    throw e;
  } finally {
    span.end();
  }
}
