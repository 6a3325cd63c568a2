/**
 * The revision of each pod's kill request (`sl_kill`) as sync-loop last wrote or saw it, for its
 * pokes to name (`WorkPoke.killRevision`, see the pod-worker's record-memory.ts): its own creates
 * and updates, and the `sl_kill` watch (where a pod worker's delete of a request it carried out
 * shows). 0: it knows of none. Undefined (the poke names none, and the pod worker reads KV): one of
 * its own writes is in flight, or one failed in a way that may have written anyway, until the
 * watch shows a newer revision.
 */
export class KillRevisions {
  readonly #known = new Map<string, number>();
  readonly #writing = new Map<string, object>();
  /** uid → the revision the watch must pass before the pod's revision is known again. */
  readonly #unsure = new Map<string, number>();

  /** The revision to name in a poke for the pod. */
  revision(uid: string): number | undefined {
    if (this.#writing.has(uid) || this.#unsure.has(uid)) return undefined;
    return this.#known.get(uid) ?? 0;
  }

  /** A write for the pod starts; pass the token to {@link wrote} or {@link failed}. */
  writing(uid: string): object {
    const token = {};
    this.#writing.set(uid, token);
    return token;
  }

  /** The write `token` ended: at `revision`, or with nothing written (undefined: a compare-and-swap or create that lost). */
  wrote(uid: string, token: object, revision: number | undefined): void {
    if (this.#writing.get(uid) === token) this.#writing.delete(uid);
    if (revision !== undefined) this.#raise(uid, revision);
  }

  /** The write `token` failed in a way that may have written (a timeout, a lost connection). */
  failed(uid: string, token: object): void {
    if (this.#writing.get(uid) === token) this.#writing.delete(uid);
    this.#unsure.set(uid, this.#known.get(uid) ?? 0);
  }

  /** The watch saw the pod's request written at `revision`, or deleted (a delete marker at `revision`). */
  watched(uid: string, revision: number, deleted: boolean): void {
    const unsure = this.#unsure.get(uid);
    if (unsure !== undefined && revision > unsure) this.#unsure.delete(uid);
    if (!deleted) this.#raise(uid, revision);
    else if ((this.#known.get(uid) ?? 0) < revision) this.#known.delete(uid);
  }

  #raise(uid: string, revision: number): void {
    if (revision > (this.#known.get(uid) ?? 0)) this.#known.set(uid, revision);
  }
}
