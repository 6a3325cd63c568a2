/**
 * Request bodies in the Kubernetes protobuf encoding, which kubectl's typed clients send for
 * `kubectl create configmap|secret|namespace|serviceaccount`: the `k8s\0` envelope around a
 * `runtime.Unknown`, decoded into the same JSON object a JSON body gives. Other kinds are 415.
 *
 * Models k8s.io/apimachinery/pkg/runtime/serializer/protobuf (the envelope) and the field numbers of
 * k8s.io/api/core/v1/generated.proto and apimachinery meta/v1 generated.proto (ObjectMeta).
 */
import protobuf from 'protobufjs';
import { ApiError } from './api-errors.js';

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const utf8 = new TextDecoder('utf-8', { fatal: true });

type Fields = Map<number, (Uint8Array | number | bigint)[]>;

/** Reads one message into field number → raw values (length-delimited as bytes, varints as numbers). */
function fields(buf: Uint8Array): Fields {
  const r = protobuf.Reader.create(buf);
  const out: Fields = new Map();
  while (r.pos < r.len) {
    const tag = r.uint32();
    const no = tag >>> 3;
    let v: Uint8Array | number;
    switch (tag & 7) {
      case 0:
        // eslint-disable-next-line @typescript-eslint/no-base-to-string -- protobufjs' Long has its own decimal toString()
        v = Number(r.int64().toString());
        break;
      case 2:
        v = r.bytes();
        break;
      default:
        r.skipType(tag & 7);
        continue;
    }
    out.set(no, [...(out.get(no) ?? []), v]);
  }
  return out;
}

const str = (f: Fields, no: number): string | undefined => {
  const v = f.get(no)?.[0];
  return v instanceof Uint8Array ? utf8.decode(v) : undefined;
};
const strs = (f: Fields, no: number): string[] => (f.get(no) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array).map((v) => utf8.decode(v));
const bool = (f: Fields, no: number): boolean | undefined => {
  const v = f.get(no)?.[0];
  return typeof v === 'number' ? v !== 0 : undefined;
};

function map(f: Fields, no: number, bytesValue: boolean): Record<string, string> | undefined {
  const entries = f.get(no);
  if (entries === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const e of entries) {
    if (!(e instanceof Uint8Array)) continue;
    const kv = fields(e);
    const key = str(kv, 1) ?? '';
    const raw = kv.get(2)?.[0];
    const value = raw instanceof Uint8Array ? raw : new Uint8Array();
    out[key] = bytesValue ? Buffer.from(value).toString('base64') : utf8.decode(value);
  }
  return out;
}

function objectMeta(buf: Uint8Array | undefined): Record<string, unknown> {
  if (buf === undefined) return {};
  const f = fields(buf);
  const m: Record<string, unknown> = {};
  const set = (k: string, v: unknown): void => {
    if (v !== undefined && !(Array.isArray(v) && v.length === 0)) m[k] = v;
  };
  set('name', str(f, 1));
  set('generateName', str(f, 2));
  set('namespace', str(f, 3));
  set('labels', map(f, 11, false));
  set('annotations', map(f, 12, false));
  set('finalizers', strs(f, 14));
  return m;
}

const first = (f: Fields, no: number): Uint8Array | undefined => {
  const v = f.get(no)?.[0];
  return v instanceof Uint8Array ? v : undefined;
};

/**
 * Decodes a protobuf request body of one of the kinds kubectl creates with typed clients. Throws 415
 * for another kind and 400 for a malformed envelope.
 */
export function decodeProtobufBody(body: Buffer): Record<string, unknown> {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) throw ApiError.badRequest('protobuf body without the k8s envelope');
  let unknown: Fields;
  let apiVersion: string;
  let kind: string;
  let raw: Fields;
  try {
    unknown = fields(body.subarray(4));
    const typeMeta = fields(first(unknown, 1) ?? new Uint8Array());
    apiVersion = str(typeMeta, 1) ?? '';
    kind = str(typeMeta, 2) ?? '';
    raw = fields(first(unknown, 2) ?? new Uint8Array());
  } catch (e) {
    throw ApiError.badRequest(`malformed protobuf body: ${e instanceof Error ? e.message : String(e)}`);
  }
  const metadata = objectMeta(first(raw, 1));
  const obj: Record<string, unknown> = { apiVersion, kind, metadata };
  const put = (k: string, v: unknown): void => {
    if (v !== undefined) obj[k] = v;
  };
  switch (`${apiVersion}/${kind}`) {
    case 'v1/ConfigMap':
      put('data', map(raw, 2, false));
      put('binaryData', map(raw, 3, true));
      put('immutable', bool(raw, 4));
      return obj;
    case 'v1/Secret':
      put('data', map(raw, 2, true));
      put('type', str(raw, 3));
      put('stringData', map(raw, 4, false));
      put('immutable', bool(raw, 5));
      return obj;
    case 'v1/Namespace': {
      const spec = first(raw, 2);
      if (spec !== undefined) obj['spec'] = { finalizers: strs(fields(spec), 1) };
      return obj;
    }
    case 'v1/ServiceAccount':
      put('automountServiceAccountToken', bool(raw, 4));
      return obj;
    default:
      throw new ApiError(415, 'UnsupportedMediaType', `protobuf bodies of ${apiVersion}/${kind} are not supported by this server; send JSON`);
  }
}
