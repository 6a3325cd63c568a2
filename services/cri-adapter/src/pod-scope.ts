/**
 * The pod whose operation (SyncPod, KillPod, its part of a GC) runs in the current async context,
 * so the relist pokes sent for its CRI calls name it and pleg relists that pod only.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { PlegRelistPoke } from '@splitlet/api';

const scope = new AsyncLocalStorage<string>();

/** Runs `fn` as an operation of pod `uid`, and the poke bodies built inside it name the pod. */
export const podScope = {
  run<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    return scope.run(uid, fn);
  },
  /** The poke body for the current context: `{ uid }` inside a pod's operation, `{}` outside (a full relist). */
  poke(): PlegRelistPoke {
    const uid = scope.getStore();
    return uid === undefined ? {} : { uid };
  },
};
