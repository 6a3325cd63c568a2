/**
 * What the sync loop's handlers share: its dependencies, the pod manager, the pods removed from
 * config while their workers may still terminate them, the seen sources, and the writes every
 * handled pod ends in (desired record, kill request, poke), each failure a retryable
 * `SyncLoopWriteFailed`.
 *
 * Models the Kubelet fields pkg/kubelet/kubelet.go's handlers use (podManager, podWorkers,
 * sourcesReady) and its handleMirrorPod.
 */
import type { Tracer } from '@opentelemetry/api';
import type { BoundPod, DesiredPod, KillRequest } from '@splitlet/api';
import { KubeletError, errorMessage } from '@splitlet/api';
import type { AdmissionNode } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { AppliedUpdatesStore, ClusterViews, DesiredStore, EventRecorder, KillStore, SourcesStore, StatusSink, VolumeCleaner, WorkPoker } from '../ports.js';
import { shortenedKill } from './kill-grace.js';
import type { SyncLoopMetrics } from './metrics.js';
import type { PodManager } from './pod-manager.js';
import type { SourcesReady } from './sources-ready.js';

/** Dependencies of the sync loop. */
export interface SyncLoopOptions {
  readonly node: string;
  /** The node as admission sees it now (its capacity is published by the node-local side). */
  readonly admissionNode: () => AdmissionNode;
  readonly desired: DesiredStore;
  readonly kills: KillStore;
  readonly work: WorkPoker;
  readonly status: StatusSink;
  readonly events: EventRecorder;
  readonly volumes: VolumeCleaner;
  readonly sources: SourcesStore;
  readonly applied: AppliedUpdatesStore;
  readonly views: ClusterViews;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics: SyncLoopMetrics;
  /** See `HousekeepingInput.restartAfterMs`. @default 10000 */
  readonly restartAfterMs?: number;
}

/** A poke's kind. */
export type PokeKind = 'create' | 'update' | 'sync' | 'kill';

/** The state and writes the handlers share; owned by the sync loop, used under its lock. */
export class SyncLoopContext {
  readonly o: SyncLoopOptions;
  readonly podManager: PodManager;
  /** Pods removed from config, remembered while their worker may still be terminating them. */
  readonly removed = new Map<string, BoundPod>();
  readonly #sourcesReady: () => SourcesReady;

  constructor(options: SyncLoopOptions, podManager: PodManager, sourcesReady: () => SourcesReady) {
    this.o = options;
    this.podManager = podManager;
    this.#sourcesReady = sourcesReady;
  }

  /** The seen-sources state (replaced when the loop starts). */
  get sourcesReady(): SourcesReady {
    return this.#sourcesReady();
  }

  async putDesired(desired: DesiredPod): Promise<void> {
    try {
      await this.o.desired.put(desired);
    } catch (e) {
      throw writeFailed(`could not write the desired pod ${podRef(desired.pod)}`, e);
    }
  }

  async poke(uid: string, kind: PokeKind): Promise<void> {
    try {
      await this.o.work.poke(uid, kind);
    } catch (e) {
      throw writeFailed(`could not poke pod ${uid} (${kind})`, e);
    }
  }

  /**
   * Creates the kill request; when one is pending, only shortens its grace (compare-and-swap).
   * Returns what happened.
   */
  async requestKill(request: KillRequest): Promise<'created' | 'pending' | 'shortened'> {
    const { kills } = this.o;
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        if (await kills.create(request)) return 'created';
        const pending = await kills.get(request.uid);
        if (pending === undefined) continue; // carried out and removed meanwhile: create again
        const shorter = shortenedKill(pending.value, request);
        if (shorter === undefined) return 'pending';
        if (await kills.update(shorter, pending.revision)) {
          this.o.logger.info('shortened the grace period of a pending kill', { podUID: request.uid, gracePeriodSeconds: shorter.gracePeriodOverride });
          return 'shortened';
        }
      }
    } catch (e) {
      throw writeFailed(`could not request the kill of pod ${request.uid}`, e);
    }
    throw new KubeletError('SyncLoopWriteFailed', `the kill request of pod ${request.uid} kept changing; retrying`, { retryable: true });
  }

  /** handleMirrorPod: a mirror pod's change is an update of its static pod. */
  async handleMirrorPod(mirror: BoundPod): Promise<void> {
    const staticPod = this.podManager.staticPodByFullName(mirror.metadata.name, mirror.metadata.namespace);
    if (staticPod === undefined || staticPod.rejected !== undefined) return;
    await this.poke(staticPod.pod.metadata.uid, 'update');
  }
}

/** A write failed; the update is retried (nak with backoff). */
export function writeFailed(what: string, e: unknown): KubeletError {
  return new KubeletError('SyncLoopWriteFailed', `${what}: ${errorMessage(e)}`, { retryable: true, cause: e });
}

/** `namespace/name`, as the kubelet's klog.KObj prints a pod. */
export function podRef(pod: BoundPod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** Settles every promise, then rethrows the first failure. */
export async function allOrFirstError(ps: readonly Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(ps);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
