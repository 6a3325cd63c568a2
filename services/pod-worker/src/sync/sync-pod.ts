/**
 * The `sync` state of a pod's worker: SyncPod in span `syncPod` (generate and send the status,
 * canRunPod, mount volumes, runtime SyncPod, status again), then the worker record — terminal
 * phase → `terminating` right away; otherwise requeued at the resync, the error backoff or the
 * earliest container/image backoff.
 *
 * Models pkg/kubelet/kubelet.go (Kubelet.SyncPod) and pod_workers.go (completeSync, completeWork).
 */
import { trace } from '@opentelemetry/api';
import type { ContainerStatus, MountedVolumes, PodStatus, WorkerRecord } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { canonicalJson, isStaticPod, requeueDelay } from '@splitlet/kube';
import { podSpanAttributes } from '@splitlet/telemetry';
import type { SyncReturn } from '../pod-workers/pod-workers.js';
import { abortable } from './abortable.js';
import { canRunPod } from './can-run-pod.js';
import { probesForRuntime } from './probe-results.js';
import { firstSeen, mergePullWindow, observeRunning } from './pod-startup-latency.js';
import { checkpoint, isAbort, isFatalToSync } from './sync-context.js';
import type { StateSyncOutcome, SyncCtx } from './sync-context.js';
import { probesKey, runtimeKey, statusHeld } from './settled-sync.js';
import type { SyncEffects } from './sync-effects.js';
import { earliestBackoffExpiry, runtimeSyncError, updateReasons } from './sync-results.js';
import { isTerminalPhase, toTerminating } from './worker-decisions.js';
import { requeued } from './worker-requeue.js';

/** Why the mirrorPod step does nothing (until cluster mode makes it real). */
const MIRROR_POD_NOOP = 'standalone mode: no API server, so no mirror pod';

/** Runs SyncPod for a worker in state `sync` and records the outcome in the worker record. */
export async function runSyncPod(fx: SyncEffects, ctx: SyncCtx, record: WorkerRecord): Promise<SyncReturn> {
  const o = fx.o;
  const start = o.clock.now();
  const { updateType } = ctx.decision;
  let rec: WorkerRecord = record;
  if (rec.startedAt === undefined) {
    rec = { ...rec, startedAt: new Date(start).toISOString() };
    if (updateType === 'create') {
      const seen = firstSeen(ctx.pod, ctx.desired?.value);
      if (seen !== undefined) o.metrics.observeWorkerStart(Math.max(0, start - seen) / 1000);
    }
  }
  const attributes = { ...podSpanAttributes(ctx.pod.metadata), 'k8s.pod.update_type': updateType };
  const { outcome, spanCtx } = await fx.inSyncSpan('syncPod', ctx, attributes, () =>
    syncPod(fx, ctx, rec, (next) => {
      rec = next;
    }),
  );
  o.metrics.observeWorkerDuration(updateType, (o.clock.now() - start) / 1000);
  if (outcome.terminal) {
    fx.memory(ctx.guard).settled.delete(ctx.uid);
    rec = toTerminating(rec, ctx.pod, ctx.kill?.value, o.clock.now());
    delete rec.nextSyncTrace;
    await fx.persist(ctx, rec);
    fx.handOver(ctx, outcome.runtimeStatus, spanCtx);
    return { again: true };
  }
  let delay = requeueDelay(outcome.error === undefined ? {} : { error: outcome.error }, fx.random, fx.resyncMs);
  if (outcome.error === undefined && outcome.backoffUntil !== undefined) {
    // A container or image in backoff: sync again when the backoff expires, not at the 60–90 s
    // resync (kubernetes PR 133066), never later than the resync.
    delay = Math.min(delay, Math.max(0, outcome.backoffUntil - o.clock.now()));
  }
  // A retry (an error, a backoff) continues this sync's trace; the periodic resync starts none.
  const unfinished = outcome.error !== undefined || outcome.backoffUntil !== undefined;
  rec = requeued(rec, o.clock.now() + Math.round(delay), unfinished ? spanCtx : undefined);
  if (outcome.error !== undefined) o.logger.warn('syncPod failed, requeued', { uid: ctx.uid, err: outcome.error, retryInMs: Math.round(delay) });
  if (outcome.settled === true && ctx.runtimeCalls.at === undefined && rec.runtimeSyncedAt !== undefined) {
    // No runtime change was made: the last one is still the previous SyncPod's, and the next sync
    // needs a cache no newer than that (what this sync saw already is).
    ctx.runtimeCalls.at = rec.runtimeSyncedAt;
  }
  const out = fx.stamped(ctx, rec);
  const stored = fx.memory(ctx.guard).worker(ctx.uid);
  if (outcome.settled === true && stored != null && out.nextSyncAt !== undefined && onlySyncTimesChange(stored.value, out)) {
    // A settled sync that would rewrite the record with new times only: no write (nor its delivery
    // to sync-loop). While the stored `nextSyncAt` is ahead (this sync answered another poke: a
    // probe result, a PLEG event), sync-loop's tick pokes it still, and that is the periodic resync.
    // Once it has passed (sync-loop poked it, or is about to), the pod workers sync the pod again at
    // the new `nextSyncAt` themselves, unless a poke comes first: one resync per period either way.
    rememberSettled(fx, ctx, outcome, stored.revision);
    const now = o.clock.now();
    if (stored.value.nextSyncAt !== undefined && stored.value.nextSyncAt > now) return {};
    return { resyncAfterMs: Math.max(0, out.nextSyncAt - now) };
  }
  const revision = await fx.putWorker(ctx.guard, out);
  rememberSettled(fx, ctx, outcome, revision);
  return {};
}

