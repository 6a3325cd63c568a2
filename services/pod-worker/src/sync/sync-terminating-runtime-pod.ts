/**
 * An orphaned runtime pod (running, but no longer known to config): killed with a 1 s grace in
 * span `syncTerminatingRuntimePod`, no status; then its kill request and worker record go — or it
 * is requeued after the error backoff.
 *
 * Models pkg/kubelet/kubelet.go (Kubelet.SyncTerminatingRuntimePod) and the orphan path of
 * pod_workers.go (podWorkerLoop's runtime-only pods).
 */
import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';
import type { KillRequest, WorkerRecord } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { requeueDelay } from '@splitlet/kube';
import { extractContext, podSpanAttributes, withSpan } from '@splitlet/telemetry';
import type { Versioned } from '../ports.js';
import type { PartitionGuard } from '../partitions/partition-guard.js';
import type { SyncControl, SyncReturn } from '../pod-workers/pod-workers.js';
import { abortable } from './abortable.js';
import { isFatalToSync } from './sync-context.js';
import { failSpan } from './sync-effects.js';
import type { SyncEffects } from './sync-effects.js';
import { requeued } from './worker-requeue.js';

/** SyncTerminatingRuntimePod for the orphan `kill` names (its `runningPod`). */
export async function runSyncTerminatingRuntimePod(
  fx: SyncEffects,
  guard: PartitionGuard,
  ctl: SyncControl,
  uid: string,
  record: WorkerRecord | undefined,
  kill: Versioned<KillRequest>,
): Promise<SyncReturn> {
  const o = fx.o;
  const running = kill.value.runningPod!;
  const start = o.clock.now();
  const parent = kill.value.trace !== undefined ? extractContext(kill.value.trace) : (ctl.trigger ?? ROOT_CONTEXT);
  let spanCtx: Context = ROOT_CONTEXT;
  const error = await withSpan(o.tracer, 'syncTerminatingRuntimePod', { parent, attributes: podSpanAttributes({ ...running, uid }) }, async (span) => {
    spanCtx = context.active();
    try {
      guard.assertHeld();
      await abortable(
        o.runtime.killPod({ type: 'kubelet.runtime.KillPodRequest.v1', runningPod: running, gracePeriodOverride: 1, fence: guard.fence() }, 31_000, ctl.stopSignal),
        ctl.stopSignal,
      );
      return undefined;
    } catch (e) {
      if (isFatalToSync(e)) throw e;
      const msg = `error killing pod: ${errorMessage(e)}`;
      failSpan(span, msg);
      return msg;
    }
  });
  o.metrics.observeWorkerDuration('kill', (o.clock.now() - start) / 1000);
  if (error !== undefined) {
    const delay = requeueDelay({ error }, fx.random, fx.resyncMs);
    o.logger.warn('killing orphaned runtime pod failed, requeued', { uid, err: error, retryInMs: Math.round(delay) });
    const rec: WorkerRecord = requeued(
      {
        ...(record ?? { type: 'kubelet.podworker.WorkerRecord.v1', uid, name: running.name, namespace: running.namespace, state: 'terminating', finished: false, reasons: {} }),
        state: 'terminating',
        gracePeriod: 1,
        epoch: guard.epoch,
      },
      o.clock.now() + Math.round(delay),
      spanCtx,
    );
    const out: WorkerRecord = { ...rec, lastSyncTime: o.clock.now(), syncedAt: new Date(o.clock.now()).toISOString() };
    delete out.runtimeSyncedAt;
    await fx.putWorker(guard, out);
    return {};
  }
  guard.assertHeld();
  await fx.deleteKill(guard, uid, kill);
  if (record !== undefined) await fx.deleteWorker(guard, uid);
  return {};
}
