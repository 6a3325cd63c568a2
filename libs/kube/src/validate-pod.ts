/**
 * Validation of a pod manifest, for the checks a static pod can fail on this node.
 *
 * Models pkg/apis/core/validation/validation.go (ValidatePodCreate → ValidateObjectMeta,
 * ValidatePodSpec) and k8s.io/apimachinery/pkg/util/validation/field/errors.go (message format).
 */
import type { Container, Pod } from '@splitlet/api';

/**
 * The field.ErrorType values this validation produces.
 *
 * Models k8s.io/apimachinery/pkg/util/validation/field/errors.go (ErrorType).
 */
export type FieldErrorType = 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueDuplicate' | 'FieldValueNotFound' | 'FieldValueNotSupported';

/**
 * One validation failure: the field path (`spec.containers[0].name`), the bad value and the detail.
 *
 * Models k8s.io/apimachinery/pkg/util/validation/field/errors.go (Error).
 */
export interface FieldError {
  readonly type: FieldErrorType;
  readonly field: string;
  readonly badValue?: unknown;
  readonly detail: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueNotFound: 'Not found',
  FieldValueNotSupported: 'Unsupported value',
};

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/** The message for a pod without a name, checked before any defaulting. Models config/common.go. */
export const POD_NAME_REQUIRED_MESSAGE = 'invalid pod: name is needed for the pod';

/**
 * A field error as Go prints it: `spec.containers[0].name: Required value`,
 * `metadata.name: Invalid value: "Foo": a lowercase RFC 1123 subdomain …`,
 * `spec.restartPolicy: Unsupported value: "x": supported values: "Always", "OnFailure", "Never"`.
 *
 * Models field.Error.Error.
 */
export function formatFieldError(e: FieldError): string {
  let body = TYPE_TEXT[e.type];
  if (e.type !== 'FieldValueRequired') {
    const v = e.badValue;
    // Numbers and booleans bare, strings quoted, objects as JSON, nothing as null.
    body += `: ${typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' ? String(v) : (JSON.stringify(v) ?? 'null')}`;
  }
  if (e.detail !== '') body += `: ${e.detail}`;
  return `${e.field}: ${body}`;
}

/**
 * `invalid pod: [<error> <error> …]`: the kubelet's message for a manifest that failed validation
 * (Go prints the ErrorList with %v, so errors are separated by spaces).
 *
 * Models config/common.go tryDecodeSinglePod (`fmt.Errorf("invalid pod: %v", errs)`).
 */
export function formatInvalidPod(errors: readonly FieldError[]): string {
  return `invalid pod: [${errors.map(formatFieldError).join(' ')}]`;
}

/**
 * Validates a defaulted pod and returns every failure in the API server's order: metadata name and
 * namespace (DNS-1123 subdomain / label), volumes (names, uniqueness), containers then init containers
 * (required, names unique across both, image required, volume mounts naming a defined volume),
 * `restartPolicy`, `dnsPolicy`, `activeDeadlineSeconds`, `terminationGracePeriodSeconds` (≥ 0).
 * An empty array means valid. A missing name is reported by {@link POD_NAME_REQUIRED_MESSAGE} callers
 * before defaulting; here it is a `Required value` on `metadata.name`.
 *
 * Models validation.ValidatePodCreate (the subset above).
 */
