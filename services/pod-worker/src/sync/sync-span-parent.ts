/**
 * Which trace a sync's span joins: the parenting rules that keep one pod episode (a creation, a
 * termination, a container death and its restarts) in one trace across processes.
 *
 * Models nothing in the kubelet (its SyncPod spans are children of whatever context the caller
 * had); see docs/architecture.md, "Traces".
 */
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Context, Link } from '@opentelemetry/api';
import { extractContext } from '@splitlet/telemetry';
import type { SyncCtx } from './sync-context.js';

/**
 * The span parent, by what the sync carries out: a new create/update → the desired record's
 * trace; termination starting on a kill → the kill's trace; the next step of a state transition
 * → the previous sync's span; a runtime episode new to this worker (a container died after its
 * start) → the episode's `ContainerDied` span, unless the poke already is in that trace; else the
 * poke. The poke is linked whenever it is not the parent.
 */
export function syncSpanParent(ctx: SyncCtx): { parent: Context; links: Link[] } {
  const { decision, desired, kill, ctl } = ctx;
  let parent: Context | undefined;
  if (decision.newDesired && (decision.updateType === 'create' || decision.updateType === 'update') && desired?.value.trace !== undefined) {
    parent = extractContext(desired.value.trace);
  } else if (decision.enteredTerminating && kill?.value.trace !== undefined) {
    parent = extractContext(kill.value.trace);
  } else if (ctx.continues !== undefined) {
    parent = ctx.continues;
  } else if (ctx.newEpisode !== undefined && !sameTrace(ctx.newEpisode, ctl.trigger)) {
    parent = ctx.newEpisode;
  }
  const links: Link[] = [];
  if (parent === undefined) parent = ctl.trigger ?? ROOT_CONTEXT;
  else if (ctl.trigger !== undefined) {
    const sc = trace.getSpanContext(ctl.trigger);
    if (sc !== undefined && trace.isSpanContextValid(sc)) links.push({ context: sc });
  }
  return { parent, links };
}

/** True when both contexts name valid spans of the same trace. */
function sameTrace(a: Context, b: Context | undefined): boolean {
  const x = trace.getSpanContext(a);
  const y = b === undefined ? undefined : trace.getSpanContext(b);
  return x !== undefined && y !== undefined && trace.isSpanContextValid(x) && trace.isSpanContextValid(y) && x.traceId === y.traceId;
}
