/**
 * The ids of a runtime's sandboxes or containers by their `io.kubernetes.pod.uid` label, so a List
 * call filtered by that label (the kubelet's GetPodStatus, pleg's targeted relist) reads the pod's
 * own records instead of scanning every record on the node.
 */

/** The label the kubelet puts on every sandbox and container of a pod. */
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';

/** Pod UID → ids, each set in insertion order (the order of the runtime's own table). */
export class PodUidIndex {
  readonly #ids = new Map<string, Set<string>>();

  /** Indexes `id` under the pod UID its labels carry (records without one are not indexed). */
  add(id: string, labels: Readonly<Record<string, string>>): void {
    const uid = labels[POD_UID_LABEL];
    if (uid === undefined) return;
    let ids = this.#ids.get(uid);
    if (ids === undefined) this.#ids.set(uid, (ids = new Set()));
    ids.add(id);
  }

  /** Drops `id` (a removed record). */
  delete(id: string, labels: Readonly<Record<string, string>>): void {
    const uid = labels[POD_UID_LABEL];
    if (uid === undefined) return;
    const ids = this.#ids.get(uid);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) this.#ids.delete(uid);
  }

  /** The ids labelled with pod `uid`, oldest first. */
  get(uid: string): ReadonlySet<string> {
    return this.#ids.get(uid) ?? EMPTY;
  }
}

const EMPTY: ReadonlySet<string> = new Set();