/** True when `next` differs from `stored` only in when the pod synced last and when it syncs next (`lastSyncTime`, `syncedAt`, `nextSyncAt`). */
function onlySyncTimesChange(stored: WorkerRecord, next: WorkerRecord): boolean {
  const rest = (r: WorkerRecord): string => {
    const { lastSyncTime: _l, syncedAt: _s, nextSyncAt: _n, ...others } = r;
    return canonicalJson(others);
  };
  return rest(stored) === rest(next);
}

/**
 * After a SyncPod that succeeded with nothing left to retry, what the pod settled on: the desired
 * revision, the worker record just written, cri-adapter's reply status and the probe results (a
 * settled sync keeps all but the record's revision).
 */
function rememberSettled(fx: SyncEffects, ctx: SyncCtx, outcome: StateSyncOutcome, workerRevision: number): void {
  const settled = fx.memory(ctx.guard).settled;
  const runtime = outcome.replyStatus;
  if (outcome.error !== undefined || outcome.backoffUntil !== undefined || ctx.desired === null) {
    settled.delete(ctx.uid);
    return;
  }
  const last = settled.get(ctx.uid);
  if (outcome.settled === true && last !== undefined) {
    settled.set(ctx.uid, { ...last, workerRevision });
    return;
  }
  if (runtime === undefined) {
    settled.delete(ctx.uid);
    return;
  }
  settled.set(ctx.uid, {
    desiredRevision: ctx.desired.revision,
    workerRevision,
    runtime: runtimeKey(runtime),
    probes: probesKey(ctx.probes),
  });
}

/** The pod's record once `status` was generated for it: its start observed when it is running (observeRunning). */
function observe(fx: SyncEffects, ctx: SyncCtx, rec: WorkerRecord, status: PodStatus): WorkerRecord {
  return observeRunning(fx.o.metrics, fx.o.clock.now(), ctx.pod, ctx.desired?.value, rec, status);
}

