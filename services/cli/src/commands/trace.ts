/**
 * `splitlet trace POD`: the pod's creation trace as a waterfall (or `-o json`), read from Jaeger's
 * query API when one is configured, else from the spans every process keeps on the bus (SL_SPANS).
 * `--episodes` lists every trace of the pod (creation, restarts, updates, deletion) from the bus;
 * `--latest` shows the newest of them.
 */
import { Subjects, type SpanRecord } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { CliError } from '../state-dir.js';
import { findPod, listPods } from '../node-view.js';
import type { CliTarget } from '../target.js';
import { episodesTable, podEpisodes } from '../printers/episodes.js';
import { renderWaterfall } from '../printers/waterfall.js';

/** The trace id in a W3C traceparent. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '');
  return m?.[1];
}

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references?: { refType: string; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags?: { key: string; type: string; value: unknown }[];
  processID: string;
}

/** Reads a trace from Jaeger's query API (`/api/traces/<id>`). */
export async function spansFromJaeger(baseUrl: string, traceId: string): Promise<SpanRecord[]> {
  const res = await fetch(new URL(`/api/traces/${traceId}`, baseUrl), { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new CliError(`Jaeger at ${baseUrl} answered ${res.status} for trace ${traceId}`);
  const body = (await res.json()) as { data?: { spans: JaegerSpan[]; processes: Record<string, { serviceName: string }> }[] };
  const t = body.data?.[0];
  if (!t) return [];
  return t.spans.map((s) => {
    const tag = (k: string): unknown => s.tags?.find((x) => x.key === k)?.value;
    const parent = s.references?.find((r) => r.refType === 'CHILD_OF');
    const startNs = BigInt(s.startTime) * 1000n;
    const err = tag('otel.status_code') === 'ERROR' || tag('error') === true;
    return {
      type: 'kubelet.trace.Span.v1',
      traceId: s.traceID,
      spanId: s.spanID,
      ...(parent ? { parentSpanId: parent.spanID } : {}),
      name: s.operationName,
      kind: 0,
      service: t.processes[s.processID]?.serviceName ?? s.processID,
      startUnixNano: String(startNs),
      endUnixNano: String(startNs + BigInt(s.duration) * 1000n),
      statusCode: err ? 2 : 0,
      ...(typeof tag('otel.status_description') === 'string' ? { statusMessage: tag('otel.status_description') as string } : {}),
      attributes: {},
      links: (s.references ?? []).filter((r) => r.refType === 'FOLLOWS_FROM').map((r) => ({ traceId: r.traceID, spanId: r.spanID })),
    } satisfies SpanRecord;
  });
}

/** The span records on SL_SPANS under `filterSubject` (one trace's subject, or the node's `spansAll`). */
export async function spansFromBus(bus: Bus, filterSubject: string): Promise<SpanRecord[]> {
  const out: SpanRecord[] = [];
  await bus.readSpans(filterSubject, (s) => out.push(s));
  return out;
}

export async function trace(
  t: CliTarget,
  name: string,
  namespace: string,
  opts: { output: string | undefined; jaeger: string | undefined; traceId: string | undefined; episodes?: boolean; latest?: boolean },
  out: NodeJS.WritableStream,
): Promise<void> {
  if (opts.output !== undefined && opts.output !== 'json') throw new CliError(`unknown output format "${opts.output}" for trace: use -o json or nothing`);
  const bus = t.bus;
  let traceId = opts.traceId;
  /** Every span of the node on the bus, when the episodes were looked for. */
  let all: SpanRecord[] | undefined;
  if (!traceId) {
    const pod = findPod(await listPods(bus, t.nodeName), name, namespace, t.nodeName);
    const uid = pod?.pod.metadata.uid;
    if (!uid) throw new CliError(`Error from server (NotFound): pods "${name}" not found`);
    const creation = traceIdOf(pod?.creationTrace?.['traceparent']);
    if (opts.episodes === true || opts.latest === true) {
      all = await spansFromBus(bus, Subjects.spansAll(t.nodeName));
      const episodes = podEpisodes(all, uid, creation);
      if (opts.episodes === true) {
        if (opts.output === 'json')
          out.write(
            `${JSON.stringify(
              episodes.map((e) => ({
                traceId: e.traceId,
                root: e.root.name,
                service: e.root.service,
                startUnixNano: e.root.startUnixNano,
                spans: e.spans,
                errors: e.errors,
                creation: e.traceId === creation,
                linkedToCreation: e.linkedToCreation,
              })),
              null,
              2,
            )}\n`,
          );
        else out.write(episodesTable(episodes, creation, Date.now()));
        return;
      }
      traceId = episodes.at(-1)?.traceId;
      if (!traceId) throw new CliError(`pod "${name}" has no trace on the bus (spans are kept for an hour)`);
    } else {
      traceId = creation;
      if (!traceId) throw new CliError(`pod "${name}" has no recorded creation trace (was it created before tracing, or already deleted?)`);
    }
  }
  const id = traceId;
  const spans = opts.jaeger ? await spansFromJaeger(opts.jaeger, id) : (all?.filter((s) => s.traceId === id) ?? (await spansFromBus(bus, Subjects.spans(t.nodeName, id))));
  if (opts.output === 'json') out.write(`${JSON.stringify(spans, null, 2)}\n`);
  else out.write(renderWaterfall(spans, { color: Boolean((out as { isTTY?: boolean }).isTTY) }));
}
