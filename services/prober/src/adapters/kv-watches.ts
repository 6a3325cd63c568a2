/**
 * Feeds the probe manager from the buckets it reads but does not own: `sl_desired` (sync-loop's
 * desired pods: AddPod / RemovePod) and `sl_runtime` (pleg's runtime cache: container ids, states,
 * start times, the pod IP, the current trace episode). Both are watched from their current values,
 * so a restarted prober rebuilds its workers from them.
 */
import { Buckets, DesiredPod, Keys, RelistMark, RuntimeCacheEntry } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { z } from 'zod';
import type { ProbeManager } from '../prober/probe-manager.js';

const RuntimeKvValue = z.union([RuntimeCacheEntry, RelistMark]);

/** The UID of a key `<node>.<uid>` or `<node>.<partition>.<uid>`. */
function uidOfKey(key: string): string {
  return key.slice(key.lastIndexOf('.') + 1);
}

/** Started watches: `ready` once both replayed their bucket; `done` once both stopped. */
export interface ProbeWatches {
  readonly ready: Promise<void>;
  readonly done: Promise<void>;
  /** Time of the last entry seen (progress for health). */
  lastActivity(): number;
}

export async function watchDesiredAndRuntime(bus: Pick<Bus, 'kv'>, node: string, manager: ProbeManager, signal: AbortSignal): Promise<ProbeWatches> {
  let last = Date.now();
  let runtimeCaught!: () => void;
  let desiredCaught!: () => void;
  const runtimeReady = new Promise<void>((r) => (runtimeCaught = r));
  const desiredReady = new Promise<void>((r) => (desiredCaught = r));
  // The runtime first, so workers of replayed pods see their containers on their first run.
  const runtime = await (
    await bus.kv(Buckets.runtime, RuntimeKvValue)
  ).watch(
    Keys.nodePrefix(node),
    signal,
    (e) => {
      last = Date.now();
      if (e.key === Keys.relistMark(node)) return;
      const v = e.value;
      manager.updateRuntime(uidOfKey(e.key), v !== null && v.type === 'kubelet.pleg.RuntimeCacheEntry.v1' ? v : undefined);
    },
    { onCaughtUp: () => runtimeCaught() },
  );
  await runtimeReady;
  const desired = await (
    await bus.kv(Buckets.desired, DesiredPod)
  ).watch(
    Keys.nodePrefix(node),
    signal,
    (e) => {
      last = Date.now();
      if (e.value === null) manager.removePod(uidOfKey(e.key));
      else manager.updatePod(e.value);
    },
    { onCaughtUp: () => desiredCaught() },
  );
  return {
    ready: Promise.all([runtimeReady, desiredReady]).then(() => undefined),
    done: Promise.all([runtime.done, desired.done]).then(() => undefined),
    lastActivity: () => last,
  };
}
