/**
 * Decoding a manifest (YAML or JSON; a v1 Pod or a v1 PodList; one or more documents) into bound
 * static pods, or into the error that makes the whole manifest contribute no pods.
 *
 * Models pkg/kubelet/config/common.go (tryDecodeSinglePod, tryDecodePodList; utilyaml.ToJSON) and
 * file.go (extractFromFile). Multi-document files are a splitlet extension: the kubelet reads one
 * object per file.
 */
import { parseAllDocuments } from 'yaml';
import { Pod, PodList } from '@splitlet/api';
import type { BoundPod } from '@splitlet/api';
import { formatIssuesOf } from './zod-issues.js';
import { prepareStaticPod } from '@splitlet/kube';
import type { StaticPodOrigin } from '@splitlet/kube';

/** The largest manifest the kubelet reads: 10 MiB (file.go `maxConfigLength`). */
export const MAX_CONFIG_LENGTH = 10 * 1024 * 1024;

/** A decoded manifest: its pods, or the first error (with the 0-based document it is in). */
export type DecodeResult = { readonly ok: true; readonly pods: BoundPod[] } | { readonly ok: false; readonly message: string; readonly document?: number };

/** Options of {@link decodeManifest}. */
export interface DecodeOptions {
  /** Accept several `---`-separated documents. @default true */
  readonly multiDocument?: boolean;
}

/**
 * Drops `null`-valued object properties, recursively: Go's decoder leaves a field at its zero value
 * for `null` (so `metadata:` with nothing under it is an empty ObjectMeta, not an error).
 */
function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = dropNulls(x);
  return out;
}

/**
 * The 1-based line of `offset` in `text` (how Go's yaml names where a parse error is); an error at
 * the end of the input is on the last line.
 */
function lineOf(text: string, offset: number): number {
  const end = Math.min(offset, text.trimEnd().length);
  let line = 1;
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 0x0a) line++;
  return line;
}

function firstLine(s: string): string {
  return s.split('\n')[0]?.trim() ?? s;
}

function describeKind(obj: Record<string, unknown>): string {
  const kind = typeof obj['kind'] === 'string' ? obj['kind'] : '';
  const apiVersion = typeof obj['apiVersion'] === 'string' ? obj['apiVersion'] : '';
  if (kind === '' && apiVersion === '') return 'an object without kind and apiVersion';
  if (kind === '') return `an object without kind (apiVersion ${JSON.stringify(apiVersion)})`;
  return `kind ${JSON.stringify(kind)}${apiVersion === '' ? ' without apiVersion' : ` (apiVersion ${JSON.stringify(apiVersion)})`}`;
}

/**
 * Decodes `text` and turns each pod into a bound static pod (API defaulting, `<name>-<node>`, UID
 * from the content hash with `file:<path>` or `url:<url>`, annotations, validation). Any error —
 * invalid YAML, an unknown kind or apiVersion, a pod without a name, a validation failure — fails
 * the whole manifest. Empty documents are skipped; a manifest with no document yields no pods.
 */
export function decodeManifest(text: string, nodeName: string, origin: StaticPodOrigin, options: DecodeOptions = {}): DecodeResult {
  const docs = parseAllDocuments(text, { prettyErrors: false });
  const list = Array.isArray(docs) ? docs : [];
  const multi = options.multiDocument ?? true;
  const pods: BoundPod[] = [];
  let seen = 0;
  for (const [i, doc] of list.entries()) {
    const at = list.length > 1 ? { document: i } : {};
    const fail = (message: string): DecodeResult => ({ ok: false, message: list.length > 1 ? `document[${i}]: ${message}` : message, ...at });
    const parseError = doc.errors[0];
    if (parseError !== undefined) return fail(`error converting YAML to JSON: yaml: line ${lineOf(text, parseError.pos[0])}: ${firstLine(parseError.message)}`);
    let obj: unknown;
    try {
      obj = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      return fail(`error converting YAML to JSON: ${firstLine(e instanceof Error ? e.message : String(e))}`);
    }
    if (obj === null || obj === undefined) continue;
    seen++;
    if (!multi && seen > 1) return fail('expected a single document, found several (separated by ---)');
    if (typeof obj !== 'object' || Array.isArray(obj)) return fail(`couldn't parse as pod: expected an object, got ${Array.isArray(obj) ? 'an array' : typeof obj}`);
    const rec = dropNulls(obj) as Record<string, unknown>;
    const kind = rec['kind'];
    const apiVersion = rec['apiVersion'];
    let manifests: Pod[];
    if (kind === 'Pod' && apiVersion === 'v1') {
      // A missing metadata is an empty ObjectMeta (so the name check reports it, as the kubelet does).
      const parsed = Pod.safeParse({ ...rec, metadata: rec['metadata'] ?? {} });
      if (!parsed.success) return fail(`couldn't parse as pod: ${formatIssuesOf(parsed.error)}`);
      manifests = [parsed.data];
    } else if (kind === 'PodList' && apiVersion === 'v1') {
      const items = Array.isArray(rec['items'])
        ? (rec['items'] as unknown[]).map((i) => (i !== null && typeof i === 'object' ? { ...i, metadata: (i as Record<string, unknown>)['metadata'] ?? {} } : i))
        : rec['items'];
      const parsed = PodList.safeParse({ ...rec, items });
      if (!parsed.success) return fail(`couldn't parse as pod list: ${formatIssuesOf(parsed.error)}`);
      manifests = parsed.data.items.map((item) => ({ ...item, apiVersion: 'v1', kind: 'Pod' }));
    } else {
      return fail(`unsupported ${describeKind(rec)}: a manifest must be a v1 Pod or a v1 PodList`);
    }
    for (const [j, manifest] of manifests.entries()) {
      const prepared = prepareStaticPod(manifest, nodeName, origin);
      if (!prepared.ok) return fail(manifests.length > 1 || kind === 'PodList' ? `items[${j}]: ${prepared.message}` : prepared.message);
      pods.push(prepared.pod);
    }
  }
  return { ok: true, pods };
}
