/**
 * Container environment variables and `$(VAR)` expansion, as the kubelet builds them.
 *
 * Models third_party/forked/golang/expansion/expand.go (Expand, MappingFuncFor),
 * pkg/kubelet/kubelet_pods.go (makeEnvironmentVariables, podFieldSelectorRuntimeValue,
 * containerResourceRuntimeValue) and pkg/kubelet/container/helpers.go (ExpandContainerCommandAndArgs).
 */
import type { BoundPod, Container, EnvVar } from '@splitlet/api';
import { milliValue, quantityValue } from '@splitlet/kube';

const OPERATOR = '$';
const OPENER = '(';
const CLOSER = ')';

/** A name → value lookup for {@link expand}; an unknown name returns the reference unchanged. */
export type Mapping = (name: string) => string;

/**
 * A mapping that looks `name` up in each map in turn and, when no map has it, returns `$(name)`
 * unchanged.
 *
 * Models expansion.MappingFuncFor.
 */
export function mappingFuncFor(...contexts: ReadonlyArray<ReadonlyMap<string, string>>): Mapping {
  return (name) => {
    for (const vars of contexts) {
      const v = vars.get(name);
      if (v !== undefined) return v;
    }
    return `${OPERATOR}${OPENER}${name}${CLOSER}`;
  };
}

/** Reads what follows a `$`: a `$(name)` reference, an escaped `$$`, or anything else verbatim. */
function tryReadVariableName(input: string): { read: string; isVar: boolean; advance: number } {
  const first = input[0];
  if (first === OPERATOR) return { read: OPERATOR, isVar: false, advance: 1 };
  if (first === OPENER) {
    for (let i = 1; i < input.length; i++) {
      if (input[i] === CLOSER) return { read: input.slice(1, i), isVar: true, advance: i + 1 };
    }
    return { read: OPERATOR + OPENER, isVar: false, advance: 1 };
  }
  return { read: OPERATOR + (first ?? ''), isVar: false, advance: 1 };
}

/**
 * Expands `$(VAR)` references in `input` with `mapping`. `$$` is an escaped `$` (so `$$(VAR)` stays
 * `$(VAR)`), an unclosed `$(` is kept as is, and a reference to an unknown name is left unexpanded.
 *
 * Models expansion.Expand.
 */
export function expand(input: string, mapping: Mapping): string {
  let buf = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] === OPERATOR && cursor + 1 < input.length) {
      buf += input.slice(checkpoint, cursor);
      const { read, isVar, advance } = tryReadVariableName(input.slice(cursor + 1));
      buf += isVar ? mapping(read) : read;
      cursor += advance;
      checkpoint = cursor + 1;
    }
  }
  return buf + input.slice(checkpoint);
}

/** One resolved variable. */
export interface EnvPair {
  readonly name: string;
  readonly value: string;
}

/** What the downward API may read besides the pod itself. */
export interface EnvContext {
  /** The pod's primary IP (from the sandbox), '' when not known. */
  readonly podIP: string;
  readonly podIPs: readonly string[];
  /** The node's IPs, '' / [] when not known. */
  readonly hostIPs: readonly string[];
  /** Node allocatable, used for `resourceFieldRef` when the container sets no limit. */
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
}

/** A variable could not be resolved: the container cannot be configured (CreateContainerConfigError). */
export class EnvResolutionError extends Error {
  override readonly name = 'EnvResolutionError';
}

