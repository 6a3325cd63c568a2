/**
 * The container hash the kubelet stores in a container's runtime annotations to notice a changed
 * definition.
 *
 * Models pkg/kubelet/container/helpers.go (HashContainer) and kuberuntime/labels.go
 * (`io.kubernetes.container.hash`, written with strconv.FormatUint(hash, 16)).
 */
import type { Container } from '@splitlet/api';
import { canonicalJson } from './canonical-json.js';
import { fnv1a32 } from './fnv.js';

/**
 * FNV-1a 32 of the container spec serialised with sorted keys (undefined members dropped), as lower-case
 * hex without padding. Deterministic across processes and key orders.
 *
 * Differs from the modern kubelet on purpose: it hashes only `name` and `image` (pickFieldsToHash),
 * because the API makes every other container field immutable. Static pods are the exception
 * (editing a manifest changes the UID, so a new pod), and hashing the whole spec also catches edits
 * that reach a running pod through any other path.
 *
 * Models kubecontainer.HashContainer.
 */
export function hashContainer(container: Container): string {
  return fnv1a32(canonicalJson(container)).toString(16);
}
