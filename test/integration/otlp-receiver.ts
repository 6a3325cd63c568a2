/**
 * An in-test OTLP/HTTP trace receiver: `POST /v1/traces` with an `application/x-protobuf`
 * `ExportTraceServiceRequest` body (optionally gzip-encoded), decoded by a minimal protobuf reader
 * that knows only the fields splitlet's assertions need (opentelemetry-proto `trace/v1/trace.proto`,
 * `common/v1/common.proto`, `resource/v1/resource.proto`). The installed
 * `@opentelemetry/otlp-transformer` only serializes requests, so it cannot decode them.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { gunzipSync } from 'node:zlib';

/** An OTLP attribute value, flattened: arrays and key-value lists become JSON-like values. */
export type AttrValue = string | number | boolean | bigint | AttrValue[] | { [k: string]: AttrValue } | Uint8Array | null;

/** One received span. Ids are lower-case hex; times are nanoseconds since the epoch. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  traceState: string;
  name: string;
  kind: number;
  startUnixNano: bigint;
  endUnixNano: bigint;
  attributes: Record<string, AttrValue>;
  events: { name: string; timeUnixNano: bigint; attributes: Record<string, AttrValue> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, AttrValue> }[];
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  /** The resource's `service.name`. */
  service: string;
  resource: Record<string, AttrValue>;
  scope: string;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>` (the value of `OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly endpoint: string;
  /** Every span received so far, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Export requests received (and bodies that failed to decode, with the reason). */
  readonly requests: number;
  readonly errors: string[];
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// A minimal protobuf wire-format reader
// ---------------------------------------------------------------------------------------------

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

type Field =
  | { no: number; wire: typeof WIRE_VARINT; value: bigint }
  | { no: number; wire: typeof WIRE_I64; bytes: Uint8Array }
  | { no: number; wire: typeof WIRE_LEN; bytes: Uint8Array }
  | { no: number; wire: typeof WIRE_I32; bytes: Uint8Array };

function readVarint(buf: Uint8Array, pos: { i: number }): bigint {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos.i >= buf.length) throw new Error('truncated varint');
    const b = buf[pos.i++]!;
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return result;
    shift += 7n;
    if (shift > 70n) throw new Error('varint too long');
  }
}

