/**
 * The `terminating` state of a pod's worker: SyncTerminatingPod in span `syncTerminatingPod`
 * (status, KillPod with the recorded grace period, final status with no running container), then
 * the worker record moves to `terminated` — or is requeued after the error backoff.
 *
 * Models pkg/kubelet/kubelet.go (Kubelet.SyncTerminatingPod) and pod_workers.go
 * (completeTerminating).
 */
import type { RuntimePodStatus, WorkerRecord } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { podIPsAfterTeardown } from '@splitlet/kube';
import { podSpanAttributes } from '@splitlet/telemetry';
import type { SyncReturn } from '../pod-workers/pod-workers.js';
import { isFatalToSync } from './sync-context.js';
import type { StateSyncOutcome, SyncCtx } from './sync-context.js';
import type { SyncEffects } from './sync-effects.js';
import { toTerminated } from './worker-decisions.js';
import { withoutRequeue } from './worker-requeue.js';

/** Runs SyncTerminatingPod for a worker in state `terminating` and records the outcome. */
export async function runSyncTerminatingPod(fx: SyncEffects, ctx: SyncCtx, record: WorkerRecord): Promise<SyncReturn> {
  const o = fx.o;
  const start = o.clock.now();
  const { outcome, spanCtx } = await fx.inSyncSpan('syncTerminatingPod', ctx, podSpanAttributes(ctx.pod.metadata), (span) => {
    span.setAttribute('k8s.pod.termination_grace_period_seconds', record.gracePeriod ?? 0);
    return syncTerminatingPod(fx, ctx, record);
  });
  o.metrics.observeWorkerDuration('kill', (o.clock.now() - start) / 1000);
  if (outcome.error !== undefined) {
    await fx.requeueAfterError(ctx, record, 'syncTerminatingPod', outcome.error, spanCtx);
    return {};
  }
  await fx.persist(ctx, withoutRequeue(toTerminated(record, o.clock.now())));
  fx.handOver(ctx, outcome.runtimeStatus, spanCtx);
  return { again: true };
}

async function syncTerminatingPod(fx: SyncEffects, ctx: SyncCtx, rec: WorkerRecord): Promise<StateSyncOutcome> {
  const { pod, guard } = ctx;
  const status = fx.generate(pod, ctx.runtimeStatus, rec, ctx.oldStatus, false, ctx.probes);
  await fx.sendStatus(ctx, status, true);
  let stopped: RuntimePodStatus;
  try {
    const killed = (await fx.killPod(ctx, rec.gracePeriod)).podStatus;
    // The torn-down sandbox reports no IPs; the completed pod keeps the ones it had (GenericPLEG.getPodIPs).
    stopped = { ...killed, ips: podIPsAfterTeardown(ctx.runtimeStatus, killed) };
  } catch (e) {
    if (isFatalToSync(e)) throw e;
    const msg = `error killing pod: ${errorMessage(e)}`;
    await fx.event(guard, pod, 'Warning', 'FailedKillPod', msg);
    return { terminal: false, error: msg };
  }
  const running = stopped.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => `${fx.o.runtimeName}://${c.id}`);
  if (running.length > 0) {
    return { terminal: false, error: `detected running containers after a successful KillPod, CRI violation: [${running.join(' ')}]` };
  }
  const final = fx.generate(pod, stopped, rec, status, true, ctx.probes);
  await fx.sendStatus(ctx, final, true);
  return { terminal: true, runtimeStatus: stopped };
}
