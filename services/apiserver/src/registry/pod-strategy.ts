/**
 * The pod strategy: API defaulting and initial status on create, what an update may change (the
 * spec is immutable but for images, activeDeadlineSeconds and added tolerations; `status` is written
 * only through the status subresource), and validation with field paths.
 *
 * Models pkg/registry/core/pod/strategy.go (podStrategy.PrepareForCreate, PrepareForUpdate,
 * podStatusStrategy.PrepareForUpdate) and pkg/apis/core/validation (ValidatePodCreate,
 * ValidatePodSpecificAnnotationUpdates, the "pod updates may not change fields" rule).
 */
import type { Pod } from '@splitlet/api';
import { applyPodApiDefaults, formatFieldError, getPodQos, jsonEqual, validatePod } from '@splitlet/kube';
import { ApiError, type StatusCause } from '../http/api-errors.js';
import type { KubeObject } from '../storage/object-store.js';

const FORBIDDEN_UPDATE =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

/** Defaults the pod as the API server does and gives it its initial status. */
export function preparePodForCreate(o: KubeObject): void {
  const defaulted = applyPodApiDefaults(o as unknown as Pod) as unknown as KubeObject;
  o['spec'] = defaulted['spec'];
  (o.metadata as Record<string, unknown>)['generation'] = 1;
  o['status'] = { phase: 'Pending', qosClass: getPodQos(o as unknown as Pod) };
}

/** Field errors of a pod, as `Status` causes. */
export function validatePodObject(o: KubeObject): StatusCause[] {
  return validatePod(o as unknown as Pod).map((e) => ({ reason: e.type, message: formatFieldError(e).slice(e.field.length + 2), field: e.field }));
}

/** The spec with what an update may change blanked out, to compare old and new. */
function mutableStripped(spec: Record<string, unknown>): Record<string, unknown> {
  const s = structuredClone(spec);
  for (const list of ['containers', 'initContainers'] as const) {
    for (const c of (s[list] as Record<string, unknown>[] | undefined) ?? []) delete c['image'];
  }
  delete s['activeDeadlineSeconds'];
  delete s['tolerations'];
  return s;
}

/**
 * The pod an update stores. Spec or metadata update: the status is kept from `old`, and a spec change
 * beyond the mutable fields is 422 Forbidden. Status update: only `status` is taken from `next`.
 */
export function preparePodForUpdate(next: KubeObject, old: KubeObject, subresource: string): KubeObject {
  if (subresource === 'status') {
    const out = structuredClone(old);
    out['status'] = next['status'];
    return out;
  }
  const out = structuredClone(next);
  out['status'] = old['status'];
  const oldSpec = (old['spec'] as Record<string, unknown> | undefined) ?? {};
  const newSpec = applyPodApiDefaults({ ...out, spec: out['spec'] } as unknown as Pod).spec as unknown as Record<string, unknown>;
  if (!jsonEqual(mutableStripped(oldSpec), mutableStripped(newSpec))) {
    const name = String(old.metadata?.['name'] ?? '');
    throw ApiError.invalid('Pod', name, [{ reason: 'FieldValueForbidden', field: 'spec', message: `Forbidden: ${FORBIDDEN_UPDATE}` }]);
  }
  out['spec'] = newSpec;
  const gen = Number(old.metadata?.['generation'] ?? 1);
  (out.metadata as Record<string, unknown>)['generation'] = jsonEqual(oldSpec, newSpec) ? gen : gen + 1;
  return out;
}

/** Pod field-selector values that need more than a path lookup. */
export function podFieldSet(o: KubeObject): Record<string, string | undefined> {
  const spec = (o['spec'] as Record<string, unknown> | undefined) ?? {};
  return { 'spec.nodeName': typeof spec['nodeName'] === 'string' ? spec['nodeName'] : '' };
}
