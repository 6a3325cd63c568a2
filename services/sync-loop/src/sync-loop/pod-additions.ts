/**
 * A config ADD: pods in creation order, each admitted (or rejected) against the pods admitted
 * before it, in span `admitPod`; admitted → DesiredPod{create} and a `create` poke; rejected →
 * DesiredPod{rejected}, status Failed "Pod was rejected: …", a Warning event and the rejection
 * metric. A replayed ADD of a known pod is not admitted again.
 *
 * Models pkg/kubelet/kubelet.go (HandlePodAdditions, canAdmitPod, rejectPod).
 */
import type { BoundPod, DesiredPod, KubeEvent, PodStatus, PodUpdate, PodUpdateItem, UpdateOrigin } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { ConfigAnnotations, canAdmitPod, isMirrorPod, parseTime, rejectedPodStatus } from '@splitlet/kube';
import { injectContext } from '@splitlet/telemetry';
import type { StatusSink } from '../ports.js';
import { admissionRejectionLabel, isActivePod, isTerminalPhase } from './admission.js';
import { inPodSpan, startPodSpan } from './pod-spans.js';
import { allOrFirstError, podRef, writeFailed } from './sync-loop-context.js';
import type { SyncLoopContext } from './sync-loop-context.js';

/** HandlePodAdditions. Called under the sync loop's lock. */
export class PodAdditions {
  readonly #c: SyncLoopContext;

  constructor(context: SyncLoopContext) {
    this.#c = context;
  }

