/**
 * The pod manager: the desired pods of this node, in memory, mirrored in `sl_desired`.
 *
 * Models pkg/kubelet/pod/pod_manager.go (basicManager: AddPod/UpdatePod/RemovePod, GetPodByUID,
 * GetPodByFullName). Mirror pods are not stored (standalone mode has none).
 */
import type { DesiredPod } from '@splitlet/api';
import { isStaticPod } from '@splitlet/kube';

/** The desired pods by UID. Single-threaded use (the sync loop). */
export class PodManager {
  readonly #pods = new Map<string, DesiredPod>();

  get(uid: string): DesiredPod | undefined {
    return this.#pods.get(uid);
  }

  has(uid: string): boolean {
    return this.#pods.has(uid);
  }

  /** AddPod / UpdatePod. */
  set(desired: DesiredPod): void {
    this.#pods.set(desired.pod.metadata.uid, desired);
  }

  /** RemovePod. */
  delete(uid: string): void {
    this.#pods.delete(uid);
  }

  /** Replaces everything (rebuild from `sl_desired`). */
  reset(pods: Iterable<DesiredPod>): void {
    this.#pods.clear();
    for (const d of pods) this.set(d);
  }

  values(): IterableIterator<DesiredPod> {
    return this.#pods.values();
  }

  get size(): number {
    return this.#pods.size;
  }

  /** The static pod with this name and namespace (the pod a mirror pod stands for). */
  staticPodByFullName(name: string, namespace: string): DesiredPod | undefined {
    for (const d of this.#pods.values()) {
      if (d.pod.metadata.name === name && d.pod.metadata.namespace === namespace && isStaticPod(d.pod)) return d;
    }
    return undefined;
  }
}
