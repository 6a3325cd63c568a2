/**
 * The pod strategy: API defaulting and initial status on create, what an update may change (the
 * spec is immutable but for images, activeDeadlineSeconds and added tolerations; `status` is written
 * only through the status subresource), and validation with field paths.
 *
 * Models pkg/registry/core/pod/strategy.go (podStrategy.PrepareForCreate, PrepareForUpdate,
 * podStatusStrategy.PrepareForUpdate) and pkg/apis/core/validation (ValidatePodCreate,
 * ValidatePodSpecificAnnotationUpdates, the "pod updates may not change fields" rule).
 */
import { isIP } from 'node:net';
import type { Pod } from '@splitlet/api';
import { applyPodApiDefaults, formatFieldError, getPodQos, jsonEqual, validatePod } from '@splitlet/kube';
import { ApiError, type StatusCause } from '../http/api-errors.js';
import { metaText, type KubeObject } from '../storage/object-store.js';

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
  if (subresource === 'status') return preparePodStatusForUpdate(next, old);
  const out = structuredClone(next);
  out['status'] = old['status'];
  const oldSpec = (old['spec'] as Record<string, unknown> | undefined) ?? {};
  const newSpec = applyPodApiDefaults({ ...out, spec: out['spec'] } as unknown as Pod).spec as unknown as Record<string, unknown>;
  if (!jsonEqual(mutableStripped(oldSpec), mutableStripped(newSpec))) {
    const name = metaText(old, 'name');
    throw ApiError.invalid('Pod', name, [{ reason: 'FieldValueForbidden', field: 'spec', message: `Forbidden: ${FORBIDDEN_UPDATE}` }]);
  }
  out['spec'] = newSpec;
  const gen = Number(old.metadata?.['generation'] ?? 1);
  (out.metadata as Record<string, unknown>)['generation'] = jsonEqual(oldSpec, newSpec) ? gen : gen + 1;
  return out;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);
const IP_INVALID = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

interface ContainerStatusLike {
  readonly name?: unknown;
  readonly state?: { terminated?: { exitCode?: unknown } | null } | null;
}

/**
 * A status written over a terminal container state as if the container ran again: forbidden
 * unless the restart policy restarts it (Always; OnFailure after a non-zero exit).
 */
function containerStateTransitions(next: unknown, old: unknown, field: string, restartPolicy: string): StatusCause[] {
  if (restartPolicy === 'Always' || !Array.isArray(old) || !Array.isArray(next)) return [];
  const out: StatusCause[] = [];
  (old as ContainerStatusLike[]).forEach((o, i) => {
    const term = o?.state?.terminated;
    if (term === undefined || term === null) return;
    if (Number(term.exitCode ?? 0) !== 0 && restartPolicy === 'OnFailure') return;
    for (const n of next as ContainerStatusLike[]) {
      if (n?.name === o.name && (n.state?.terminated === undefined || n.state.terminated === null)) {
        out.push({ reason: 'FieldValueForbidden', field: `${field}[${i}].state`, message: 'Forbidden: may not be transitioned to non-terminated state' });
      }
    }
  });
  return out;
}

/** A field value as text for validation: strings as they are, absent as '', anything else as its JSON (a number 5 is '5'). */
function valueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v) ?? '';
}

