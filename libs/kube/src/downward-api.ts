/**
 * The downward API: values a pod may read about itself, for environment variables (cri-adapter) and
 * for `downwardAPI` / projected volume files (volume-manager).
 *
 * Models pkg/fieldpath/fieldpath.go (ExtractFieldPathAsString, FormatMap),
 * pkg/kubelet/kubelet_pods.go (podFieldSelectorRuntimeValue, containerResourceRuntimeValue) and
 * pkg/api/v1/resource/helpers.go (ExtractContainerResourceValue).
 */
import type { BoundPod, Container } from '@splitlet/api';
import { KubeError } from './errors.js';
import { milliValue, quantityValue } from './quantity.js';

/** What the downward API may read besides the pod itself. */
export interface DownwardApiContext {
  /** The pod's primary IP (from the sandbox), '' when not known. */
  readonly podIP: string;
  readonly podIPs: readonly string[];
  /** The node's IPs, '' / [] when not known. */
  readonly hostIPs: readonly string[];
  /** Node allocatable, used for `resourceFieldRef` when the container sets no limit. */
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
}

/** A `resourceFieldRef` (env `valueFrom` or a downwardAPI volume item). */
export interface ResourceFieldRef {
  readonly resource: string;
  readonly containerName?: string | undefined;
  readonly divisor?: string | number | undefined;
}

/**
 * A map as the downward API prints it: sorted `key="value"` lines joined by "\n", values quoted as
 * Go's `%q` does (JSON string quoting agrees with it for printable text).
 *
 * Models fieldpath.FormatMap.
 */
export function formatDownwardMap(m: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m?.[k] ?? '')}`)
    .join('\n');
}

/**
 * The value of a `fieldRef`: `metadata.name|namespace|uid`, `metadata.labels['k']`,
 * `metadata.annotations['k']`, `metadata.labels`, `metadata.annotations`, `spec.nodeName`,
 * `spec.serviceAccountName`, `status.podIP(s)`, `status.hostIP(s)`. Throws a {@link KubeError}
 * `UnsupportedFieldPath` (`unsupported fieldPath: <path>`) for anything else.
 *
 * Models kubelet.podFieldSelectorRuntimeValue and fieldpath.ExtractFieldPathAsString.
 */
export function podFieldValue(fieldPath: string, pod: BoundPod, ctx: DownwardApiContext): string {
  switch (fieldPath) {
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? '';
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ctx.hostIPs.join(',');
    case 'status.podIP':
      return ctx.podIP;
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    case 'metadata.labels':
      return formatDownwardMap(pod.metadata.labels);
    case 'metadata.annotations':
      return formatDownwardMap(pod.metadata.annotations);
  }
  const sub = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (sub !== null) {
    const map = sub[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[sub[2] ?? ''] ?? '';
  }
  throw new KubeError('UnsupportedFieldPath', `unsupported fieldPath: ${fieldPath}`);
}

/**
 * The container a `resourceFieldRef` reads: the named one (regular or init), else `fallback` (the
 * container whose environment is being built). A volume item has no fallback and must name one.
 */
export function resourceFieldContainer(ref: ResourceFieldRef, pod: BoundPod, fallback?: Container): Container {
  if (ref.containerName !== undefined && ref.containerName !== '') {
    const found = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) => c.name === ref.containerName);
    if (found !== undefined) return found;
    if (fallback === undefined)
      throw new KubeError('UnsupportedFieldPath', `container ${JSON.stringify(ref.containerName)} not found in pod ${pod.metadata.namespace}/${pod.metadata.name}`);
    return fallback;
  }
  if (fallback === undefined) throw new KubeError('UnsupportedFieldPath', `resourceFieldRef ${JSON.stringify(ref.resource)}: containerName is required in a volume`);
  return fallback;
}

/**
 * The value of a `resourceFieldRef` (`limits.cpu`, `requests.memory`, …) divided by its divisor and
 * rounded up; a missing limit reads node allocatable. Throws a {@link KubeError}
 * `UnsupportedFieldPath` (`unsupported container resource : <name>`) for another resource.
 *
 * Models kubelet.containerResourceRuntimeValue and resource.ExtractContainerResourceValue.
 */
export function resourceFieldValue(ref: ResourceFieldRef, container: Container, ctx: DownwardApiContext): string {
  const [kind, name] = ref.resource.split('.', 2) as [string, string | undefined];
  const divisor = ref.divisor === undefined || ref.divisor === '' || ref.divisor === 0 ? '1' : ref.divisor;
  if (kind !== 'limits' && kind !== 'requests') throw new KubeError('UnsupportedFieldPath', `unsupported container resource : ${ref.resource}`);
  const fromSpec = kind === 'limits' ? container.resources?.limits?.[name ?? ''] : container.resources?.requests?.[name ?? ''];
  if (name === 'cpu') {
    const milli = fromSpec !== undefined ? milliValue(fromSpec) : kind === 'limits' ? ctx.nodeAllocatable.milliCpu : 0;
    return String(Math.ceil(milli / milliValue(divisor)));
  }
  if (name === 'memory' || name === 'ephemeral-storage') {
    const bytes = fromSpec !== undefined ? quantityValue(fromSpec) : kind === 'limits' && name === 'memory' ? ctx.nodeAllocatable.memoryBytes : 0;
    return String(Math.ceil(bytes / quantityValue(divisor)));
  }
  throw new KubeError('UnsupportedFieldPath', `unsupported container resource : ${ref.resource}`);
}
