/**
 * The files of `configMap`, `secret` and `projected` volumes: the objects are read on the node from
 * the API server (through {@link ApiObjectReader}; never carried on the bus), then projected by key
 * into paths with modes, and written by the atomic writer.
 *
 * Models pkg/volume/configmap/configmap.go (SetUpAt, MakePayload), pkg/volume/secret/secret.go
 * (SetUpAt, MakePayload), pkg/volume/projected/projected.go (collectData) and the API defaulting of
 * `defaultMode` (0644 for all three).
 */
import type { BoundPod, Volume } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import type { DownwardApiContext } from '@splitlet/kube';
import { z } from 'zod';
import type { ApiObjectReader, ApiObjectRef } from '../ports.js';
import type { ProjectedFile } from './atomic-writer.js';
import { downwardApiPayload } from './downward-api-volume.js';

/** The default file mode of configMap, secret and projected volumes (API defaulting of `defaultMode`). */
export const API_VOLUME_DEFAULT_MODE = 0o644;

const mode = z.number().int().min(0).max(0o777);
const KeyToPath = z.looseObject({ key: z.string(), path: z.string(), mode: mode.optional() });
type KeyToPath = z.infer<typeof KeyToPath>;

/** `configMap` volume source. */
export const ConfigMapVolumeSource = z.looseObject({
  name: z.string().optional(),
  items: z.array(KeyToPath).optional(),
  defaultMode: mode.optional(),
  optional: z.boolean().optional(),
});
/** `secret` volume source. */
export const SecretVolumeSource = z.looseObject({
  secretName: z.string().optional(),
  items: z.array(KeyToPath).optional(),
  defaultMode: mode.optional(),
  optional: z.boolean().optional(),
});
const ProjectedRef = z.looseObject({ name: z.string().optional(), items: z.array(KeyToPath).optional(), optional: z.boolean().optional() });
/** `projected` volume source. */
export const ProjectedVolumeSource = z.looseObject({
  defaultMode: mode.optional(),
  sources: z
    .array(
      z.looseObject({
        configMap: ProjectedRef.optional(),
        secret: ProjectedRef.optional(),
        downwardAPI: z.looseObject({ items: z.array(z.unknown()).optional() }).optional(),
        serviceAccountToken: z.looseObject({}).optional(),
        clusterTrustBundle: z.looseObject({}).optional(),
      }),
    )
    .nullable()
    .optional(),
});

/** The error of a volume whose objects cannot be read because no API server is configured. */
export function standaloneError(kind: 'configMap' | 'secret', namespace: string, name: string): Error {
  return new Error(`couldn't get ${kind} ${namespace}/${name}, no kubeClient defined`);
}

