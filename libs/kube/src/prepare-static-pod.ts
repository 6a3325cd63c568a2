/**
 * Turning a decoded static pod manifest into a bound pod, or into the kubelet's error message.
 *
 * Models pkg/kubelet/config/common.go (tryDecodeSinglePod / tryDecodePodList after the decode step).
 */
import type { BoundPod, Pod } from '@splitlet/api';
import { applyPodApiDefaults } from './api-defaults.js';
import { applyStaticPodDefaults, type StaticPodOrigin } from './static-pod-defaults.js';
import { formatInvalidPod, POD_NAME_REQUIRED_MESSAGE, validatePod, type FieldError } from './validate-pod.js';

/**
 * The outcome of {@link prepareStaticPod}.
 *
 * Models pkg/kubelet/config/common.go (tryDecodeSinglePod results).
 */
export type PreparedStaticPod = { readonly ok: true; readonly pod: BoundPod } | { readonly ok: false; readonly message: string; readonly errors: readonly FieldError[] };

/**
 * Runs, in the kubelet's order: the missing-name check ("invalid pod: name is needed for the pod"),
 * API defaulting, static pod defaulting, then validation ("invalid pod: [...]").
 *
 * Models tryDecodeSinglePod.
 */
export function prepareStaticPod(manifest: Pod, nodeName: string, origin: StaticPodOrigin): PreparedStaticPod {
  if (manifest.metadata.name === undefined || manifest.metadata.name === '') {
    return { ok: false, message: POD_NAME_REQUIRED_MESSAGE, errors: [{ type: 'FieldValueRequired', field: 'metadata.name', detail: '' }] };
  }
  const pod = applyStaticPodDefaults(applyPodApiDefaults(manifest), nodeName, origin);
  const errors = validatePod(pod);
  if (errors.length > 0) return { ok: false, message: formatInvalidPod(errors), errors };
  return { ok: true, pod };
}
