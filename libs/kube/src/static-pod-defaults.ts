/**
 * Defaulting of a static pod read from a file or an http manifest.
 *
 * Models pkg/kubelet/config/common.go (applyDefaults, generatePodName) `[master]`.
 */
import type { BoundPod, Pod } from '@splitlet/api';
import { canonicalJson } from './canonical-json.js';
import { ConfigAnnotations } from './constants.js';
import { fnv1a128Hex } from './fnv.js';

/**
 * Where a static pod came from: a manifest file path, or a manifest URL.
 *
 * Models pkg/kubelet/config/common.go (applyDefaults `source` + `isFile`).
 */
export type StaticPodOrigin = { readonly kind: 'file'; readonly path: string } | { readonly kind: 'http'; readonly url: string };

/**
 * The UID the kubelet derives for a static pod without one: hex FNV-1a-128 over the pod's
 * deterministic serialization, then `host:<nodeName>` and `file:<path>` (file) or `url:<url>` (http).
 * Same manifest, node and path → same UID; any change → a new UID (a new pod).
 *
 * Models applyDefaults (`hash.DeepHashObject(hasher, pod)` then the `Fprintf`s; fnv.New128a).
 */
export function staticPodUid(pod: Pod, nodeName: string, origin: StaticPodOrigin): string {
  const suffix = origin.kind === 'file' ? [`host:${nodeName}`, `file:${origin.path}`] : [`url:${origin.url}`];
  return fnv1a128Hex(canonicalJson(pod), ...suffix);
}

/**
 * A defaulted copy of a static pod manifest (input unchanged): UID from {@link staticPodUid} when
 * missing; name `<name>-<lowercased nodeName>`; namespace `default` when empty; `spec.nodeName`;
 * annotations `kubernetes.io/config.hash` = UID and `kubernetes.io/config.source` = `file` | `http`;
 * for a file source the toleration `{operator: Exists, effect: NoExecute}` (added once);
 * `status.phase: Pending`. Run {@link applyPodApiDefaults} before it, as decoding does.
 *
 * Models config.applyDefaults.
 */
export function applyStaticPodDefaults(pod: Pod, nodeName: string, origin: StaticPodOrigin): BoundPod {
  const out = structuredClone(pod) as Pod & { apiVersion?: 'v1'; kind?: 'Pod' };
  const uid = out.metadata.uid !== undefined && out.metadata.uid !== '' ? out.metadata.uid : staticPodUid(pod, nodeName, origin);
  out.metadata.uid = uid;
  out.metadata.name = `${out.metadata.name ?? ''}-${nodeName.toLowerCase()}`;
  if (out.metadata.namespace === undefined || out.metadata.namespace === '') out.metadata.namespace = 'default';
  out.spec.nodeName = nodeName;
  out.metadata.annotations = {
    ...(out.metadata.annotations ?? {}),
    [ConfigAnnotations.hash]: uid,
    [ConfigAnnotations.source]: origin.kind,
  };
  if (origin.kind === 'file') {
    const tolerations = out.spec.tolerations ?? [];
    const exists = tolerations.some((t) => (t.key ?? '') === '' && t.operator === 'Exists' && (t.value ?? '') === '' && t.effect === 'NoExecute');
    out.spec.tolerations = exists ? tolerations : [...tolerations, { operator: 'Exists', effect: 'NoExecute' }];
  }
  out.status = { ...(out.status ?? {}), phase: 'Pending' };
  out.apiVersion ??= 'v1';
  out.kind ??= 'Pod';
  return out as BoundPod;
}
