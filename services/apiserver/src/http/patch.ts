/**
 * The three patch types the API server accepts for built-in objects.
 *
 * Models k8s.io/apimachinery/pkg/util/strategicpatch (StrategicMergePatch with the core/v1 patch
 * merge keys, `$patch: delete|replace`, `$retainKeys`, `$deleteFromPrimitiveList/…`,
 * `$setElementOrder/…`), evanphx/json-patch (RFC 6902) and RFC 7386 JSON merge patch.
 */
import { ApiError } from './api-errors.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The patch media types. */
export const PatchTypes = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

/** RFC 7386: objects merge recursively, `null` deletes, anything else replaces. `target` is not changed. */
export function mergePatch(target: Json, patch: Json): Json {
  return mergeInto(structuredClone(target), patch);
}

/** {@link mergePatch} into `owned`, a copy the caller made for it (copied once, not per level). */
function mergeInto(owned: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: JsonObject = isObject(owned) ? owned : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergeInto(out[k] ?? null, v);
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw ApiError.badRequest(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function parentOf(doc: Json, tokens: string[], path: string): { parent: JsonObject | Json[]; last: string } {
  let cur: Json = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)] ?? null;
    else if (isObject(cur)) cur = cur[t] ?? null;
    else cur = null;
    if (cur === null) throw ApiError.badRequest(`the server rejected our request due to an error in our request: path ${JSON.stringify(path)} does not exist`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw ApiError.badRequest(`path ${JSON.stringify(path)}: parent is not a container`);
  return { parent: cur, last: tokens[tokens.length - 1] ?? '' };
}

function getAt(doc: Json, path: string): Json {
  let cur: Json = doc;
  for (const t of pointer(path)) {
    if (Array.isArray(cur)) cur = cur[Number(t)] ?? null;
    else if (isObject(cur) && t in cur) cur = cur[t] ?? null;
    else throw ApiError.badRequest(`path ${JSON.stringify(path)} does not exist`);
  }
  return cur;
}

function removeAt(doc: Json, path: string): Json {
  const { parent, last } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const i = Number(last);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw ApiError.badRequest(`path ${JSON.stringify(path)}: index out of range`);
    return parent.splice(i, 1)[0] ?? null;
  }
  if (!(last in parent)) throw ApiError.badRequest(`path ${JSON.stringify(path)} does not exist`);
  const v = parent[last] ?? null;
  delete parent[last];
  return v;
}

function addAt(doc: Json, path: string, value: Json, replace: boolean): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : Number(last);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) throw ApiError.badRequest(`path ${JSON.stringify(path)}: index out of range`);
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
  } else {
    if (replace && !(last in parent)) throw ApiError.badRequest(`path ${JSON.stringify(path)} does not exist`);
    parent[last] = value;
  }
  return doc;
}

/** The `from` pointer of a move or copy operation. */
function fromOf(op: Record<string, unknown>): string {
  const from = op['from'];
  if (typeof from !== 'string') throw ApiError.badRequest(`invalid JSON patch operation: ${JSON.stringify(op)}: "from" must be a JSON pointer string`);
  return from;
}

/** RFC 6902 JSON patch. A failed `test` is 422 as the API server answers it. */
export function jsonPatch(target: Json, ops: unknown): Json {
  if (!Array.isArray(ops)) throw ApiError.badRequest('a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  for (const raw of ops) {
    if (!isObject(raw) || typeof raw['op'] !== 'string' || typeof raw['path'] !== 'string') throw ApiError.badRequest(`invalid JSON patch operation: ${JSON.stringify(raw)}`);
    const path = raw['path'];
    switch (raw['op']) {
      case 'add':
        doc = addAt(doc, path, structuredClone(raw['value'] ?? null), false);
        break;
      case 'replace':
        doc = addAt(doc, path, structuredClone(raw['value'] ?? null), true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'move': {
        const v = removeAt(doc, fromOf(raw));
        doc = addAt(doc, path, v, false);
        break;
      }
      case 'copy':
        doc = addAt(doc, path, structuredClone(getAt(doc, fromOf(raw))), false);
        break;
      case 'test':
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(raw['value'] ?? null)) {
          throw new ApiError(422, 'Invalid', `the server rejected our request due to an error in our request: testing value ${path} failed`);
        }
        break;
      default:
        throw ApiError.badRequest(`unexpected JSON patch operation ${JSON.stringify(raw['op'])}`);
    }
  }
  return doc;
}