/** Splits one message into its fields (in order; repeated fields appear repeatedly). */
export function fieldsOf(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  const pos = { i: 0 };
  while (pos.i < buf.length) {
    const key = Number(readVarint(buf, pos));
    const no = key >>> 3;
    const wire = key & 7;
    if (no === 0) throw new Error('field number 0');
    switch (wire) {
      case WIRE_VARINT:
        out.push({ no, wire, value: readVarint(buf, pos) });
        break;
      case WIRE_I64:
        if (pos.i + 8 > buf.length) throw new Error('truncated fixed64');
        out.push({ no, wire, bytes: buf.subarray(pos.i, pos.i + 8) });
        pos.i += 8;
        break;
      case WIRE_LEN: {
        const len = Number(readVarint(buf, pos));
        if (pos.i + len > buf.length) throw new Error(`truncated length-delimited field ${no}`);
        out.push({ no, wire, bytes: buf.subarray(pos.i, pos.i + len) });
        pos.i += len;
        break;
      }
      case WIRE_I32:
        if (pos.i + 4 > buf.length) throw new Error('truncated fixed32');
        out.push({ no, wire, bytes: buf.subarray(pos.i, pos.i + 4) });
        pos.i += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${wire} (field ${no})`);
    }
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function len(f: Field): Uint8Array {
  if (f.wire !== WIRE_LEN) throw new Error(`field ${f.no}: expected length-delimited, got wire type ${f.wire}`);
  return f.bytes;
}
function str(f: Field): string {
  return utf8.decode(len(f));
}
function hex(f: Field): string {
  return Buffer.from(len(f)).toString('hex');
}
function fixed64(f: Field): bigint {
  if (f.wire !== WIRE_I64) throw new Error(`field ${f.no}: expected fixed64`);
  return Buffer.from(f.bytes).readBigUInt64LE(0);
}
function varint(f: Field): bigint {
  if (f.wire !== WIRE_VARINT) throw new Error(`field ${f.no}: expected varint`);
  return f.value;
}

/** common.v1.AnyValue */
function anyValue(buf: Uint8Array): AttrValue {
  let v: AttrValue = null;
  for (const f of fieldsOf(buf)) {
    switch (f.no) {
      case 1:
        v = str(f);
        break;
      case 2:
        v = varint(f) !== 0n;
        break;
      case 3: {
        const n = BigInt.asIntN(64, varint(f));
        v = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
        break;
      }
      case 4:
        if (f.wire !== WIRE_I64) throw new Error('double_value: expected fixed64');
        v = Buffer.from(f.bytes).readDoubleLE(0);
        break;
      case 5:
        v = fieldsOf(len(f))
          .filter((x) => x.no === 1)
          .map((x) => anyValue(len(x)));
        break;
      case 6:
        v = keyValues(fieldsOf(len(f)).filter((x) => x.no === 1));
        break;
      case 7:
        v = new Uint8Array(len(f));
        break;
    }
  }
  return v;
}

/** repeated common.v1.KeyValue → a record. */
function keyValues(fields: Field[]): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const f of fields) {
    let key = '';
    let value: AttrValue = null;
    for (const kv of fieldsOf(len(f))) {
      if (kv.no === 1) key = str(kv);
      else if (kv.no === 2) value = anyValue(len(kv));
    }
    out[key] = value;
  }
  return out;
}

function decodeSpan(buf: Uint8Array, resource: Record<string, AttrValue>, scope: string): ReceivedSpan {
  const s: ReceivedSpan = {
    traceId: '',
    spanId: '',
    parentSpanId: undefined,
    traceState: '',
    name: '',
    kind: 0,
    startUnixNano: 0n,
    endUnixNano: 0n,
    attributes: {},
    events: [],
    links: [],
    statusCode: 0,
    statusMessage: '',
    service: typeof resource['service.name'] === 'string' ? resource['service.name'] : 'unknown',
    resource,
    scope,
  };
  const attrs: Field[] = [];
  for (const f of fieldsOf(buf)) {
    switch (f.no) {
      case 1:
        s.traceId = hex(f);
        break;
      case 2:
        s.spanId = hex(f);
        break;
      case 3:
        s.traceState = str(f);
        break;
      case 4:
        if (len(f).length > 0) s.parentSpanId = hex(f);
        break;
      case 5:
        s.name = str(f);
        break;
      case 6:
        s.kind = Number(varint(f));
        break;
      case 7:
        s.startUnixNano = fixed64(f);
        break;
      case 8:
        s.endUnixNano = fixed64(f);
        break;
      case 9:
        attrs.push(f);
        break;
      case 11: {
        const e = { name: '', timeUnixNano: 0n, attributes: {} as Record<string, AttrValue> };
        const ea: Field[] = [];
        for (const x of fieldsOf(len(f))) {
          if (x.no === 1) e.timeUnixNano = fixed64(x);
          else if (x.no === 2) e.name = str(x);
          else if (x.no === 3) ea.push(x);
        }
        e.attributes = keyValues(ea);
        s.events.push(e);
        break;
      }
      case 13: {
        const l = { traceId: '', spanId: '', attributes: {} as Record<string, AttrValue> };
        const la: Field[] = [];
        for (const x of fieldsOf(len(f))) {
          if (x.no === 1) l.traceId = hex(x);
          else if (x.no === 2) l.spanId = hex(x);
          else if (x.no === 4) la.push(x);
        }
        l.attributes = keyValues(la);
        s.links.push(l);
        break;
      }
      case 15:
        for (const x of fieldsOf(len(f))) {
          if (x.no === 2) s.statusMessage = str(x);
          else if (x.no === 3) s.statusCode = Number(varint(x));
        }
        break;
    }
  }
  s.attributes = keyValues(attrs);
  return s;
}

/** Decodes a `collector.trace.v1.ExportTraceServiceRequest` into its spans. */
export function decodeExportTraceServiceRequest(body: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fieldsOf(body)) {
    if (rs.no !== 1) continue;
    let resource: Record<string, AttrValue> = {};
    const scopeSpans: Uint8Array[] = [];
    for (const f of fieldsOf(len(rs))) {
      if (f.no === 1) resource = keyValues(fieldsOf(len(f)).filter((x) => x.no === 1));
      else if (f.no === 2) scopeSpans.push(len(f));
    }
    for (const ss of scopeSpans) {
      let scope = '';
      const spans: Uint8Array[] = [];
      for (const f of fieldsOf(ss)) {
        if (f.no === 1) {
          for (const x of fieldsOf(len(f))) if (x.no === 1) scope = str(x);
        } else if (f.no === 2) spans.push(len(f));
      }
      for (const sp of spans) out.push(decodeSpan(sp, resource, scope));
    }
  }
  return out;
}

/** Starts a receiver on `host` (127.0.0.1) and `port` (a free one). */
export async function startOtlpReceiver(options: { host?: string; port?: number } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const errors: string[] = [];
  let requests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      requests++;
      try {
        let body: Uint8Array = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        const type = req.headers['content-type'] ?? '';
        if (!type.startsWith('application/x-protobuf')) throw new Error(`content-type ${type} is not application/x-protobuf`);
        spans.push(...decodeExportTraceServiceRequest(body));
        // An empty ExportTraceServiceResponse: full success.
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } catch (e) {
        errors.push(e instanceof Error ? e.message : String(e));
        res.writeHead(400).end();
      }
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('receiver has no TCP address');
  return {
    endpoint: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`,
    spans,
    get requests() {
      return requests;
    },
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
