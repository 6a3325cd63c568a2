/**
 * Container environment variables and `$(VAR)` expansion, as the kubelet builds them.
 *
 * Models third_party/forked/golang/expansion/expand.go (Expand, MappingFuncFor),
 * pkg/kubelet/kubelet_pods.go (makeEnvironmentVariables, podFieldSelectorRuntimeValue,
 * containerResourceRuntimeValue) and pkg/kubelet/container/helpers.go (ExpandContainerCommandAndArgs).
 */
import type { BoundPod, Container, EnvVar } from '@splitlet/api';
import { isKubeError, podFieldValue, resourceFieldContainer, resourceFieldValue, type DownwardApiContext } from '@splitlet/kube';

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
export type EnvContext = DownwardApiContext;

/** A variable could not be resolved: the container cannot be configured (CreateContainerConfigError). */
export class EnvResolutionError extends Error {
  override readonly name = 'EnvResolutionError';
}

/** Runs a downward API lookup, turning its error into an {@link EnvResolutionError}. */
function downward(read: () => string): string {
  try {
    return read();
  } catch (e) {
    if (isKubeError(e, 'UnsupportedFieldPath')) throw new EnvResolutionError(e.message, { cause: e });
    throw e;
  }
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
  if (from.fieldRef !== undefined) {
    const fieldPath = from.fieldRef.fieldPath;
    return downward(() => podFieldValue(fieldPath, pod, ctx));
  }
  if (from.resourceFieldRef !== undefined) {
    const ref = from.resourceFieldRef as { resource: string; containerName?: string; divisor?: string | number };
    return downward(() => resourceFieldValue(ref, resourceFieldContainer(ref, pod, container), ctx));
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
