/**
 * Container garbage collection, the node side: at start and then one period after each run, ask
 * the runtime (cri-adapter) to remove dead containers, dead sandboxes and gone pods' log
 * directories, telling it which pods' content must stay; log the outcome as the kubelet does and
 * record a ContainerGCFailed event on the node when a run failed.
 *
 * Models pkg/kubelet/kubelet.go (StartGarbageCollection's container GC loop),
 * pkg/kubelet/container/container_gc.go (realContainerGC: the policy, sourcesReady) and
 * pkg/kubelet/pod_workers.go (ShouldPodContentBeRemoved, as the podStateProvider).
 *
 * ```
 *  start ─► run ─► wait period ─► run ─► …          (wait.Until, ContainerGCPeriod 1 m)
 *  run:  state (under the sync loop's lock) ─► request garbageCollect ─┬─ ok: "succeeded" (debug; info after a failure)
 *                                                                      └─ failed: "Container garbage collection failed" + ContainerGCFailed
 * ```
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace, type Tracer } from '@opentelemetry/api';
import type { ContainerGCPolicy, DesiredPod, KillRequest, KubeEvent, WorkerRecord } from '@splitlet/api';
import { errorMessage, hasErrorCode } from '@splitlet/api';
import { sleep, type Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { EventRecorder, RuntimeGarbageCollector } from '../ports.js';

/** The kubelet's default policy: MinimumGCAge 0, MaxPerPodContainerCount 1, MaxContainerCount -1. */
export const DEFAULT_CONTAINER_GC_POLICY: ContainerGCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

/** What the pod workers know, for {@link podContentToKeep}. */
export interface PodContentInput {
  readonly desired: Iterable<DesiredPod>;
  readonly workers: Iterable<WorkerRecord>;
  readonly kills: Iterable<KillRequest>;
}

/**
 * The pods whose content (dead containers, sandboxes, log directories) must stay: every pod the pod
 * workers know — desired and admitted, with a worker record, or with a pending kill — except one
 * that was evicted, or deleted and has terminated. A rejected pod never reaches the workers.
 *
 * Models podWorkers.ShouldPodContentBeRemoved inverted: `IsEvicted() || (IsDeleted() &&
 * IsTerminated())` for a known pod; true for a pod the workers do not know once they synced, so
 * every pod outside this set may lose its content.
 */
export function podContentToKeep(input: PodContentInput): string[] {
  const known = new Set<string>();
  for (const d of input.desired) if (d.rejected === undefined) known.add(d.pod.metadata.uid);
  for (const k of input.kills) known.add(k.uid);
  const workers = new Map<string, WorkerRecord>();
  for (const w of input.workers) {
    workers.set(w.uid, w);
    known.add(w.uid);
  }
  const keep: string[] = [];
  for (const uid of known) {
    const w = workers.get(uid);
    const removable = w !== undefined && (w.evicted === true || (w.deleted === true && w.state === 'terminated'));
    if (!removable) keep.push(uid);
  }
  return keep.sort();
}

/** The pod state a run reads (sourcesReady plus the pods to keep). */
export interface PodStateForGC {
  readonly allSourcesReady: boolean;
  readonly keep: readonly string[];
}

/** Dependencies of {@link ContainerGarbageCollector}. */
export interface ContainerGarbageCollectorOptions {
  readonly node: string;
  readonly runtime: RuntimeGarbageCollector;
  /** Read at each run (SyncLoop.podStateForGC). */
  readonly podState: () => Promise<PodStateForGC>;
  readonly events: EventRecorder;
  /** @default DEFAULT_CONTAINER_GC_POLICY */
  readonly policy?: ContainerGCPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

/**
 * The container GC loop of one node. Run it in the sync-loop leader only (it reads the leader's
 * view of the pod workers).
 */
export class ContainerGarbageCollector {
  readonly #o: ContainerGarbageCollectorOptions;
  #loggedFailure = false;
  #succeededOnce = false;

  constructor(options: ContainerGarbageCollectorOptions) {
    this.#o = options;
  }

