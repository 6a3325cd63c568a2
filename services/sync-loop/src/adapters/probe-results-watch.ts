/**
 * The kubelet's probe-result channels as sync-loop sees them: the prober writes `sl_probe` (one
 * record per pod, on a result change) and sync-loop, watching it, syncs the pod — readiness and
 * startup changes update the container's `ready`/`started` and the pod's conditions, a liveness or
 * startup Failure lets computePodActions kill and restart the container. The poke continues the
 * trace of the probe span that changed the result (the record's `trace`).
 *
 * Models syncLoopIteration's livenessManager/readinessManager/startupManager.Updates cases
 * (handleProbeSync → HandlePodSyncs).
 */
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { Buckets, Keys, PodProbeResults } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { extractContext, unsampledContext } from '@splitlet/telemetry';
import type { Logger } from '@splitlet/telemetry';
import type { WorkPoker } from '../ports.js';

/** What the watch needs of the loop: whether a pod is desired (and admitted). */
export interface ProbeSyncTarget {
  desiredPod(uid: string): { rejected?: unknown } | undefined;
}

/** Watches `sl_probe` updates (not the replay: a new leader's pods are synced anyway) until `signal` aborts. */
export async function watchProbeResults(
  bus: Pick<Bus, 'kv'>,
  node: string,
  target: ProbeSyncTarget,
  work: WorkPoker,
  logger: Logger,
  signal: AbortSignal,
): Promise<{ done: Promise<void> }> {
  const kv = await bus.kv(Buckets.probe, PodProbeResults);
  return kv.watch(
    Keys.nodePrefix(node),
    signal,
    async (e) => {
      const r = e.value;
      if (r === null) return;
      const desired = target.desiredPod(r.uid);
      if (desired === undefined || desired.rejected !== undefined) return;
      const ctx = r.trace === undefined ? unsampledContext(ROOT_CONTEXT) : extractContext(r.trace, ROOT_CONTEXT);
      try {
        await work.poke(r.uid, 'sync', ctx);
      } catch (err) {
        logger.warn('could not poke a pod after a probe result change', { podUID: r.uid, err: err instanceof Error ? err.message : String(err) });
      }
    },
    { updatesOnly: true },
  );
}
