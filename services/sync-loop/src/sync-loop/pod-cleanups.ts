/**
 * Housekeeping, once every source was seen: kill the workers of pods no longer desired and the
 * orphaned runtime pods (each in its own `killPod` trace), restart desired pods unknown to the
 * workers, clean orphaned pod directories through volume-manager, set the pod gauges. Each failed
 * action is logged and retried on the next pass.
 *
 * Models pkg/kubelet/kubelet_pods.go (HandlePodCleanups, cleanupOrphanedPodDirs).
 */
import { ROOT_CONTEXT, SpanKind, context, trace } from '@opentelemetry/api';
import type { KillRequest, RunningPodRef } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { formatGoDuration, isStaticPod } from '@splitlet/kube';
import { extractContext, injectContext, podSpanAttributes } from '@splitlet/telemetry';
import { planHousekeeping } from './housekeeping.js';
import { podRef } from './sync-loop-context.js';
import type { SyncLoopContext } from './sync-loop-context.js';

/** `housekeepingWarningDuration`: a slower housekeeping pass is logged as an error. */
const HOUSEKEEPING_WARNING_MS = 1000;
/** How often a repeated volume-cleanup failure is logged again. */
const VOLUME_ERROR_LOG_EVERY_MS = 60_000;

/** HandlePodCleanups. Called under the sync loop's lock. */
export class PodCleanups {
  readonly #c: SyncLoopContext;
  #lastVolumeError: { message: string; at: number } | undefined;
  /** When a pod unknown to the workers was last sent `create` again (see HousekeepingInput.restartedAt). */
  readonly #restartedAt = new Map<string, number>();

  constructor(context: SyncLoopContext) {
    this.#c = context;
  }

  /** One housekeeping pass. Never throws. */
  async run(): Promise<void> {
    const { clock, logger, metrics, views } = this.#c.o;
    const start = clock.now();
    const plan = planHousekeeping({
      desired: this.#c.podManager.values(),
      workers: views.workers.values(),
      runtime: views.runtime.values(),
      kills: views.kills,
      removedPods: this.#c.removed,
      now: start,
      restartedAt: this.#restartedAt,
      ...(this.#c.o.restartAfterMs === undefined ? {} : { restartAfterMs: this.#c.o.restartAfterMs }),
    });
    const requestedAt = new Date(start).toISOString();

    const actions: Promise<void>[] = [];
    for (const k of plan.killRemoved) {
      const request: KillRequest = { type: 'kubelet.podworker.KillRequest.v1', uid: k.uid, reason: 'removed', runningPod: k.runningPod, requestedAt };
      if (k.pod !== undefined) request.pod = k.pod;
      actions.push(this.#housekeepingKill(request, 'Killing the worker of a pod that is no longer desired'));
    }
    for (const runningPod of plan.killOrphaned) {
      const request: KillRequest = {
        type: 'kubelet.podworker.KillRequest.v1',
        uid: runningPod.uid,
        reason: 'orphaned',
        runningPod,
        gracePeriodOverride: 1,
        requestedAt,
      };
      actions.push(this.#housekeepingKill(request, 'Clean up containers for orphaned pod we had not seen before'));
    }
    if (plan.killOrphaned.length > 0) metrics.orphanedRuntimePods.inc(plan.killOrphaned.length);
    for (const uid of this.#restartedAt.keys()) if (!this.#c.podManager.has(uid) || views.workers.get(uid) !== undefined) this.#restartedAt.delete(uid);
    for (const d of plan.restart) {
      this.#restartedAt.set(d.pod.metadata.uid, start);
      actions.push(
        (async () => {
          logger.info('Pod will be restarted because it is in the desired set and not known to the pod workers', { pod: podRef(d.pod), podUID: d.pod.metadata.uid });
          try {
            await this.#c.o.work.poke(d.pod.metadata.uid, 'create', extractContext(d.trace, ROOT_CONTEXT));
            metrics.restartedPods.inc({ static: isStaticPod(d.pod) ? 'true' : '' });
          } catch (e) {
            logger.warn('could not restart a pod unknown to the workers', { podUID: d.pod.metadata.uid, err: errorMessage(e) });
          }
        })(),
      );
    }
    actions.push(this.#cleanupOrphanedPodDirs(plan.keep));
    await Promise.all(actions);

    metrics.desiredPods.set({ static: '' }, plan.desiredPods.regular);
    metrics.desiredPods.set({ static: 'true' }, plan.desiredPods.static);
    metrics.activePods.set({ static: '' }, plan.activePods.regular);
    metrics.activePods.set({ static: 'true' }, plan.activePods.static);
    for (const [key, n] of plan.workingPods) {
      const [lifecycle, config, isStatic] = key.split('|') as [string, string, string];
      metrics.workingPods.set({ lifecycle, config, static: isStatic }, n);
    }
    // Forget removed pods once nothing refers to them any more.
    for (const uid of this.#c.removed.keys()) {
      if (views.workers.get(uid) === undefined && views.kills.get(uid) === undefined && views.runtime.get(uid) === undefined) this.#c.removed.delete(uid);
    }

    const took = clock.now() - start;
    metrics.housekeepingDuration.observe(took / 1000);
    if (took > HOUSEKEEPING_WARNING_MS) {
      logger.error('Housekeeping took longer than expected', { expected: formatGoDuration(HOUSEKEEPING_WARNING_MS), actual: formatGoDuration(took) });
    }
  }

  /** A housekeeping kill: its own trace (a new episode), a kill request, a poke. Logs failures. */
  async #housekeepingKill(request: KillRequest, message: string): Promise<void> {
    const ref: RunningPodRef | undefined = request.runningPod;
    const span = this.#c.o.tracer.startSpan(
      'killPod',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          ...(ref === undefined ? { 'k8s.pod.uid': request.uid } : podSpanAttributes({ ...ref, uid: request.uid })),
          'k8s.pod.update_type': 'kill',
          'splitlet.kill.reason': request.reason,
        },
      },
      ROOT_CONTEXT,
    );
    const ctx = trace.setSpan(ROOT_CONTEXT, span);
    try {
      await context.with(ctx, async () => {
        this.#c.o.logger.info(message, { podUID: request.uid, pod: ref === undefined ? undefined : `${ref.namespace}/${ref.name}`, reason: request.reason });
        const carrier = injectContext();
        if (Object.keys(carrier).length > 0) request.trace = carrier;
        const outcome = await this.#c.requestKill(request);
        span.setAttribute('splitlet.kill.outcome', outcome);
        await this.#c.o.work.poke(request.uid, 'kill');
      });
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      this.#c.o.logger.warn('housekeeping could not request a kill; retrying on the next pass', { podUID: request.uid, err: errorMessage(e) });
    } finally {
      span.end();
    }
  }

  /** cleanupOrphanedPodDirs through volume-manager. Failures are logged (rate-limited), never fatal. */
  async #cleanupOrphanedPodDirs(keep: readonly string[]): Promise<void> {
    const { logger, clock } = this.#c.o;
    try {
      const removed = await this.#c.o.volumes.cleanup(keep);
      if (removed.length > 0) logger.info('Cleaned up orphaned pod directories', { podUIDs: removed });
      this.#lastVolumeError = undefined;
    } catch (e) {
      const message = errorMessage(e);
      const now = clock.now();
      const last = this.#lastVolumeError;
      if (last === undefined || last.message !== message || now - last.at >= VOLUME_ERROR_LOG_EVERY_MS) {
        logger.error('Failed cleaning up orphaned pod directories', { err: message });
        this.#lastVolumeError = { message, at: now };
      }
    }
  }
}
