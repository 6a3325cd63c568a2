/**
 * Pod naming the way the kubelet keys and prints pods.
 *
 * Models pkg/kubelet/container/runtime.go (GetPodFullName, BuildPodFullName, ParsePodFullName) and
 * pkg/kubelet/util/format/pod.go (Pod, PodDesc).
 */

interface NamedPod {
  metadata: { name?: string | undefined; namespace?: string | undefined; uid?: string | undefined };
}

/**
 * `<name>_<namespace>`: the kubelet's key for a pod across UIDs (underscore never appears in a name).
 *
 * Models kubecontainer.GetPodFullName.
 */
export function podFullName(pod: NamedPod): string {
  return buildPodFullName(pod.metadata.name ?? '', pod.metadata.namespace ?? '');
}

/**
 * `<name>_<namespace>` from its parts.
 *
 * Models kubecontainer.BuildPodFullName.
 */
export function buildPodFullName(name: string, namespace: string): string {
  return `${name}_${namespace}`;
}

/**
 * Splits a pod full name; throws on a value without exactly one `_` or with an empty part, with the
 * kubelet's message "failed to parse the pod full name %q".
 *
 * Models kubecontainer.ParsePodFullName.
 */
export function parsePodFullName(fullName: string): { name: string; namespace: string } {
  const parts = fullName.split('_');
  const [name, namespace] = parts;
  if (parts.length !== 2 || name === undefined || namespace === undefined || name === '' || namespace === '') {
    throw new Error(`failed to parse the pod full name ${JSON.stringify(fullName)}`);
  }
  return { name, namespace };
}

/**
 * `<name>_<namespace>(<uid>)`: how the kubelet prints a pod in events and errors (e.g. the
 * FailedValidation event and "back-off 10s restarting failed container=x pod=…").
 *
 * Models format.Pod / format.PodDesc.
 */
export function formatPod(pod: NamedPod): string {
  return `${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? ''}(${pod.metadata.uid ?? ''})`;
}