  /**
   * Runs at once, then `periodMs` after each run ended, until `signal` aborts (wait.Until with
   * ContainerGCPeriod). An abort does not wait for the run in flight: cri-adapter finishes it alone.
   */
  async run(periodMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    do {
      await Promise.race([this.garbageCollect(signal), aborted]);
      if (signal.aborted) return;
    } while (await sleep(periodMs, signal, this.#o.clock));
  }

  /**
   * One run in its own trace (span `garbageCollect`). Never throws; returns whether it succeeded.
   * A failure logs "Container garbage collection failed" and records a Warning ContainerGCFailed
   * event on the node with the error; a success logs "Container garbage collection succeeded" at
   * debug, or at info right after a failure. Not reported as failures: a run that failed after
   * `signal` aborted, and no responder before any run succeeded (cri-adapter still starting).
   */
  async garbageCollect(signal?: AbortSignal): Promise<boolean> {
    const { logger, tracer, runtime } = this.#o;
    const policy = this.#o.policy ?? DEFAULT_CONTAINER_GC_POLICY;
    const span = tracer.startSpan('garbageCollect', { kind: SpanKind.INTERNAL }, ROOT_CONTEXT);
    try {
      const reply = await context.with(trace.setSpan(ROOT_CONTEXT, span), async () => {
        const state = await this.#o.podState();
        span.setAttributes({ 'splitlet.gc.all_sources_ready': state.allSourcesReady, 'splitlet.gc.keep_pods': state.keep.length });
        return runtime.garbageCollect({ type: 'kubelet.runtime.GarbageCollectRequest.v1', policy, allSourcesReady: state.allSourcesReady, keep: [...state.keep] });
      });
      span.setAttributes({
        'splitlet.gc.removed_containers': reply.removedContainers,
        'splitlet.gc.removed_sandboxes': reply.removedSandboxes,
        'splitlet.gc.removed_log_dirs': reply.removedLogDirs,
      });
      const removed = { containers: reply.removedContainers, sandboxes: reply.removedSandboxes, logDirs: reply.removedLogDirs };
      if (reply.error !== undefined) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: reply.error });
        await this.#failed(reply.error, removed);
        return false;
      }
      const wasFailing = this.#loggedFailure;
      this.#loggedFailure = false;
      this.#succeededOnce = true;
      if (wasFailing) logger.info('Container garbage collection succeeded', removed);
      else logger.debug('Container garbage collection succeeded', removed);
      return true;
    } catch (e) {
      span.recordException(e instanceof Error ? e : errorMessage(e));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(e) });
      if (signal?.aborted === true) {
        // Stopping (or no longer leading): the bus may be closing under the request.
        logger.debug('container garbage collection abandoned: stopping', { err: errorMessage(e) });
        return false;
      }
      if (!this.#succeededOnce && hasErrorCode(e, 'NoResponders')) {
        // The processes of a node start together: cri-adapter may not serve yet (the kubelet's
        // runtime is in-process, so it has no such moment). Not a failure until a run succeeded.
        logger.info('Container garbage collection skipped: the runtime does not serve it yet', { err: errorMessage(e) });
        return false;
      }
      await this.#failed(errorMessage(e));
      return false;
    } finally {
      span.end();
    }
  }

  async #failed(message: string, removed?: Record<string, number>): Promise<void> {
    const { node, clock, logger } = this.#o;
    logger.error('Container garbage collection failed', { err: message, ...(removed ?? {}) });
    this.#loggedFailure = true;
    const event: KubeEvent = {
      type: 'kubelet.events.Event.v1',
      eventType: 'Warning',
      reason: 'ContainerGCFailed',
      message,
      involvedObject: { kind: 'Node', name: node, namespace: '', uid: node },
      source: { component: 'kubelet', host: node },
      timestamp: new Date(clock.now()).toISOString(),
    };
    try {
      await this.#o.events.record(event);
    } catch (e) {
      logger.warn('could not record the ContainerGCFailed event', { err: errorMessage(e) });
    }
  }
}