/** `status.podIPs`/`status.hostIPs`: valid addresses, at most one per family, no duplicates. */
function ipList(list: unknown, field: string): StatusCause[] {
  if (!Array.isArray(list)) return [];
  const out: StatusCause[] = [];
  const ips = list.map((x) => valueText((x as { ip?: unknown } | null)?.ip));
  ips.forEach((ip, i) => {
    if (isIP(ip) === 0) out.push({ reason: 'FieldValueInvalid', field: `${field}[${i}].ip`, message: `Invalid value: ${JSON.stringify(ip)}: ${IP_INVALID}` });
  });
  if (ips.length > 1 && out.length === 0) {
    const families = new Set(ips.map((ip) => isIP(ip)));
    if (families.size !== ips.length || ips.length > 2) {
      out.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(list)}: may specify no more than one IP for each IP family` });
    }
  }
  return out;
}

/**
 * Validation of a `pods/status` write (ValidatePodStatusUpdate plus the terminal-phase rule): a
 * pod that reached Succeeded or Failed stays there (`status.phase`), a terminated container of a
 * pod that does not restart it stays terminated, `podIP`/`podIPs`/`hostIP`/`hostIPs` are
 * addresses (at most one per family), condition types are set.
 */
export function validatePodStatusUpdate(next: KubeObject, old: KubeObject): StatusCause[] {
  const ns = (next['status'] as Record<string, unknown> | undefined) ?? {};
  const os = (old['status'] as Record<string, unknown> | undefined) ?? {};
  const restartPolicy = String((old['spec'] as { restartPolicy?: string } | undefined)?.restartPolicy ?? 'Always');
  const out: StatusCause[] = [];
  const oldPhase = typeof os['phase'] === 'string' ? os['phase'] : '';
  const newPhase = typeof ns['phase'] === 'string' ? ns['phase'] : '';
  if (TERMINAL.has(oldPhase) && newPhase !== oldPhase) {
    out.push({
      reason: 'FieldValueForbidden',
      field: 'status.phase',
      message: `Forbidden: may not be changed from terminal phase ${JSON.stringify(oldPhase)} to ${JSON.stringify(newPhase)}`,
    });
  }
  // Condition types other than the system ones are qualified names; the system ones are never empty.
  const conditions = Array.isArray(ns['conditions']) ? (ns['conditions'] as { type?: unknown }[]) : [];
  conditions.forEach((c, i) => {
    if (typeof c?.type !== 'string' || c.type === '')
      out.push({ reason: 'FieldValueInvalid', field: `status.conditions[${i}].Type`, message: 'Invalid value: "": name part must be non-empty' });
  });
  out.push(...containerStateTransitions(ns['containerStatuses'], os['containerStatuses'], 'status.containerStatuses', restartPolicy));
  out.push(
    ...containerStateTransitions(
      ns['initContainerStatuses'],
      os['initContainerStatuses'],
      'status.initContainerStatuses',
      restartPolicy === 'Always' ? 'OnFailure' : restartPolicy,
    ),
  );
  out.push(...containerStateTransitions(ns['ephemeralContainerStatuses'], os['ephemeralContainerStatuses'], 'status.ephemeralContainerStatuses', 'Never'));
  for (const f of ['podIP', 'hostIP'] as const) {
    const v = ns[f];
    if (v !== undefined && v !== null && v !== '' && isIP(valueText(v)) === 0)
      out.push({ reason: 'FieldValueInvalid', field: `status.${f}`, message: `Invalid value: ${JSON.stringify(v)}: ${IP_INVALID}` });
  }
  out.push(...ipList(ns['podIPs'], 'status.podIPs'), ...ipList(ns['hostIPs'], 'status.hostIPs'));
  return out;
}

/**
 * The pod a `pods/status` write stores: the old pod with the new status (spec, metadata and owner
 * references are not the status writer's); a status without `qosClass` keeps the one the API
 * server computed at create, as podStatusStrategy.PrepareForUpdate backfills it.
 */
export function preparePodStatusForUpdate(next: KubeObject, old: KubeObject): KubeObject {
  // A new top level and metadata; spec and the rest shared with `old`, which no write changes (stored objects are not mutated).
  const out: KubeObject = { ...old, metadata: { ...(old.metadata ?? {}) } };
  const status = (next['status'] as Record<string, unknown> | undefined) ?? {};
  const oldQos = (old['status'] as { qosClass?: unknown } | undefined)?.qosClass;
  out['status'] = status['qosClass'] === undefined && oldQos !== undefined ? { ...status, qosClass: oldQos } : status;
  return out;
}

/** Pod field-selector values that need more than a path lookup. */
export function podFieldSet(o: KubeObject): Record<string, string | undefined> {
  const spec = (o['spec'] as Record<string, unknown> | undefined) ?? {};
  return { 'spec.nodeName': typeof spec['nodeName'] === 'string' ? spec['nodeName'] : '' };
}
