/**
 * The pod whose operation (SyncPod, KillPod, its part of a GC) runs in the current async context,
 * so the relist pokes sent for its CRI calls name it and pleg relists that pod only, and the
 * operation knows whether it changed the runtime (its own calls only, not those of operations on
 * other pods running meanwhile).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { PlegRelistPoke, RuntimePodStatus } from '@splitlet/api';

/** One pod's operation in progress. */
export interface PodOperation {
  readonly uid: string;
  /** CRI calls it made so far (reads and changes). */
  calls: number;
  /** Mutating CRI calls it made so far. */
  mutations: number;
  /** What it read after its changes, for pleg (a SyncPod or KillPod that changed something). */
  observed?: { readonly status: RuntimePodStatus; readonly readAt: number; readonly timestamp: number };
  /** The node's time once its runtime changes were made, when it made any (what its reply says). */
  changedAt?: number;
}

const scope = new AsyncLocalStorage<PodOperation>();

/** Runs `fn` as an operation of pod `uid`, and the poke bodies built inside it name the pod. */
export const podScope = {
  run<T>(uid: string, fn: (op: PodOperation) => Promise<T>): Promise<T> {
    const op: PodOperation = { uid, calls: 0, mutations: 0 };
    return scope.run(op, () => fn(op));
  },
  /** The poke body for the current context: `{ uid }` inside a pod's operation, `{}` outside (a full relist). */
  poke(): PlegRelistPoke {
    const op = scope.getStore();
    return op === undefined ? {} : { uid: op.uid };
  },
  /** Whether the current context is a pod's operation. */
  inOperation(): boolean {
    return scope.getStore() !== undefined;
  },
  /** Counts a CRI call of the current pod operation (none outside one); `mutating` ones separately. */
  noteCall(mutating: boolean): void {
    const op = scope.getStore();
    if (op === undefined) return;
    op.calls++;
    if (mutating) op.mutations++;
  },
};
