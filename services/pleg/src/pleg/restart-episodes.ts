/**
 * Which relist findings begin a new trace: a pod's regular container that died after it had
 * started — the container will be restarted, or the pod completes — unless the pod's own deletion
 * or update caused the death.
 *
 * splitlet's tracing contract (DESIGN.md §5): one trace per pod episode. Creation is one trace;
 * a later restart, update or deletion is a new trace with a span link to the creation trace.
 * config-source starts the traces of updates and deletions; a restart begins where it is first
 * noticed, in the relist that finds the dead container. The kubelet has no such notion (each
 * syncPod is its own trace there); this is splitlet's.
 *
 *     creation trace:  config.add … StartContainer ─ relist (poked) ─ saw the container exited
 *                                                                        │ (link)
 *     restart trace:   ContainerDied ─ send pleg ─ sync-loop ─ poke ─ syncPod ─ StartContainer …
 */
import { trace, type SpanContext } from '@opentelemetry/api';
import type { DesiredPod, RuntimeContainerStatus, RuntimePodStatus } from '@splitlet/api';
import { extractContext } from '@splitlet/telemetry';
import type { PlegEvent } from './generate-events.js';

/**
 * The regular (non-init) containers that `events` report dead, as last seen: a ContainerDied of a
 * container that exists in `next` (exited) or only in `before` (gone). Init containers finish as
 * part of a pod's start, and sandboxes are not containers the pod restarts, so neither counts.
 */
export function diedRegularContainers(before: RuntimePodStatus | undefined, next: RuntimePodStatus | undefined, events: readonly PlegEvent[]): RuntimeContainerStatus[] {
  const out: RuntimeContainerStatus[] = [];
  for (const e of events) {
    if (e.event !== 'ContainerDied' || e.containerName === undefined) continue;
    const c = next?.containers.find((x) => x.id === e.data) ?? before?.containers.find((x) => x.id === e.data);
    if (c !== undefined && c.init !== true) out.push(c);
  }
  return out;
}

/** The trace id a carrier names, when it names a valid span. */
function traceIdOf(carrier: Readonly<Record<string, string>> | undefined): string | undefined {
  const sc = trace.getSpanContext(extractContext(carrier));
  return sc !== undefined && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

/** Why a death does not begin an episode, or the episode it begins. */
export type EpisodeDecision =
  | { readonly begins: false; readonly why: 'not desired' | 'rejected' | 'deleting' | "caused by the pod's update" }
  | { readonly begins: true; /** The span of the pod's creation trace to link, when known. */ readonly creation: SpanContext | undefined };

/**
 * Whether the death of a pod's regular container begins a new episode (a new trace).
 *
 * Not when the pod is no longer desired (removed, orphaned: whatever removed it owns the kill) or
 * rejected; not while it is being deleted (`deletionTimestamp`: its deaths are the deletion's);
 * not when the relist serves a poke from the trace of the pod's latest update (`desired.trace`,
 * when that is not the creation) — the update replaced the container. Otherwise yes, linked to
 * `desired.creationTrace`.
 *
 * `triggerTraceIds`: the trace ids of the sampled pokes the relist serves.
 */
export function restartEpisode(desired: DesiredPod | undefined, triggerTraceIds: ReadonlySet<string>): EpisodeDecision {
  if (desired === undefined) return { begins: false, why: 'not desired' };
  if (desired.rejected !== undefined) return { begins: false, why: 'rejected' };
  if (desired.pod.metadata.deletionTimestamp != null) return { begins: false, why: 'deleting' };
  const sc = trace.getSpanContext(extractContext(desired.creationTrace));
  const creation = sc !== undefined && trace.isSpanContextValid(sc) ? sc : undefined;
  const update = traceIdOf(desired.trace);
  if (update !== undefined && update !== creation?.traceId && triggerTraceIds.has(update)) {
    return { begins: false, why: "caused by the pod's update" };
  }
  return { begins: true, creation };
}
