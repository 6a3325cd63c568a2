/**
 * The files of a `downwardAPI` volume, read from the pod object itself: no API server is needed.
 *
 * Models pkg/volume/downwardapi/downwardapi.go (CollectData) and the API defaulting of
 * `defaultMode` (0644).
 */
import type { BoundPod } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { podFieldValue, resourceFieldContainer, resourceFieldValue, type DownwardApiContext } from '@splitlet/kube';
import { z } from 'zod';
import type { ProjectedFile } from './atomic-writer.js';

/** The downwardAPI volume source, as the API defines it. */
export const DownwardApiVolumeSource = z.looseObject({
  defaultMode: z.number().int().min(0).max(0o777).optional(),
  items: z
    .array(
      z.looseObject({
        path: z.string(),
        fieldRef: z.looseObject({ fieldPath: z.string(), apiVersion: z.string().optional() }).optional(),
        resourceFieldRef: z.looseObject({ containerName: z.string().optional(), resource: z.string(), divisor: z.union([z.string(), z.number()]).optional() }).optional(),
        mode: z.number().int().min(0).max(0o777).optional(),
      }),
    )
    .optional(),
});
export type DownwardApiVolumeSource = z.infer<typeof DownwardApiVolumeSource>;

/** The default file mode of a downwardAPI volume (API defaulting of `defaultMode`). */
export const DOWNWARD_API_DEFAULT_MODE = 0o644;

/** The fieldRefs a volume may project (the API validation's list; status.* is for env only). */
const VOLUME_FIELD_PATHS = /^metadata\.(name|namespace|uid|labels|annotations)$|^metadata\.(labels|annotations)\['.*'\]$/;

/**
 * The payload of a downwardAPI volume: path → content and mode. Every item is tried; the errors are
 * joined as the kubelet aggregates them, and any error fails the whole volume.
 */
export function downwardApiPayload(pod: BoundPod, source: unknown, ctx: DownwardApiContext): Map<string, ProjectedFile> {
  const parsed = DownwardApiVolumeSource.safeParse(source);
  if (!parsed.success) throw new Error(`invalid downwardAPI volume source: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const defaultMode = parsed.data.defaultMode ?? DOWNWARD_API_DEFAULT_MODE;
  const payload = new Map<string, ProjectedFile>();
  const errors: string[] = [];
  for (const item of parsed.data.items ?? []) {
    const mode = item.mode ?? defaultMode;
    try {
      if (item.fieldRef !== undefined) {
        const fieldPath = item.fieldRef.fieldPath;
        if (!VOLUME_FIELD_PATHS.test(fieldPath)) throw new Error(`unsupported fieldPath: ${fieldPath}`);
        payload.set(item.path, { data: podFieldValue(fieldPath, pod, ctx), mode });
      } else if (item.resourceFieldRef !== undefined) {
        const ref = item.resourceFieldRef;
        payload.set(item.path, { data: resourceFieldValue(ref, resourceFieldContainer(ref, pod), ctx), mode });
      } else {
        throw new Error(`item ${JSON.stringify(item.path)} has neither fieldRef nor resourceFieldRef`);
      }
    } catch (e) {
      errors.push(`Unable to extract field ${JSON.stringify(item.path)}: ${errorMessage(e)}`);
    }
  }
  if (errors.length > 0) throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
  return payload;
}

/**
 * What a downwardAPI volume's content depends on besides the spec: a change of it means the volume
 * must be projected again (labels and annotations can change on a running pod).
 */
export function downwardApiInputs(pod: BoundPod): string {
  return JSON.stringify([pod.metadata.labels ?? {}, pod.metadata.annotations ?? {}]);
}
