/**
 * The API server's copy of the node's pods, kept by a list+watch (fieldSelector
 * `spec.nodeName=<node>`), as the kubelet's pod manager has it from its informer: the periodic
 * status reconcile compares against it instead of GETting every pod (status_manager.go
 * needsReconcile reads podManager's pod, not the API server).
 *
 * Models client-go's reflector loosely: list, then watch from the list's resourceVersion; a watch the
 * server ends is resumed from the last resourceVersion seen (bookmarks included), an ERROR event
 * (410 Expired) or a failure relists after a pause. While it is not synced (before the first list,
 * after a failure until the relist) {@link NodePods.get} knows no pod, so every pod is reconciled
 * against the API server as if there were no copy.
 */
import { errorMessage } from '@splitlet/api';
import { sleep } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { KubeRest, KubeWatch, KubeWatchEvent } from './kube-rest.js';
import { kubeError } from './kube-rest.js';
import type { ApiPod } from './mirror-pods.js';

/** The API copy of a pod, by UID. */
export interface ApiPodCopy {
  /** The pod as last listed or watched; undefined when not known (or the copy is not synced). */
  get(uid: string): ApiPod | undefined;
}

/** How long to wait before relisting after a failed list or watch. */
const RELIST_PAUSE_MS = 1000;

interface WatchedPod {
  metadata?: { uid?: unknown; resourceVersion?: unknown; deletionTimestamp?: unknown; annotations?: unknown };
  status?: unknown;
}

/** The fields of a pod status reporting reads (the rest of the object is not kept). */
function slim(o: unknown): ApiPod | undefined {
  const m = (o as WatchedPod | null)?.metadata;
  if (typeof m?.uid !== 'string') return undefined;
  const pod: ApiPod = { metadata: { uid: m.uid } };
  if (typeof m.resourceVersion === 'string') pod.metadata.resourceVersion = m.resourceVersion;
  if (typeof m.deletionTimestamp === 'string') pod.metadata.deletionTimestamp = m.deletionTimestamp;
  if (typeof m.annotations === 'object' && m.annotations !== null) pod.metadata.annotations = m.annotations as Record<string, string>;
  const status = (o as WatchedPod).status;
  if (typeof status === 'object' && status !== null) pod.status = status as Record<string, unknown>;
  return pod;
}

/** The message of a watch ERROR event's Status. */
const errorText = (o: unknown): string => {
  const m = (o as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m : 'ERROR event';
};

const rvOf = (o: unknown): string | undefined => {
  const rv = (o as WatchedPod | null)?.metadata?.resourceVersion;
  return typeof rv === 'string' ? rv : undefined;
};

/** The node's pods as the API server has them, while {@link NodePods.run} runs. */
export class NodePods implements ApiPodCopy {
  readonly #api: KubeRest & KubeWatch;
  readonly #node: string;
  readonly #logger: Logger;
  readonly #pods = new Map<string, ApiPod>();
  #synced = false;

  constructor(api: KubeRest & KubeWatch, node: string, logger: Logger) {
    this.#api = api;
    this.#node = node;
    this.#logger = logger;
  }

  /** True once listed, until a failure (then false until the relist). */
  get synced(): boolean {
    return this.#synced;
  }

  get(uid: string): ApiPod | undefined {
    return this.#synced ? this.#pods.get(uid) : undefined;
  }

  /** Lists and watches until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const selector = `fieldSelector=${encodeURIComponent(`spec.nodeName=${this.#node}`)}`;
    while (!signal.aborted) {
      try {
        let rv = await this.#list(`/api/v1/pods?${selector}`);
        for (;;) {
          const path = `/api/v1/pods?${selector}&watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`;
          let expired: string | undefined;
          await this.#api.watch(
            path,
            (e) => {
              if (expired !== undefined) return;
              const next = this.#apply(e);
              if (next === 'expired') expired = errorText(e.object);
              else if (next.rv !== undefined) rv = next.rv;
            },
            signal,
          );
          if (signal.aborted) return;
          if (expired !== undefined) throw new Error(`watch of the node's pods ended: ${expired}`);
        }
      } catch (e) {
        if (signal.aborted) return;
        this.#synced = false;
        this.#logger.warn('watch of the node pods failed; relisting', { node: this.#node, err: errorMessage(e) });
        if (!(await sleep(RELIST_PAUSE_MS, signal))) return;
      }
    }
  }

  /** Replaces the copy with a list; returns its resourceVersion. */
  async #list(path: string): Promise<string> {
    const res = await this.#api.request('GET', path);
    if (res.status !== 200) throw kubeError(`list pods of node ${this.#node}`, res);
    const list = res.body as { items?: unknown[]; metadata?: { resourceVersion?: string } };
    this.#pods.clear();
    for (const item of list.items ?? []) {
      const pod = slim(item);
      if (pod !== undefined) this.#pods.set(pod.metadata.uid, pod);
    }
    this.#synced = true;
    return list.metadata?.resourceVersion ?? '';
  }

  /** Applies one watch event; returns the resourceVersion to resume from, or `expired` for an ERROR event. */
  #apply(e: KubeWatchEvent): { rv: string | undefined } | 'expired' {
    if (e.type === 'ERROR') return 'expired';
    return { rv: this.#store(e) };
  }

  #store(e: KubeWatchEvent): string | undefined {
    if (e.type === 'BOOKMARK') return rvOf(e.object);
    const pod = slim(e.object);
    if (pod === undefined) return rvOf(e.object);
    if (e.type === 'DELETED') this.#pods.delete(pod.metadata.uid);
    else this.#pods.set(pod.metadata.uid, pod);
    return rvOf(e.object);
  }
}
