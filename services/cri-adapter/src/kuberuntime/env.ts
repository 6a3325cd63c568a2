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

/**
 * A configMap or secret an environment variable reads, as fetched for one container start: its
 * values (configMap `data`; secret `data`, decoded to text), or why it could not be had.
 */
export type EnvObject = { readonly ok: true; readonly data: ReadonlyMap<string, string> } | { readonly ok: false; readonly error: Error; readonly notFound: boolean };

/** The configMaps and secrets a container's environment references, by name in the pod's namespace. */
export interface EnvObjects {
  readonly configMaps: ReadonlyMap<string, EnvObject>;
  readonly secrets: ReadonlyMap<string, EnvObject>;
}

/** What the environment may read besides the pod itself. */
export interface EnvContext extends DownwardApiContext {
  /**
   * The referenced configMaps and secrets, fetched before the config is made ({@link fetchEnvObjects}).
   * Absent: standalone mode (no API server), where any reference fails as the kubelet's does without a client.
   */
  readonly objects?: EnvObjects;
  /** Records a pod Warning event (InvalidEnvironmentVariableNames). */
  readonly warn?: (reason: string, message: string) => void;
}

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

function envFromSources(container: Container): EnvFromSource[] {
  return (container as { envFrom?: EnvFromSource[] }).envFrom ?? [];
}

/** Where {@link fetchEnvObjects} reads configMaps and secrets (the node's API object caches). */
export interface EnvObjectSource {
  /** A configMap's `data`. */
  configMap(namespace: string, name: string): Promise<ReadonlyMap<string, string>>;
  /** A secret's `data`, decoded. */
  secret(namespace: string, name: string): Promise<ReadonlyMap<string, string>>;
  /** True for the NotFound rejection of either. */
  isNotFound(e: unknown): boolean;
}

/**
 * Fetches every configMap and secret the container's `env` and `envFrom` name (each once). Never
 * rejects: a failure is kept as the object's error, thrown later only if the kubelet would reach it.
 */
export async function fetchEnvObjects(pod: BoundPod, container: Container, source: EnvObjectSource): Promise<EnvObjects> {
  const cmNames = new Set<string>();
  const secretNames = new Set<string>();
  for (const f of envFromSources(container)) {
    if (f.configMapRef !== undefined) cmNames.add(f.configMapRef.name ?? '');
    else if (f.secretRef !== undefined) secretNames.add(f.secretRef.name ?? '');
  }
  for (const v of container.env ?? []) {
    if (v.valueFrom?.configMapKeyRef !== undefined) cmNames.add(v.valueFrom.configMapKeyRef.name);
    if (v.valueFrom?.secretKeyRef !== undefined) secretNames.add(v.valueFrom.secretKeyRef.name);
  }
  const ns = pod.metadata.namespace;
  const fetch = async (names: Set<string>, get: (name: string) => Promise<ReadonlyMap<string, string>>): Promise<Map<string, EnvObject>> => {
    const out = new Map<string, EnvObject>();
    await Promise.all(
      [...names].map(async (name) => {
        try {
          out.set(name, { ok: true, data: await get(name) });
        } catch (e) {
          out.set(name, { ok: false, error: e instanceof Error ? e : new Error(String(e)), notFound: source.isNotFound(e) });
        }
      }),
    );
    return out;
  };
  const [configMaps, secrets] = await Promise.all([fetch(cmNames, (n) => source.configMap(ns, n)), fetch(secretNames, (n) => source.secret(ns, n))]);
  return { configMaps, secrets };
}

/** A valid environment variable name (validation.IsEnvVarName): `[-._a-zA-Z][-._a-zA-Z0-9]*`. */
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

type Kind = 'configMap' | 'secret';

/**
 * The object `name` for a reference; undefined when it is missing and the reference optional.
 * Throws the kubelet's errors: without a client `couldn't get configMap ns/x, no kubeClient defined`,
 * else the fetch's error (`configmap "x" not found`).
 */
function lookup(kind: Kind, name: string, optional: boolean, pod: BoundPod, ctx: EnvContext): ReadonlyMap<string, string> | undefined {
  if (ctx.objects === undefined) throw new EnvResolutionError(`couldn't get ${kind} ${pod.metadata.namespace}/${name}, no kubeClient defined`);
  const o = (kind === 'configMap' ? ctx.objects.configMaps : ctx.objects.secrets).get(name);
  if (o === undefined) throw new EnvResolutionError(`couldn't get ${kind} ${pod.metadata.namespace}/${name}: it was not fetched`);
  if (o.ok) return o.data;
  if (o.notFound && optional) return undefined;
  throw new EnvResolutionError(o.error.message, { cause: o.error });
}

/**
 * The container's environment, in declaration order (a repeated name keeps its first position and
 * its last value). `envFrom` sources come first (keys with the prefix; keys that are not valid
 * variable names are skipped with an `InvalidEnvironmentVariableNames` event), then `env`, which
 * overrides them: a literal `value` is expanded against the variables so far; `valueFrom` reads
 * `fieldRef`, `resourceFieldRef`, `configMapKeyRef` and `secretKeyRef`. A missing object or key
 * throws {@link EnvResolutionError} with the kubelet's text, unless the reference is optional.
 *
 * Models kubelet.makeEnvironmentVariables (no service links).
 */
export function makeEnvironmentVariables(pod: BoundPod, container: Container, ctx: EnvContext): EnvPair[] {
  const env = new Map<string, string>();
  for (const src of envFromSources(container)) {
    const ref = src.configMapRef ?? src.secretRef;
    if (ref === undefined) continue;
    const kind: Kind = src.configMapRef !== undefined ? 'configMap' : 'secret';
    const name = ref.name ?? '';
    const data = lookup(kind, name, ref.optional === true, pod, ctx);
    if (data === undefined) continue;
    const invalid: string[] = [];
    for (const [key, value] of [...data].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const k = (src.prefix ?? '') + key;
      if (!ENV_VAR_NAME.test(k)) {
        invalid.push(k);
        continue;
      }
      env.set(k, value);
    }
    if (invalid.length > 0) {
      ctx.warn?.(
        'InvalidEnvironmentVariableNames',
        `Keys [${invalid.sort().join(', ')}] from the EnvFrom ${kind} ${pod.metadata.namespace}/${name} were skipped since they are considered invalid environment variable names.`,
      );
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
  const keyRef = from.configMapKeyRef ?? from.secretKeyRef;
  if (keyRef !== undefined) {
    const kind: Kind = from.configMapKeyRef !== undefined ? 'configMap' : 'secret';
    const optional = keyRef.optional === true;
    const data = lookup(kind, keyRef.name, optional, pod, ctx);
    if (data === undefined) return undefined;
    const value = data.get(keyRef.key);
    if (value === undefined) {
      if (optional) return undefined;
      throw new EnvResolutionError(`couldn't find key ${keyRef.key} in ${kind === 'configMap' ? 'ConfigMap' : 'Secret'} ${pod.metadata.namespace}/${keyRef.name}`);
    }
    return value;
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