export function validatePod(pod: Pod): FieldError[] {
  const errs: FieldError[] = [];
  const name = pod.metadata.name;
  if (name === undefined || name === '') errs.push(required('metadata.name'));
  else errs.push(...dnsSubdomain('metadata.name', name));
  const ns = pod.metadata.namespace;
  if (ns === undefined || ns === '') errs.push(required('metadata.namespace'));
  else errs.push(...dnsLabel('metadata.namespace', ns));

  const spec = pod.spec;
  const volumes = new Set<string>();
  (spec.volumes ?? []).forEach((v, i) => {
    const path = `spec.volumes[${i}].name`;
    if (v.name === '') errs.push(required(path));
    else if (volumes.has(v.name)) errs.push({ type: 'FieldValueDuplicate', field: path, badValue: v.name, detail: '' });
    else errs.push(...dnsLabel(path, v.name));
    volumes.add(v.name);
  });

  const names = new Set<string>();
  if (spec.containers.length === 0) errs.push(required('spec.containers'));
  spec.containers.forEach((c, i) => errs.push(...validateContainer(c, `spec.containers[${i}]`, names, volumes)));
  (spec.initContainers ?? []).forEach((c, i) => {
    errs.push(...validateContainer(c, `spec.initContainers[${i}]`, names, volumes));
    const crp = c.restartPolicy as string | undefined;
    if (crp !== undefined && crp !== 'Always') {
      errs.push(notSupported(`spec.initContainers[${i}].restartPolicy`, crp, ['Always']));
    }
  });

  const rp = spec.restartPolicy as string | undefined;
  if (rp === undefined || rp === '') errs.push(required('spec.restartPolicy'));
  else if (!['Always', 'OnFailure', 'Never'].includes(rp)) {
    errs.push(notSupported('spec.restartPolicy', rp, ['Always', 'OnFailure', 'Never']));
  }
  const dns = spec.dnsPolicy;
  if (dns !== undefined && dns !== '' && !['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'].includes(dns)) {
    errs.push(notSupported('spec.dnsPolicy', dns, ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None']));
  }
  const ads = spec.activeDeadlineSeconds;
  if (ads !== undefined && ads !== null && (ads < 1 || ads > 2147483647)) {
    errs.push({ type: 'FieldValueInvalid', field: 'spec.activeDeadlineSeconds', badValue: ads, detail: 'must be between 1 and 2147483647, inclusive' });
  }
  const tgps = spec.terminationGracePeriodSeconds;
  if (tgps !== undefined && tgps !== null && tgps < 0) {
    errs.push({ type: 'FieldValueInvalid', field: 'spec.terminationGracePeriodSeconds', badValue: tgps, detail: 'must be greater than or equal to 0' });
  }
  return errs;
}

function validateContainer(c: Container, path: string, names: Set<string>, volumes: Set<string>): FieldError[] {
  const errs: FieldError[] = [];
  if (c.name === '') errs.push(required(`${path}.name`));
  else if (names.has(c.name)) errs.push({ type: 'FieldValueDuplicate', field: `${path}.name`, badValue: c.name, detail: '' });
  else errs.push(...dnsLabel(`${path}.name`, c.name));
  names.add(c.name);
  if (c.image === undefined || c.image.trim() === '') errs.push(required(`${path}.image`));
  (c.volumeMounts ?? []).forEach((m, j) => {
    const mp = `${path}.volumeMounts[${j}]`;
    if (m.name === '') errs.push(required(`${mp}.name`));
    else if (!volumes.has(m.name)) errs.push({ type: 'FieldValueNotFound', field: `${mp}.name`, badValue: m.name, detail: '' });
    if (m.mountPath === '') errs.push(required(`${mp}.mountPath`));
  });
  return errs;
}

function required(field: string): FieldError {
  return { type: 'FieldValueRequired', field, detail: '' };
}

function notSupported(field: string, value: string, supported: string[]): FieldError {
  return {
    type: 'FieldValueNotSupported',
    field,
    badValue: value,
    detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  };
}

function dnsLabel(field: string, value: string): FieldError[] {
  const errs: FieldError[] = [];
  if (value.length > 63) errs.push({ type: 'FieldValueInvalid', field, badValue: value, detail: 'must be no more than 63 characters' });
  if (!DNS1123_LABEL.test(value)) errs.push({ type: 'FieldValueInvalid', field, badValue: value, detail: DNS1123_LABEL_MSG });
  return errs;
}

function dnsSubdomain(field: string, value: string): FieldError[] {
  const errs: FieldError[] = [];
  if (value.length > 253) errs.push({ type: 'FieldValueInvalid', field, badValue: value, detail: 'must be no more than 253 characters' });
  if (!DNS1123_SUBDOMAIN.test(value)) errs.push({ type: 'FieldValueInvalid', field, badValue: value, detail: DNS1123_SUBDOMAIN_MSG });
  return errs;
}