/** core/v1 `patchMergeKey`s by field name (the name alone decides in the types served here). */
const MERGE_KEYS: Readonly<Record<string, string>> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  env: 'name',
  imagePullSecrets: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  ports: 'containerPort',
  conditions: 'type',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  addresses: 'type',
  taints: 'key',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
};
/** Lists of scalars with `patchStrategy: merge` (union). */
const MERGE_PRIMITIVE_LISTS: ReadonlySet<string> = new Set(['finalizers']);

function keyOf(item: Json, key: string): string | undefined {
  return isObject(item) && item[key] !== undefined ? JSON.stringify(item[key]) : undefined;
}

/** The merge of a list field; `target` is the caller's own copy, changed in place. */
function mergeList(field: string, target: Json[], patch: Json[], order: Json[] | undefined): Json[] {
  const key = MERGE_KEYS[field];
  if (key === undefined) {
    if (MERGE_PRIMITIVE_LISTS.has(field)) {
      const out = [...target];
      for (const v of patch) if (!out.some((x) => JSON.stringify(x) === JSON.stringify(v))) out.push(v);
      return out;
    }
    return structuredClone(patch).filter((p) => !(isObject(p) && p['$patch'] !== undefined));
  }
  if (patch.some((p) => isObject(p) && p['$patch'] === 'replace')) return patch.filter((p) => !(isObject(p) && p['$patch'] === 'replace'));
  const out = target;
  for (const p of patch) {
    const k = keyOf(p, key);
    if (k === undefined) {
      out.push(structuredClone(p));
      continue;
    }
    const i = out.findIndex((t) => keyOf(t, key) === k);
    if (isObject(p) && p['$patch'] === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i >= 0) out[i] = strategicInto(out[i] ?? null, p);
    else out.push(strategicInto(null, p));
  }
  if (order !== undefined) {
    const rank = new Map(order.map((o, i) => [keyOf(o, key) ?? '', i]));
    out.sort((a, b) => (rank.get(keyOf(a, key) ?? '') ?? Infinity) - (rank.get(keyOf(b, key) ?? '') ?? Infinity));
  }
  return out;
}

/** Strategic merge patch on core/v1 objects. `target` is not changed. */
export function strategicMerge(target: Json, patch: Json): Json {
  return strategicInto(structuredClone(target), patch);
}

/** {@link strategicMerge} into `owned`, a copy the caller made for it (copied once, not per level). */
function strategicInto(owned: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch['$patch'] === 'replace') {
    const { $patch: _, ...rest } = patch;
    return structuredClone(rest);
  }
  if (patch['$patch'] === 'delete') return null;
  let out: JsonObject = isObject(owned) ? owned : {};
  const retain = patch['$retainKeys'];
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$retainKeys' || k === '$patch' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const drop = new Set((Array.isArray(v) ? v : []).map((x) => JSON.stringify(x)));
      const cur = out[field];
      if (Array.isArray(cur)) out[field] = cur.filter((x) => !drop.has(JSON.stringify(x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const cur = out[k];
    if (Array.isArray(v)) {
      const order = patch[`$setElementOrder/${k}`];
      out[k] = mergeList(k, Array.isArray(cur) ? cur : [], v, Array.isArray(order) ? order : undefined);
    } else if (isObject(v)) {
      const merged = strategicInto(cur ?? null, v);
      if (merged === null) delete out[k];
      else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  if (Array.isArray(retain)) {
    const keep = new Set(retain.map(String));
    out = Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k)));
  }
  return out;
}

/** Applies a patch of `contentType` to `target`; 415 for another type (server-side apply included). */
export function applyPatch(contentType: string, target: Json, body: unknown): Json {
  const type = contentType.split(';')[0]?.trim() ?? '';
  switch (type) {
    case PatchTypes.merge:
      return mergePatch(target, body as Json);
    case PatchTypes.json:
      return jsonPatch(target, body);
    case PatchTypes.strategic:
      return strategicMerge(target, body as Json);
    default:
      throw ApiError.unsupportedMediaType(type);
  }
}