function formatMap(m: Readonly<Record<string, string>> | undefined): string {
  // fieldpath.FormatMap: sorted `key="value"` lines joined by "\n".
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m?.[k] ?? '')}`)
    .join('\n');
}

/**
 * The value of a `fieldRef`: `metadata.name|namespace|uid`, `metadata.labels['k']`,
 * `metadata.annotations['k']`, `metadata.labels`, `metadata.annotations`, `spec.nodeName`,
 * `spec.serviceAccountName`, `status.podIP(s)`, `status.hostIP(s)`. Throws for anything else
 * (`unsupported fieldPath: <path>`).
 *
 * Models kubelet.podFieldSelectorRuntimeValue and fieldpath.ExtractFieldPathAsString.
 */
export function podFieldValue(fieldPath: string, pod: BoundPod, ctx: EnvContext): string {
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
      return formatMap(pod.metadata.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
  }
  const sub = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (sub !== null) {
    const map = sub[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[sub[2] ?? ''] ?? '';
  }
  throw new EnvResolutionError(`unsupported fieldPath: ${fieldPath}`);
}

/**
 * The value of a `resourceFieldRef` (`limits.cpu`, `requests.memory`, …) divided by its divisor and
 * rounded up; a missing limit reads node allocatable.
 *
 * Models kubelet.containerResourceRuntimeValue and resource.ExtractContainerResourceValue.
 */
export function resourceFieldValue(
  ref: { resource: string; divisor?: string | number | undefined },
  container: Container,
  ctx: EnvContext,
): string {
  const [kind, name] = ref.resource.split('.', 2) as [string, string | undefined];
  const divisor = ref.divisor === undefined || ref.divisor === '' || ref.divisor === 0 ? '1' : ref.divisor;
  const fromSpec = kind === 'limits' ? container.resources?.limits?.[name ?? ''] : kind === 'requests' ? container.resources?.requests?.[name ?? ''] : undefined;
  if (kind !== 'limits' && kind !== 'requests') throw new EnvResolutionError(`unsupported container resource : ${ref.resource}`);
  if (name === 'cpu') {
    const milli = fromSpec !== undefined ? milliValue(fromSpec) : kind === 'limits' ? ctx.nodeAllocatable.milliCpu : 0;
    return String(Math.ceil(milli / milliValue(divisor)));
  }
  if (name === 'memory' || name === 'ephemeral-storage') {
    const bytes = fromSpec !== undefined ? quantityValue(fromSpec) : kind === 'limits' && name === 'memory' ? ctx.nodeAllocatable.memoryBytes : 0;
    return String(Math.ceil(bytes / quantityValue(divisor)));
  }
  throw new EnvResolutionError(`unsupported container resource : ${ref.resource}`);
}

interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
  secretRef?: { name?: string; optional?: boolean };
}

/**
 * The container's environment, in declaration order (a repeated name keeps its first position and
 * its last value). A literal `value` is expanded against the variables declared before it;
 * `valueFrom.fieldRef` and `resourceFieldRef` are resolved here. ConfigMap and Secret references
 * (`configMapKeyRef`, `secretKeyRef`, `envFrom`) need the API server: an optional one is skipped, a
 * required one throws {@link EnvResolutionError} saying they are not available in standalone mode.
 *
 * Models kubelet.makeEnvironmentVariables (no service links: standalone mode has no services).
 */
export function makeEnvironmentVariables(pod: BoundPod, container: Container, ctx: EnvContext): EnvPair[] {
  const env = new Map<string, string>();
  const envFrom = (container as { envFrom?: EnvFromSource[] }).envFrom ?? [];
  for (const src of envFrom) {
    if (src.configMapRef !== undefined && src.configMapRef.optional !== true) {
      throw new EnvResolutionError(
        `envFrom configMapRef ${JSON.stringify(src.configMapRef.name ?? '')}: ConfigMap references are not available in standalone mode`,
      );
    }
    if (src.secretRef !== undefined && src.secretRef.optional !== true) {
      throw new EnvResolutionError(`envFrom secretRef ${JSON.stringify(src.secretRef.name ?? '')}: Secret references are not available in standalone mode`);
    }
  }
  const mapping = mappingFuncFor(env);
  for (const v of container.env ?? []) {
    const value = resolveEnvVar(v, pod, container, ctx, mapping);
    if (value !== undefined) env.set(v.name, value);
  }
  return [...env].map(([name, value]) => ({ name, value }));
}

function resolveEnvVar(v: EnvVar, pod: BoundPod, container: Container, ctx: EnvContext, mapping: Mapping): string | undefined {
  if (v.value !== undefined && v.value !== '') return expand(v.value, mapping);
  const from = v.valueFrom;
  if (from === undefined) return '';
  if (from.fieldRef !== undefined) return podFieldValue(from.fieldRef.fieldPath, pod, ctx);
  if (from.resourceFieldRef !== undefined) {
    const ref = from.resourceFieldRef as { resource: string; containerName?: string; divisor?: string | number };
    const target =
      ref.containerName !== undefined && ref.containerName !== ''
        ? [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) => c.name === ref.containerName) ?? container
        : container;
    return resourceFieldValue(ref, target, ctx);
  }
  if (from.configMapKeyRef !== undefined) {
    if (from.configMapKeyRef.optional === true) return undefined;
    throw new EnvResolutionError(
      `env var ${JSON.stringify(v.name)}: configMapKeyRef ${from.configMapKeyRef.name}/${from.configMapKeyRef.key}: ConfigMap references are not available in standalone mode`,
    );
  }
  if (from.secretKeyRef !== undefined) {
    if (from.secretKeyRef.optional === true) return undefined;
    throw new EnvResolutionError(
      `env var ${JSON.stringify(v.name)}: secretKeyRef ${from.secretKeyRef.name}/${from.secretKeyRef.key}: Secret references are not available in standalone mode`,
    );
  }
  return '';
}

/**
 * The container's command and args with `$(VAR)` references expanded against its environment.
 *
 * Models kubecontainer.ExpandContainerCommandAndArgs.
 */
export function expandCommandAndArgs(container: Container, env: readonly EnvPair[]): { command: string[]; args: string[] } {
  const mapping = mappingFuncFor(new Map(env.map((e) => [e.name, e.value])));
  return {
    command: (container.command ?? []).map((c) => expand(c, mapping)),
    args: (container.args ?? []).map((a) => expand(a, mapping)),
  };
}