function parse<T>(schema: z.ZodType<T>, what: string, source: unknown): T {
  const r = schema.safeParse(source);
  if (!r.success) throw new Error(`invalid ${what} volume source: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

/**
 * The payload of one object: every key at `defaultMode`, or — with `items` — each item's key at its
 * path and mode. A missing item key fails the volume (`configmap references non-existent config key:
 * k` / `secret references non-existent secret key: k`) unless the reference is optional.
 *
 * Models configmap.MakePayload and secret.MakePayload.
 */
export function makePayload(
  kind: 'configmap' | 'secret',
  items: readonly KeyToPath[] | undefined,
  values: ReadonlyMap<string, Buffer>,
  defaultMode: number,
  optional: boolean,
): Map<string, ProjectedFile> {
  const payload = new Map<string, ProjectedFile>();
  if (items === undefined || items.length === 0) {
    for (const [k, v] of values) payload.set(k, { data: v, mode: defaultMode });
    return payload;
  }
  for (const item of items) {
    const v = values.get(item.key);
    if (v === undefined) {
      if (optional) continue;
      throw new Error(kind === 'configmap' ? `configmap references non-existent config key: ${item.key}` : `secret references non-existent secret key: ${item.key}`);
    }
    payload.set(item.path, { data: v, mode: item.mode ?? defaultMode });
  }
  return payload;
}

/**
 * The values of an object, or an empty set when it is missing and the reference optional; rethrows
 * anything else (NotFound of a required reference: `configmap "x" not found`).
 */
async function readValues(objects: ApiObjectReader, ref: ApiObjectRef, optional: boolean): Promise<Map<string, Buffer>> {
  try {
    return await objects.read(ref);
  } catch (e) {
    if (optional && objects.isNotFound(e)) return new Map();
    throw e;
  }
}

/** The payload of a `configMap` volume. Models configMapVolumeMounter.SetUpAt up to the write. */
export async function configMapVolumePayload(pod: BoundPod, source: unknown, objects: ApiObjectReader | undefined): Promise<Map<string, ProjectedFile>> {
  const s = parse(ConfigMapVolumeSource, 'configMap', source);
  const name = s.name ?? '';
  if (objects === undefined) throw standaloneError('configMap', pod.metadata.namespace, name);
  const optional = s.optional === true;
  const values = await readValues(objects, { kind: 'configmap', namespace: pod.metadata.namespace, name }, optional);
  return makePayload('configmap', s.items, values, s.defaultMode ?? API_VOLUME_DEFAULT_MODE, optional);
}

/** The payload of a `secret` volume. Models secretVolumeMounter.SetUpAt up to the write. */
export async function secretVolumePayload(pod: BoundPod, source: unknown, objects: ApiObjectReader | undefined): Promise<Map<string, ProjectedFile>> {
  const s = parse(SecretVolumeSource, 'secret', source);
  const name = s.secretName ?? '';
  if (objects === undefined) throw standaloneError('secret', pod.metadata.namespace, name);
  const optional = s.optional === true;
  const values = await readValues(objects, { kind: 'secret', namespace: pod.metadata.namespace, name }, optional);
  return makePayload('secret', s.items, values, s.defaultMode ?? API_VOLUME_DEFAULT_MODE, optional);
}

/**
 * The payload of a `projected` volume: its sources merged in order (a later source's path wins).
 * Every source is tried; the errors are aggregated as the kubelet does (one: its message; more:
 * `[e1, e2]`). `serviceAccountToken` and `clusterTrustBundle` sources are not supported (an error
 * naming them).
 *
 * Models projectedVolumeMounter.collectData.
 */
export async function projectedVolumePayload(
  pod: BoundPod,
  volumeName: string,
  source: unknown,
  objects: ApiObjectReader | undefined,
  ctx: DownwardApiContext,
): Promise<Map<string, ProjectedFile>> {
  const s = parse(ProjectedVolumeSource, 'projected', source);
  if (objects === undefined) throw new Error(`cannot setup projected volume ${volumeName} because kube client is not configured`);
  const defaultMode = s.defaultMode ?? API_VOLUME_DEFAULT_MODE;
  const payload = new Map<string, ProjectedFile>();
  const errors: string[] = [];
  const merge = (p: ReadonlyMap<string, ProjectedFile>): void => {
    for (const [k, v] of p) payload.set(k, v);
  };
  for (const src of s.sources ?? []) {
    try {
      if (src.secret !== undefined) {
        const optional = src.secret.optional === true;
        const values = await readValues(objects, { kind: 'secret', namespace: pod.metadata.namespace, name: src.secret.name ?? '' }, optional);
        merge(makePayload('secret', src.secret.items, values, defaultMode, optional));
      } else if (src.configMap !== undefined) {
        const optional = src.configMap.optional === true;
        const values = await readValues(objects, { kind: 'configmap', namespace: pod.metadata.namespace, name: src.configMap.name ?? '' }, optional);
        merge(makePayload('configmap', src.configMap.items, values, defaultMode, optional));
      } else if (src.downwardAPI !== undefined) {
        merge(downwardApiPayload(pod, { ...src.downwardAPI, defaultMode }, ctx));
      } else if (src.serviceAccountToken !== undefined) {
        throw new Error('serviceAccountToken projections are not supported by this node');
      } else if (src.clusterTrustBundle !== undefined) {
        throw new Error('clusterTrustBundle projections are not supported by this node');
      }
    } catch (e) {
      errors.push(errorMessage(e));
    }
  }
  if (errors.length > 0) throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
  return payload;
}

/** The configMaps and secrets the pod's volumes read (to watch them while the pod is mounted). */
export function volumeObjectRefs(pod: BoundPod): ApiObjectRef[] {
  const namespace = pod.metadata.namespace;
  const refs = new Map<string, ApiObjectRef>();
  const add = (kind: ApiObjectRef['kind'], name: string | undefined): void => {
    if (name !== undefined && name !== '') refs.set(`${kind}/${name}`, { kind, namespace, name });
  };
  for (const v of pod.spec.volumes ?? []) {
    add('configmap', (v.configMap as { name?: string } | undefined)?.name);
    add('secret', (v.secret as { secretName?: string } | undefined)?.secretName);
    const projected = ProjectedVolumeSource.safeParse(v.projected ?? {});
    if (v.projected !== undefined && projected.success) {
      for (const s of projected.data.sources ?? []) {
        add('configmap', s.configMap?.name);
        add('secret', s.secret?.name);
      }
    }
  }
  return [...refs.values()];
}

/** True for the volume types whose content comes from API objects. */
export function isApiObjectVolume(v: Volume): boolean {
  return v.configMap != null || v.secret != null || v.projected != null;
}
