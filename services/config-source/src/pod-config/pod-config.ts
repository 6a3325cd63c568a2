/**
 * PodConfig: merges each source's full listing into the node's desired pods and delivers the
 * resulting incremental updates, in order, each as one `PodUpdate` message; reports bad manifests.
 *
 * Models pkg/kubelet/config/config.go (PodConfig, podStorage in incremental mode; the merge itself
 * is `PodStorage` from @splitlet/kube) and the kubelet's recorder for `FailedValidation`.
 *
 * ```
 * listing(source) ─► errors: log each, event when a location's error changes
 *                 ─► SET ─► PodStorage.merge ─► REMOVE, ADD, UPDATE, DELETE, (empty ADD), RECONCILE
 *                                            ─► per pod a root span `config.<op>` (linked to the
 *                                               pod's creation span) ─► publish, await the ack
 * ```
 *
 * Concurrency: listings from every source are applied one at a time (a promise chain), so updates
 * leave in the order the merge produced them. A failed publish is retried with backoff until it is
 * acknowledged or the signal aborts; nothing is dropped.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Link, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { nodeToken } from '@splitlet/api';
import type { BoundPod, KubeEvent, PodSource, PodUpdate, PodUpdateItem } from '@splitlet/api';
import { PodStorage, isMirrorPod } from '@splitlet/kube';
import type { PodConfigUpdate } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import { sleep } from '@splitlet/service';
import { injectContext, podSpanAttributes } from '@splitlet/telemetry';
import type { Logger } from '@splitlet/telemetry';
import type { ConfigMetrics, EventRecorder, UpdatePublisher } from '../ports.js';
import type { ListingChanges, ManifestError, SourceListing } from '../sources/listing.js';

/** Options of {@link PodConfig}. */
export interface PodConfigOptions {
  readonly nodeName: string;
  /** Every source this process runs (PodUpdate.sources), so sync-loop knows when all were seen. */
  readonly sources: readonly PodSource[];
  readonly publisher: UpdatePublisher;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics?: ConfigMetrics;
  /** `PodUpdate.origin.publisher` and the prefix of publish msgIDs; unique per process start. */
  readonly instanceId: string;
  /** Aborts publish retries at shutdown. */
  readonly signal: AbortSignal;
  /** Publish retry backoff, first and max. @default [200, 5000] */
  readonly retryBackoffMs?: readonly [number, number];
}

/** The merged desired pods of all sources and their delivery. */
export class PodConfig {
  readonly #o: PodConfigOptions;
  readonly #storage: PodStorage;
  #chain: Promise<void> = Promise.resolve();
  #seq = 0;
  /** uid → the span context of its creation (ADD) episode, for links from later episodes. */
  readonly #creation = new Map<string, SpanContext>();
  /** uid → the manifest (path or URL) it came from. */
  readonly #origins = new Map<string, string>();
  /** source → location → the error last reported as an event. */
  readonly #reported = new Map<string, Map<string, string>>();
  /** source → duplicate-name rejections already reported (uid + message). */
  readonly #rejected = new Map<string, Set<string>>();

  constructor(options: PodConfigOptions) {
    this.#o = options;
    this.#storage = new PodStorage();
  }

  /** True once every configured source has sent a full listing. */
  seenAllSources(): boolean {
    return this.#storage.seenSources(...this.#o.sources);
  }