  /**
   * An ADD: pods sorted by creation time, admitted one after the other, their writes overlapping.
   * @throws KubeletError `SyncLoopWriteFailed` (retryable) when a write failed.
   */
  async handle(update: PodUpdate): Promise<void> {
    const { clock, logger } = this.#c.o;
    const items = update.items
      .map((item, i) => ({ item, i, t: creationTime(item.pod) }))
      .sort((a, b) => (a.t === b.t ? a.i - b.i : a.t < b.t ? -1 : 1))
      .map((x) => x.item);
    if (items.length > 0) logger.info('SyncLoop ADD', { source: update.source, pods: items.map((i) => podRef(i.pod)) });
    const startTime = new Date(clock.now()).toISOString();
    // Decisions are sequential (each admission sees the pods admitted before it); writes overlap.
    const decided = new Map<string, DesiredPod>();
    const writes: Promise<void>[] = [];
    for (const item of items) {
      if (isMirrorPod(item.pod)) {
        writes.push(this.#c.handleMirrorPod(item.pod));
        continue;
      }
      writes.push(this.#admitPod(item, decided, startTime, update.origin));
    }
    await allOrFirstError(writes);
  }

  /** Admission of one pod in span `admitPod`; the decision is made before this returns its promise. */
  #admitPod(item: PodUpdateItem, decided: Map<string, DesiredPod>, startTime: string, origin: UpdateOrigin | undefined): Promise<void> {
    const pod = item.pod;
    const uid = pod.metadata.uid;
    const { span, ctx } = startPodSpan(this.#c.o.tracer, 'admitPod', item, 'create');
    const previous = decided.get(uid) ?? this.#c.podManager.get(uid);

    let desired: DesiredPod;
    let rejection: { reason: string; message: string } | undefined;
    if (previous?.rejected !== undefined) {
      // A replayed ADD of a pod already rejected: nothing to do again.
      span.setAttributes({ 'splitlet.admission.admitted': false, 'splitlet.admission.reason': previous.rejected.reason, 'splitlet.admission.replay': true });
      span.end();
      return Promise.resolve();
    }
    const base: DesiredPod = { type: 'kubelet.podworker.DesiredPod.v1', pod, updateType: 'create', startTime };
    if (item.trace !== undefined) base.trace = item.trace;
    if (origin !== undefined) base.configOrigin = origin;
    const creationTrace = previous?.creationTrace ?? item.trace;
    if (creationTrace !== undefined) base.creationTrace = creationTrace;

    if (previous !== undefined || pod.metadata.deletionTimestamp != null || isTerminalPhase(pod.status?.phase)) {
      // Known already, or termination requested, or terminal: no admission (HandlePodAdditions).
      desired = base;
      span.setAttribute('splitlet.admission.admitted', true);
    } else {
      const result = this.#canAdmitPod(uid, pod, decided);
      if (result.admit) {
        desired = base;
        span.setAttribute('splitlet.admission.admitted', true);
      } else {
        rejection = { reason: result.reason, message: result.message };
        desired = { ...base, rejected: rejection };
        span.setAttributes({ 'splitlet.admission.admitted': false, 'splitlet.admission.reason': result.reason, 'splitlet.admission.message': result.message });
      }
    }
    decided.set(uid, desired);

    return inPodSpan(span, ctx, async () => {
      if (rejection === undefined) {
        await this.#c.putDesired(desired);
        await this.#c.poke(uid, 'create');
      } else {
        await this.#rejectPod(desired, rejection);
      }
      this.#c.podManager.set(desired);
      this.#c.removed.delete(uid);
    });
  }

  /** canAdmitPod; a pod admission cannot evaluate (e.g. an unparsable quantity) is rejected, not the whole update. */
  #canAdmitPod(uid: string, pod: BoundPod, decided: ReadonlyMap<string, DesiredPod>): ReturnType<typeof canAdmitPod> {
    try {
      return canAdmitPod(this.#c.o.admissionNode(), this.#activePods(uid, decided), pod);
    } catch (e) {
      return { admit: false, reason: 'UnexpectedAdmissionError', message: `Failed to admit pod: ${errorMessage(e)}` };
    }
  }

  /** The admitted, active pods admission weighs `uid` against (filterOutInactivePods minus the pod itself). */
  #activePods(uid: string, decided: ReadonlyMap<string, DesiredPod>): BoundPod[] {
    const byUid = new Map<string, DesiredPod>();
    for (const d of this.#c.podManager.values()) byUid.set(d.pod.metadata.uid, d);
    for (const [k, d] of decided) byUid.set(k, d);
    byUid.delete(uid);
    const out: BoundPod[] = [];
    for (const [k, d] of byUid) if (isActivePod(d, this.#c.o.views.workers.get(k))) out.push(d.pod);
    return out;
  }

  /** rejectPod: status Failed "Pod was rejected: …", a Warning event, the rejection metric. */
  async #rejectPod(desired: DesiredPod, r: { reason: string; message: string }): Promise<void> {
    const { node, clock, logger, metrics } = this.#c.o;
    const pod = desired.pod;
    const now = new Date(clock.now()).toISOString();
    await this.#c.putDesired(desired);
    try {
      const update: Parameters<StatusSink['publish']>[0] = {
        type: 'kubelet.status.PodStatusUpdate.v1',
        kind: 'set',
        uid: pod.metadata.uid,
        name: pod.metadata.name,
        namespace: pod.metadata.namespace,
        pod,
        status: rejectionStatus(pod, r),
        couldHaveRunningContainers: false,
        at: now,
      };
      const carrier = injectContext();
      if (Object.keys(carrier).length > 0) update.trace = carrier;
      await this.#c.o.status.publish(update);
      const event: KubeEvent = {
        type: 'kubelet.events.Event.v1',
        eventType: 'Warning',
        reason: r.reason,
        message: r.message,
        involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
        source: { component: 'kubelet', host: node },
        timestamp: now,
      };
      await this.#c.o.events.record(event);
    } catch (e) {
      throw writeFailed(`could not report the rejection of pod ${podRef(pod)}`, e);
    }
    metrics.admissionRejections.inc({ reason: admissionRejectionLabel(r.reason) });
    logger.warn('Pod rejected', { pod: podRef(pod), podUID: pod.metadata.uid, reason: r.reason, message: r.message });
  }
}

/** Creation time for HandlePodAdditions' sort: creationTimestamp, else config.seen. */
function creationTime(pod: BoundPod): number {
  return parseTime(pod.metadata.creationTimestamp) ?? parseTime(pod.metadata.annotations?.[ConfigAnnotations.seen]) ?? Number.NEGATIVE_INFINITY;
}

/** rejectPod's status; without a QoS class when the pod's resources cannot even be parsed. */
function rejectionStatus(pod: BoundPod, r: { reason: string; message: string }): PodStatus {
  try {
    return rejectedPodStatus(pod, r.reason, r.message);
  } catch {
    // getPodQos could not parse a quantity (the reason the pod was rejected): report it without QoS.
    return { phase: 'Failed', reason: r.reason, message: `Pod was rejected: ${r.message}` };
  }
}
