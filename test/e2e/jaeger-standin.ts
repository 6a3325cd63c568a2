/**
 * Jaeger's stand-in for the compose smoke test (no Jaeger image can be pulled here): the OTLP/HTTP
 * receiver on :4318 (Jaeger's OTLP port, under the `jaeger` service name) and the part of Jaeger's
 * query API the smoke test and the README use on :16686, over the spans received so far:
 *
 *   GET /api/services                                    {"data": [service names]}
 *   GET /api/traces?service=S[&operation=O][&tags=JSON]  {"data": [trace…]} (traces with a matching span)
 *   GET /api/traces/<traceID>                            {"data": [trace]}, 404 when unknown
 *
 * A trace is `{traceID, spans: [{traceID, spanID, operationName, references, startTime, duration,
 * tags, processID}], processes: {p1: {serviceName, tags}}}` as Jaeger returns it (times in µs).
 * Run with Node 24's type stripping: `node test/e2e/jaeger-standin.ts` (stops on SIGTERM).
 */
import { createServer } from 'node:http';
import { startOtlpReceiver } from '../integration/otlp-receiver.ts';
import type { AttrValue, ReceivedSpan } from '../integration/otlp-receiver.ts';

interface JaegerTag {
  key: string;
  type: string;
  value: string | number | boolean;
}

function tag(key: string, v: AttrValue): JaegerTag {
  if (typeof v === 'boolean') return { key, type: 'bool', value: v };
  if (typeof v === 'number') return { key, type: 'float64', value: v };
  if (typeof v === 'bigint') return { key, type: 'int64', value: Number(v) };
  return { key, type: 'string', value: typeof v === 'string' ? v : JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? String(x) : x)) };
}

/** An attribute as the text a `tags` query compares with: a scalar's String(), JSON for anything else. */
function tagText(v: AttrValue | undefined): string {
  return typeof v === 'object' && v !== null ? JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? String(x) : x)) : String(v);
}

/** The spans of one trace in Jaeger's JSON shape. */
function jaegerTrace(traceId: string, spans: readonly ReceivedSpan[]): unknown {
  const processes = new Map<string, { id: string; serviceName: string; tags: JaegerTag[] }>();
  const processOf = (s: ReceivedSpan): string => {
    const key = JSON.stringify(s.resource, (_, x: unknown) => (typeof x === 'bigint' ? String(x) : x));
    let p = processes.get(key);
    if (p === undefined) {
      p = { id: `p${processes.size + 1}`, serviceName: s.service, tags: Object.entries(s.resource).map(([k, v]) => tag(k, v)) };
      processes.set(key, p);
    }
    return p.id;
  };
  return {
    traceID: traceId,
    spans: spans.map((s) => ({
      traceID: s.traceId,
      spanID: s.spanId,
      operationName: s.name,
      references: s.parentSpanId === undefined ? [] : [{ refType: 'CHILD_OF', traceID: s.traceId, spanID: s.parentSpanId }],
      startTime: Number(s.startUnixNano / 1000n),
      duration: Number((s.endUnixNano - s.startUnixNano) / 1000n),
      tags: Object.entries(s.attributes).map(([k, v]) => tag(k, v)),
      processID: processOf(s),
    })),
    processes: Object.fromEntries([...processes.values()].map((p) => [p.id, { serviceName: p.serviceName, tags: p.tags }])),
  };
}

const receiver = await startOtlpReceiver({ host: '0.0.0.0', port: 4318 });
const byTrace = (id: string): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === id);

const query = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const send = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  if (url.pathname === '/api/services') {
    send(200, { data: [...new Set(receiver.spans.map((s) => s.service))].sort() });
    return;
  }
  const one = /^\/api\/traces\/([0-9a-f]{32})$/.exec(url.pathname);
  if (one?.[1] !== undefined) {
    const spans = byTrace(one[1]);
    if (spans.length === 0) send(404, { data: null, errors: [{ code: 404, msg: 'trace not found' }] });
    else send(200, { data: [jaegerTrace(one[1], spans)] });
    return;
  }
  if (url.pathname === '/api/traces') {
    const service = url.searchParams.get('service');
    const operation = url.searchParams.get('operation');
    let tags: Record<string, string> = {};
    try {
      tags = JSON.parse(url.searchParams.get('tags') ?? '{}') as Record<string, string>;
    } catch {
      send(400, { data: null, errors: [{ code: 400, msg: 'tags is not JSON' }] });
      return;
    }
    const ids = new Set(
      receiver.spans
        .filter((s) => (service === null || s.service === service) && (operation === null || s.name === operation))
        .filter((s) => Object.entries(tags).every(([k, v]) => tagText(s.attributes[k]) === v))
        .map((s) => s.traceId),
    );
    send(200, { data: [...ids].map((id) => jaegerTrace(id, byTrace(id))) });
    return;
  }
  send(404, { data: null, errors: [{ code: 404, msg: `no route ${url.pathname}` }] });
});
await new Promise<void>((resolve) => query.listen(16686, '0.0.0.0', resolve));
process.stdout.write(`${JSON.stringify({ msg: 'jaeger stand-in ready', otlp: ':4318', query: ':16686' })}\n`);

const stop = (): void => {
  query.closeAllConnections();
  query.close();
  void receiver.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