  /**
   * Applies one listing: reports its errors, merges its pods (when it has a SET) and publishes the
   * updates. Calls are queued and run one at a time; the promise settles when this one is done
   * (rejects only if the signal aborted a publish).
   */
  apply(listing: SourceListing): Promise<void> {
    const run = this.#chain.then(() => this.#apply(listing));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #apply(listing: SourceListing): Promise<void> {
    const { source } = listing;
    await this.#reportErrors(source, listing.errors, listing.pods !== undefined);
    if (listing.pods === undefined) return;
    if (listing.changes !== undefined && (await this.#applyChanges(source, listing.changes))) return;
    const pods: BoundPod[] = [];
    for (const { pod, origin } of listing.pods) {
      pods.push(pod);
      this.#origins.set(pod.metadata.uid, origin);
    }
    const result = this.#storage.setSource(source, pods, this.#o.clock.now());
    for (const r of result.rejections) if (this.#storage.get(source, r.pod.metadata.uid) === undefined) this.#origins.delete(r.pod.metadata.uid);
    await this.#reportRejections(source, result.rejections);
    this.#o.metrics?.setPods(source, pods.length - result.rejections.length);
    for (const u of result.updates) await this.#deliver(u);
    // Forget origins of pods this source no longer has (a set of the listing only when some were removed).
    const removed = result.updates.filter((u) => u.op === 'REMOVE');
    if (removed.length === 0) return;
    const current = new Set(pods.map((p) => p.metadata.uid));
    for (const u of removed) for (const p of u.pods) if (!current.has(p.metadata.uid)) this.#origins.delete(p.metadata.uid);
  }

  /**
   * Merges only the changed pods of a listing; false (nothing done) when PodStorage cannot be sure
   * that gives the full SET's updates, and the listing is merged as a whole instead. A clean SET had
   * no rejections, so there are none to report again.
   */
  async #applyChanges(source: PodSource, changes: ListingChanges): Promise<boolean> {
    const result = this.#storage.mergeChanges(source, { upserted: changes.upserted.map((p) => p.pod), removed: changes.removed }, this.#o.clock.now());
    if (result === undefined) return false;
    for (const { pod, origin } of changes.upserted) this.#origins.set(pod.metadata.uid, origin);
    this.#o.metrics?.setPods(source, this.#storage.count(source));
    for (const u of result.updates) await this.#deliver(u);
    for (const uid of changes.removed) this.#origins.delete(uid);
    return true;
  }

  /**
   * Logs every error (once per look) and emits a Warning `FailedValidation` event against the Node
   * when a location's error is new or changed. With `complete`, locations not listed are cleared.
   */
  async #reportErrors(source: string, errors: readonly ManifestError[], complete: boolean): Promise<void> {
    const reported = this.#reported.get(source) ?? new Map<string, string>();
    this.#reported.set(source, reported);
    const now = new Set<string>();
    for (const e of errors) {
      now.add(e.location);
      this.#o.metrics?.manifestError(source);
      this.#o.logger.error('could not process manifest', {
        source,
        ...(e.kind === 'file' ? { file: e.location } : { url: e.location }),
        ...(e.document !== undefined ? { document: e.document } : {}),
        err: e.message,
      });
      if (reported.get(e.location) === e.message) continue;
      reported.set(e.location, e.message);
      const what = e.kind === 'file' ? 'file' : 'URL';
      await this.#record(this.#nodeEvent('FailedValidation', `Could not process manifest ${what} ${JSON.stringify(e.location)}: ${e.message}`), nodeToken(this.#o.nodeName));
    }
    if (complete) for (const loc of [...reported.keys()]) if (!now.has(loc)) reported.delete(loc);
  }

  async #reportRejections(source: string, rejections: readonly { pod: BoundPod; message: string }[]): Promise<void> {
    const before = this.#rejected.get(source) ?? new Set<string>();
    const after = new Set<string>();
    for (const r of rejections) {
      const key = `${r.pod.metadata.uid}\n${r.message}`;
      after.add(key);
      this.#o.logger.warn('dropped a pod with a duplicate name', { source, uid: r.pod.metadata.uid, pod: `${r.pod.metadata.namespace}/${r.pod.metadata.name}`, err: r.message });
      if (before.has(key)) continue;
      const event: KubeEvent = {
        type: 'kubelet.events.Event.v1',
        eventType: 'Warning',
        reason: 'FailedValidation',
        message: r.message,
        involvedObject: { kind: 'Pod', name: r.pod.metadata.name, namespace: r.pod.metadata.namespace, uid: r.pod.metadata.uid },
        source: { component: 'kubelet', host: this.#o.nodeName },
        timestamp: new Date(this.#o.clock.now()).toISOString(),
      };
      await this.#record(event, r.pod.metadata.uid);
    }
    this.#rejected.set(source, after);
  }

  #nodeEvent(reason: string, message: string): KubeEvent {
    const node = this.#o.nodeName;
    return {
      type: 'kubelet.events.Event.v1',
      eventType: 'Warning',
      reason,
      message,
      involvedObject: { kind: 'Node', name: node, namespace: '', uid: node },
      source: { component: 'kubelet', host: node },
      timestamp: new Date(this.#o.clock.now()).toISOString(),
    };
  }

  async #record(event: KubeEvent, subjectKey: string): Promise<void> {
    try {
      await this.#o.events.record(event, subjectKey);
    } catch (e) {
      this.#o.logger.error('could not record event', { reason: event.reason, err: e });
    }
  }

  /**
   * Publishes one merged update. ADD / UPDATE / DELETE / REMOVE pods each get a new root span
   * `config.<op>` (a new trace per episode), linked to the pod's creation span when known; its
   * carrier goes into the item. RECONCILE and the empty "source ready" ADD carry no pod spans.
   * A RECONCILE of mirror pods alone is not published (see {@link withoutMirrorReconciles}).
   */
  async #deliver(update: PodConfigUpdate): Promise<void> {
    const u = withoutMirrorReconciles(update);
    if (u === undefined) return;
    const { tracer, sources, clock } = this.#o;
    const spans: Span[] = [];
    const items: PodUpdateItem[] = u.pods.map((pod) => {
      if (u.op === 'RECONCILE') return { pod };
      const uid = pod.metadata.uid;
      const links: Link[] = [];
      const creation = this.#creation.get(uid);
      if (creation !== undefined) links.push({ context: creation });
      const span = tracer.startSpan(
        `config.${u.op.toLowerCase()}`,
        {
          kind: SpanKind.INTERNAL,
          root: true,
          links,
          attributes: {
            ...podSpanAttributes({ ...pod.metadata, uid }),
            'k8s.pod.update_type': u.op,
            'k8s.node.name': this.#o.nodeName,
            'splitlet.config.source': u.source,
            'splitlet.config.path': this.#origins.get(uid) ?? '',
          },
        },
        ROOT_CONTEXT,
      );
      spans.push(span);
      if (u.op === 'ADD') this.#creation.set(uid, span.spanContext());
      return { pod, trace: injectContext(trace.setSpan(ROOT_CONTEXT, span)) };
    });
    const msg: PodUpdate = {
      type: 'kubelet.config.PodUpdate.v1',
      op: u.op,
      source: u.source as PodSource,
      sources: [...sources],
      items,
      sentAt: new Date(clock.now()).toISOString(),
      origin: { publisher: this.#o.instanceId, seq: ++this.#seq },
    };
    const first = spans[0];
    const ctx = first === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, first);
    const msgID = `${this.#o.instanceId}-${this.#seq}`;
    try {
      await this.#publishWithRetry(msg, ctx, msgID);
      this.#o.logger.info('pod update published', { op: u.op, source: u.source, pods: items.map((i) => i.pod.metadata.name) });
    } catch (e) {
      for (const s of spans) {
        s.recordException(e instanceof Error ? e : String(e));
        s.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
      }
      throw e;
    } finally {
      for (const s of spans) s.end();
      if (u.op === 'REMOVE') for (const p of u.pods) this.#creation.delete(p.metadata.uid);
    }
  }

  async #publishWithRetry(msg: PodUpdate, ctx: Parameters<UpdatePublisher['publish']>[1], msgID: string): Promise<void> {
    const [first, max] = this.#o.retryBackoffMs ?? [200, 5000];
    let delay = first;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#o.publisher.publish(msg, ctx, msgID);
        return;
      } catch (e) {
        if (this.#o.signal.aborted) throw e;
        this.#o.logger.warn('publishing a pod update failed, retrying', { op: msg.op, source: msg.source, attempt, delayMs: delay, err: e });
        if (!(await sleep(delay, this.#o.signal, this.#o.clock))) throw e;
        delay = Math.min(max, delay * 2);
      }
    }
  }
}

/**
 * The update without the mirror pods of a RECONCILE. A RECONCILE says only the pod's status
 * changed, and a mirror pod's status is the one status-manager wrote to the API server for its
 * static pod, come back through the watch: sync-loop's HandlePodReconcile does nothing with it (the
 * static pod is synced on its own status, never on its mirror's). Publishing it cost the node a
 * message of the whole pod per status patch (SL_CONFIG, its ack, sync-loop's delivery and ack),
 * during the pod's start. Any other operation on a mirror pod (ADD, UPDATE, DELETE, REMOVE) is
 * published: sync-loop's handleMirrorPod acts on it. Undefined when no pod is left to publish.
 */
export function withoutMirrorReconciles(u: PodConfigUpdate): PodConfigUpdate | undefined {
  if (u.op !== 'RECONCILE' || !u.pods.some(isMirrorPod)) return u;
  const pods = u.pods.filter((p) => !isMirrorPod(p));
  return pods.length === 0 ? undefined : { ...u, pods };
}
