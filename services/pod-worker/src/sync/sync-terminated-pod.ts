/**
 * The `terminated` state of a pod's worker: SyncTerminatedPod in span `syncTerminatedPod` (final
 * status, volumes unmounted, status-manager told the pod is terminated), then the record is marked
 * finished — or, when the pod is no longer desired, forgotten.
 *
 * Models pkg/kubelet/kubelet.go (Kubelet.SyncTerminatedPod) and pod_workers.go
 * (completeTerminated).
 */
import type { WorkerRecord } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { injectContext, podSpanAttributes } from '@splitlet/telemetry';
import type { SyncReturn } from '../pod-workers/pod-workers.js';
import { abortable } from './abortable.js';
import { isFatalToSync } from './sync-context.js';
import type { SyncCtx } from './sync-context.js';
import type { SyncEffects } from './sync-effects.js';
import { withoutRequeue } from './worker-requeue.js';

/** Runs SyncTerminatedPod for a worker in state `terminated` and records the outcome. */
export async function runSyncTerminatedPod(fx: SyncEffects, ctx: SyncCtx, record: WorkerRecord): Promise<SyncReturn> {
  const o = fx.o;
  const start = o.clock.now();
  const { outcome, spanCtx } = await fx.inSyncSpan('syncTerminatedPod', ctx, podSpanAttributes(ctx.pod.metadata), () => syncTerminatedPod(fx, ctx, record));
  o.metrics.observeWorkerDuration('terminated', (o.clock.now() - start) / 1000);
  if (outcome.error !== undefined) {
    await fx.requeueAfterError(ctx, record, 'syncTerminatedPod', outcome.error, spanCtx);
    return {};
  }
  const finished: WorkerRecord = withoutRequeue({ ...record, finished: true });
  if (ctx.desired === null) {
    await fx.forget(ctx.guard, ctx.uid, finished, ctx.kill, ctx.pod);
    return {};
  }
  await fx.persist(ctx, finished);
  return {};
}

async function syncTerminatedPod(fx: SyncEffects, ctx: SyncCtx, rec: WorkerRecord): Promise<{ error?: string }> {
  const o = fx.o;
  const { pod, guard, ctl } = ctx;
  const status = fx.generate(pod, ctx.runtimeStatus, rec, ctx.oldStatus, true, ctx.probes);
  await fx.sendStatus(ctx, status, false);
  try {
    await fx.step('waitForUnmount', ctx, async () => {
      guard.assertHeld();
      return abortable(
        o.volumes.unmount(
          { type: 'kubelet.volume.UnmountRequest.v1', uid: ctx.uid, removeContent: rec.deleted === true || rec.evicted === true, fence: guard.fence() },
          o.volumeTimeoutMs,
          ctl.stopSignal,
        ),
        ctl.stopSignal,
      );
    });
  } catch (e) {
    if (isFatalToSync(e)) throw e;
    return { error: `error unmounting volumes: ${errorMessage(e)}` };
  }
  await fx.send(guard, {
    type: 'kubelet.status.PodStatusUpdate.v1',
    kind: 'terminated',
    uid: ctx.uid,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    pod,
    status,
    couldHaveRunningContainers: false,
    ...(ctx.desired === null ? { podRemoved: true } : {}),
    at: new Date(o.clock.now()).toISOString(),
    trace: injectContext(),
  });
  return {};
}
