/**
 * The kubelet's pod status patch: a two-way strategic merge patch from the status the API server
 * has to the one the kubelet computed, with the pod's `metadata.uid` as a precondition.
 *
 * Models pkg/util/pod/pod.go (PatchPodStatus / preparePatchBytesForPodStatus) over
 * strategicpatch.CreateTwoWayMergePatch for core/v1 PodStatus: `conditions` merge by `type`
 * (`$setElementOrder/conditions` carries the order, a removed condition is `$patch: delete`),
 * `podIPs`/`hostIPs` merge by `ip`, every other field (container statuses included) is replaced.
 */
import { isDeepStrictEqual } from 'node:util';

type Json = Record<string, unknown>;

/** The lists of PodStatus that merge by a key, and that key. */
const MERGE_KEYS: Readonly<Record<string, string>> = { conditions: 'type', podIPs: 'ip', hostIPs: 'ip' };

/**
 * The patch taking `oldStatus` to `newStatus`, or `undefined` when they are equal.
 * The result carries `metadata.uid` = `uid` (the API server refuses it for another pod).
 */
export function podStatusPatch(uid: string, oldStatus: Json, newStatus: Json): Json | undefined {
  const status: Json = {};
  for (const key of new Set([...Object.keys(oldStatus), ...Object.keys(newStatus)])) {
    const before = oldStatus[key];
    const after = newStatus[key];
    if (isDeepStrictEqual(before, after)) continue;
    if (after === undefined) {
      status[key] = null;
      continue;
    }
    const mergeKey = MERGE_KEYS[key];
    if (mergeKey !== undefined && Array.isArray(after)) {
      Object.assign(status, listPatch(key, mergeKey, Array.isArray(before) ? (before as Json[]) : [], after as Json[]));
      continue;
    }
    status[key] = after;
  }
  if (Object.keys(status).length === 0) return undefined;
  return { metadata: { uid }, status };
}

function listPatch(key: string, mergeKey: string, before: Json[], after: Json[]): Json {
  const old = new Map(before.map((e) => [e[mergeKey], e]));
  const keep = new Set(after.map((e) => e[mergeKey]));
  const changed: Json[] = [];
  for (const e of after) {
    const prev = old.get(e[mergeKey]);
    if (prev === undefined) changed.push(e);
    else if (!isDeepStrictEqual(prev, e)) changed.push(elementPatch(mergeKey, prev, e));
  }
  for (const e of before) if (!keep.has(e[mergeKey])) changed.push({ [mergeKey]: e[mergeKey], $patch: 'delete' });
  return { [`$setElementOrder/${key}`]: after.map((e) => ({ [mergeKey]: e[mergeKey] })), ...(changed.length > 0 ? { [key]: changed } : {}) };
}

/** The changed fields of one list element, with its merge key (removed fields are null). */
function elementPatch(mergeKey: string, before: Json, after: Json): Json {
  const out: Json = { [mergeKey]: after[mergeKey] };
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (isDeepStrictEqual(before[k], after[k])) continue;
    out[k] = after[k] === undefined ? null : after[k];
  }
  return out;
}

/** True for a terminal pod phase. */
export function isTerminalPhase(phase: unknown): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * The status to send: `computed`, except that a terminal phase the API server already has is never
 * left (status manager mergePodStatus / the API server's validation): phase, reason and message stay.
 */
export function neverRegressTerminal(apiStatus: Json, computed: Json): Json {
  if (!isTerminalPhase(apiStatus['phase']) || isTerminalPhase(computed['phase'])) return computed;
  const out: Json = { ...computed, phase: apiStatus['phase'] };
  for (const k of ['reason', 'message'] as const) {
    if (apiStatus[k] === undefined) delete out[k];
    else out[k] = apiStatus[k];
  }
  return out;
}