/** Kubelet.SyncPod. `setRecord` publishes record changes (reasons cache, running observed) as they happen. */
async function syncPod(fx: SyncEffects, ctx: SyncCtx, record: WorkerRecord, setRecord: (r: WorkerRecord) => void): Promise<StateSyncOutcome> {
  const { pod } = ctx;
  let rec = record;
  const status = await fx.step('generateAPIPodStatus', ctx, () => fx.generate(pod, ctx.runtimeStatus, rec, ctx.oldStatus, false, ctx.probes));
  if (isTerminalPhase(status.phase)) {
    await fx.sendStatus(ctx, status, true);
    return { terminal: true, runtimeStatus: ctx.runtimeStatus };
  }
  rec = observe(fx, ctx, rec, status);
  setRecord(rec);
  if (ctx.settled) return settledSyncPod(fx, ctx, status);
  // The kubelet's statusManager.SetPodStatus is a call in memory; here it is a publish that the bus
  // acknowledges. The admission check and the volume mount do not need that acknowledgement, so
  // they run while it is on its way. It is awaited before another status is sent, before the
  // runtime is called and before the sync ends, whatever the path: statuses stay in order and no
  // sync leaves one behind.
  const statusSent = fx.sendStatus(ctx, status, true);
  statusSent.catch(() => undefined);
  try {
    return await syncPodAfterStatus(fx, ctx, status, rec, setRecord, statusSent);
  } finally {
    await statusSent;
  }
}

/** The rest of Kubelet.SyncPod once the pod's status was sent (`statusSent`: its acknowledgement). */
async function syncPodAfterStatus(
  fx: SyncEffects,
  ctx: SyncCtx,
  status: PodStatus,
  record: WorkerRecord,
  setRecord: (r: WorkerRecord) => void,
  statusSent: Promise<void>,
): Promise<StateSyncOutcome> {
  const o = fx.o;
  const { pod, ctl, guard } = ctx;
  let rec = record;
  const runnable = await fx.step('canRunPod', ctx, () => canRunPod(pod, o.allowPrivileged));
  if (!runnable.admit) {
    await statusSent;
    await fx.sendStatus(ctx, blockedStatus(status, runnable.reason, runnable.message), true);
    await fx.event(ctx.guard, pod, 'Warning', runnable.reason, runnable.message);
    try {
      await fx.killPod(ctx, undefined);
    } catch (e) {
      if (isAbort(e)) throw e;
      const msg = `error killing pod: ${errorMessage(e)}`;
      await fx.event(guard, pod, 'Warning', 'FailedKillPod', msg);
      return { terminal: false, error: msg };
    }
    return { terminal: false, error: `pod cannot be run: ${runnable.message}` };
  }
  checkpoint(ctl);

  if (isStaticPod(pod)) {
    // Mirror pods are status-manager's (cluster mode); standalone mode has no API server, so the
    // step does nothing, and its span says so.
    await fx.step('mirrorPod', ctx, () => {
      trace.getActiveSpan()?.setAttributes({ 'splitlet.step.noop': true, 'splitlet.step.noop_reason': MIRROR_POD_NOOP });
    });
  }

  let volumes: MountedVolumes;
  let podDir: string;
  try {
    ({ volumes, podDir } = await fx.step('makePodDataDirs+waitForAttachAndMount', ctx, async () => {
      guard.assertHeld();
      return abortable(o.volumes.mount({ type: 'kubelet.volume.MountRequest.v1', pod, fence: guard.fence() }, o.volumeTimeoutMs, ctl.signal), ctl.signal);
    }));
  } catch (e) {
    if (isFatalToSync(e)) throw e;
    const msg = `Unable to attach or mount volumes: ${errorMessage(e)}`;
    await fx.event(guard, pod, 'Warning', 'FailedMount', msg);
    return { terminal: false, error: msg };
  }
  checkpoint(ctl);
  await statusSent;

  const pullSecrets = await fx.step('getPullSecretsForPod', ctx, () => (pod.spec.imagePullSecrets ?? []).map((s) => s.name).filter((n) => n !== ''));

  let reply;
  try {
    reply = await fx.step('runtime.SyncPod', ctx, async () => {
      guard.assertHeld();
      checkpoint(ctl);
      // Like the kubelet (runtime SyncPod gets a context without cancel), a kill does not abandon
      // a runtime sync half way: only a stop (lease lost) stops waiting for it.
      return abortable(
        o.runtime.syncPod(
          {
            type: 'kubelet.runtime.SyncPodRequest.v1',
            pod,
            podStatus: ctx.runtimeStatus,
            ...(ctx.runtimeStatusAt !== undefined ? { podStatusTimestamp: ctx.runtimeStatusAt } : {}),
            ...probesForRuntime(ctx.probes),
            volumes,
            pullSecrets,
            podDir,
            fence: guard.fence(),
          },
          o.runtimeSyncTimeoutMs,
          ctl.stopSignal,
        ),
        ctl.stopSignal,
      );
    });
  } catch (e) {
    if (isFatalToSync(e)) throw e;
    return { terminal: false, error: `runtime SyncPod failed: ${errorMessage(e)}` };
  }
  if (reply.timestamp !== undefined) ctx.runtimeCalls.at = reply.timestamp;
  rec = { ...rec, reasons: updateReasons(rec.reasons, reply.results) };
  if (rec.startedObserved !== true) rec = mergePullWindow(rec, reply);
  setRecord(rec);
  const after = fx.generate(pod, reply.podStatus, rec, status, false, ctx.probes);
  rec = observe(fx, ctx, rec, after);
  setRecord(rec);
  await fx.sendStatus(ctx, after, true);
  if (isTerminalPhase(after.phase)) return { terminal: true, runtimeStatus: reply.podStatus };
  const err = runtimeSyncError(reply.results);
  const backoffUntil = earliestBackoffExpiry(reply.results);
  return {
    terminal: false,
    runtimeStatus: reply.podStatus,
    replyStatus: reply.podStatus,
    ...(err !== undefined ? { error: err } : {}),
    ...(backoffUntil !== undefined ? { backoffUntil } : {}),
  };
}

