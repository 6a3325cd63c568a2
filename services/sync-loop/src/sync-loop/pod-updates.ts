/**
 * Config UPDATE / DELETE (graceful), RECONCILE and REMOVE of pods already known: the new desired
 * record and an `update` poke; the new content only; or the desired record deleted and — once
 * every source was seen — a kill request (grace only shrinks) and a `kill` poke.
 *
 * Models pkg/kubelet/kubelet.go (HandlePodUpdates, HandlePodReconcile, HandlePodRemoves,
 * deletePod).
 */
import type { DesiredPod, KillRequest, PodUpdate } from '@splitlet/api';
import { isMirrorPod } from '@splitlet/kube';
import { inPodSpan, startPodSpan } from './pod-spans.js';
import { allOrFirstError, podRef, writeFailed } from './sync-loop-context.js';
import type { SyncLoopContext } from './sync-loop-context.js';

/** The handlers of updates to known pods. Called under the sync loop's lock. */
export class PodUpdates {
  readonly #c: SyncLoopContext;

  constructor(context: SyncLoopContext) {
    this.#c = context;
  }

  /** HandlePodUpdates: UPDATE and graceful DELETE. */
  async handleUpdates(update: PodUpdate): Promise<void> {
    if (update.items.length > 0) this.#c.o.logger.info(`SyncLoop ${update.op}`, { source: update.source, pods: update.items.map((i) => podRef(i.pod)) });
    const startTime = new Date(this.#c.o.clock.now()).toISOString();
    await allOrFirstError(
      update.items.map((item) => {
        if (isMirrorPod(item.pod)) return this.#c.handleMirrorPod(item.pod);
        const uid = item.pod.metadata.uid;
        const previous = this.#c.podManager.get(uid);
        const desired: DesiredPod = { type: 'kubelet.podworker.DesiredPod.v1', pod: item.pod, updateType: 'update', startTime };
        if (item.trace !== undefined) desired.trace = item.trace;
        if (update.origin !== undefined) desired.configOrigin = update.origin;
        const creationTrace = previous?.creationTrace ?? item.trace;
        if (creationTrace !== undefined) desired.creationTrace = creationTrace;
        if (previous?.rejected !== undefined) desired.rejected = previous.rejected;
        const { span, ctx } = startPodSpan(this.#c.o.tracer, 'updatePod', item, 'update');
        return inPodSpan(span, ctx, async () => {
          await this.#c.putDesired(desired);
          if (desired.rejected === undefined) await this.#c.poke(uid, 'update');
          this.#c.podManager.set(desired);
          this.#c.removed.delete(uid);
        });
      }),
    );
  }

  /** HandlePodReconcile: the pod's new content, no poke. */
  async handleReconcile(update: PodUpdate): Promise<void> {
    const startTime = new Date(this.#c.o.clock.now()).toISOString();
    await allOrFirstError(
      update.items.map(async (item) => {
        if (isMirrorPod(item.pod)) return;
        const previous = this.#c.podManager.get(item.pod.metadata.uid);
        let desired: DesiredPod;
        if (previous !== undefined) desired = { ...previous, pod: item.pod };
        else {
          desired = { type: 'kubelet.podworker.DesiredPod.v1', pod: item.pod, updateType: 'update', startTime };
          if (item.trace !== undefined) {
            desired.trace = item.trace;
            desired.creationTrace = item.trace;
          }
        }
        if (update.origin !== undefined) desired.configOrigin = update.origin;
        await this.#c.putDesired(desired);
        this.#c.podManager.set(desired);
      }),
    );
  }

  /** HandlePodRemoves / deletePod. */
  async handleRemoves(update: PodUpdate): Promise<void> {
    const { logger, clock } = this.#c.o;
    if (update.items.length > 0) logger.info('SyncLoop REMOVE', { source: update.source, pods: update.items.map((i) => podRef(i.pod)) });
    const requestedAt = new Date(clock.now()).toISOString();
    await allOrFirstError(
      update.items.map((item) => {
        if (isMirrorPod(item.pod)) return this.#c.handleMirrorPod(item.pod);
        const pod = item.pod;
        const uid = pod.metadata.uid;
        const { span, ctx } = startPodSpan(this.#c.o.tracer, 'updatePod', item, 'kill');
        return inPodSpan(span, ctx, async () => {
          try {
            await this.#c.o.desired.delete(uid);
          } catch (e) {
            throw writeFailed(`could not delete the desired pod ${podRef(pod)}`, e);
          }
          this.#c.podManager.delete(uid);
          this.#c.removed.set(uid, pod);
          if (!this.#c.sourcesReady.allReady()) {
            // Housekeeping kills the pod's worker once every source was seen (SyncKnownPods).
            logger.error('Failed to delete pod', { pod: podRef(pod), podUID: uid, err: "skipping delete because sources aren't ready yet" });
            span.setAttribute('splitlet.kill.deferred', true);
            return;
          }
          const request: KillRequest = { type: 'kubelet.podworker.KillRequest.v1', uid, reason: 'removed', pod, requestedAt };
          if (item.trace !== undefined) request.trace = item.trace;
          await this.#c.requestKill(request);
          await this.#c.poke(uid, 'kill');
        });
      }),
    );
  }
}
