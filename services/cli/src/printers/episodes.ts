/**
 * A pod's episodes: every trace that touched the pod (a span with its `k8s.pod.uid`) — its
 * creation, each restart, update and deletion — one row each, oldest first, with the trace id to
 * open with `splitlet trace --trace-id`.
 */
import type { SpanRecord } from '@splitlet/api';
import { formatTable, humanDuration } from './pod-table.js';

/** One trace of a pod. */
export interface PodEpisode {
  readonly traceId: string;
  /** The trace's root: its earliest span whose parent is not in the trace. */
  readonly root: SpanRecord;
  readonly spans: number;
  readonly processes: number;
  readonly errors: number;
  /** The trace's end − its root's start, in ms. */
  readonly durationMs: number;
  /** Some span of it links to the creation trace. */
  readonly linkedToCreation: boolean;
}

const ns = (s: string): bigint => BigInt(s);

/** The traces among `spans` that touched pod `uid`, oldest root first. */
export function podEpisodes(spans: readonly SpanRecord[], uid: string, creationTraceId: string | undefined): PodEpisode[] {
  const byTrace = new Map<string, SpanRecord[]>();
  const touched = new Set<string>();
  for (const s of spans) {
    const list = byTrace.get(s.traceId);
    if (list === undefined) byTrace.set(s.traceId, [s]);
    else list.push(s);
    if (s.attributes['k8s.pod.uid'] === uid) touched.add(s.traceId);
  }
  const out: PodEpisode[] = [];
  for (const traceId of touched) {
    const list = byTrace.get(traceId)!;
    const ids = new Set(list.map((s) => s.spanId));
    const byStart = [...list].sort((a, b) => (ns(a.startUnixNano) < ns(b.startUnixNano) ? -1 : ns(a.startUnixNano) > ns(b.startUnixNano) ? 1 : 0));
    const root = byStart.find((s) => s.parentSpanId === undefined || !ids.has(s.parentSpanId)) ?? byStart[0]!;
    const end = list.reduce((m, s) => (ns(s.endUnixNano) > m ? ns(s.endUnixNano) : m), 0n);
    out.push({
      traceId,
      root,
      spans: list.length,
      processes: new Set(list.map((s) => s.service)).size,
      errors: list.filter((s) => s.statusCode === 2).length,
      durationMs: Number((end - ns(root.startUnixNano)) / 1_000_000n),
      linkedToCreation: creationTraceId !== undefined && list.some((s) => s.links.some((l) => l.traceId === creationTraceId)),
    });
  }
  return out.sort((a, b) => (ns(a.root.startUnixNano) < ns(b.root.startUnixNano) ? -1 : 1));
}

/** The episodes as a table: TRACE ID, EPISODE (the root span; `(creation)` marks the creation trace), PROCESS, AGE, DURATION, SPANS, ERRORS, LINKED. */
export function episodesTable(episodes: readonly PodEpisode[], creationTraceId: string | undefined, now: number): string {
  if (episodes.length === 0) return 'No traces of this pod on the bus (spans are kept for an hour).\n';
  return formatTable(
    ['TRACE ID', 'EPISODE', 'PROCESS', 'AGE', 'DURATION', 'SPANS', 'ERRORS', 'LINKED'],
    episodes.map((e) => [
      e.traceId,
      e.traceId === creationTraceId ? `${e.root.name} (creation)` : e.root.name,
      e.root.service,
      humanDuration(now - Number(ns(e.root.startUnixNano) / 1_000_000n)),
      e.durationMs >= 1000 ? `${(e.durationMs / 1000).toFixed(2)}s` : `${e.durationMs}ms`,
      String(e.spans),
      String(e.errors),
      e.traceId === creationTraceId ? '-' : e.linkedToCreation ? 'creation' : '<none>',
    ]),
  );
}