/**
 * The rest of SyncPod for a settled pod (settled-sync.ts): canRunPod, the mount and the runtime
 * SyncPod would find nothing to do, so they are skipped; the status is sent unless status-manager
 * already holds it. The sync span says so.
 */
async function settledSyncPod(fx: SyncEffects, ctx: SyncCtx, status: PodStatus): Promise<StateSyncOutcome> {
  const memory = fx.memory(ctx.guard);
  const held = statusHeld(status, ctx.apiRecord, memory.lastSent(ctx.uid));
  trace.getActiveSpan()?.setAttributes({ 'splitlet.sync.settled': true, 'splitlet.sync.status_sent': !held });
  fx.o.logger.debug('sync settled: volume mount and runtime SyncPod skipped', { uid: ctx.uid, statusSent: !held });
  fx.o.metrics.observeSettledSync?.(!held);
  if (!held) await fx.sendStatus(ctx, status, true);
  return { terminal: false, runtimeStatus: ctx.runtimeStatus, settled: true };
}

/**
 * The status of a pod canRunPod refused (1.21 soft admission): the reason and message, and
 * `Blocked` as the reason of every waiting container.
 */
export function blockedStatus(status: PodStatus, reason: string, message: string): PodStatus {
  const block = (list: ContainerStatus[] | undefined): ContainerStatus[] | undefined =>
    list?.map((cs) => (cs.state?.waiting !== undefined ? { ...cs, state: { ...cs.state, waiting: { ...cs.state.waiting, reason: 'Blocked' } } } : cs));
  const out: PodStatus = { ...status, reason, message };
  const init = block(status.initContainerStatuses);
  const regular = block(status.containerStatuses);
  if (init !== undefined) out.initContainerStatuses = init;
  if (regular !== undefined) out.containerStatuses = regular;
  return out;
}
