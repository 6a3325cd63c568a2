/**
 * The apiserver source: the pods bound to this node, listed and watched from a Kubernetes API server
 * (the embedded one of `splitlet up`, or any cluster's) through a kubeconfig, handed to PodConfig as
 * full SETs of source `api` (after a watch event with the pod that changed, so PodConfig merges only
 * that one) — the kubelet's name (`kubernetes.io/config.source: api`).
 *
 * Models pkg/kubelet/config/apiserver.go (NewSourceApiserver: a ListWatch of pods with
 * `spec.nodeName=<node>` in all namespaces, every change sent as a SET) on client-go's reflector:
 *
 * ```
 * kubeconfig (waited for) ─► LIST ?fieldSelector=spec.nodeName=N ─► SET (source seen)
 *   ─► WATCH from the list's resourceVersion, bookmarks on ─► ADDED/MODIFIED/DELETED ─► SET
 *                                                          ─► BOOKMARK: resourceVersion only
 *        ─► watch ended ─► WATCH again from the last resourceVersion
 *        ─► ERROR 410 Gone (resourceVersion too old) ─► LIST again
 *   ─► any error ─► backoff (1 s doubling to 30 s, reset after a successful list) ─► LIST again
 * ```
 *
 * PodStorage turns a SET into the kubelet's operations: a pod that got a `deletionTimestamp` is a
 * DELETE (killed with `deletionGracePeriodSeconds`), a pod no longer listed is a REMOVE. The source
 * counts as seen (sources-ready) only once its first list succeeded. Pods the API server sends that
 * are not valid pods are logged and left out.
 */
import { existsSync } from 'node:fs';
import { getJson, loadKubeEndpoint, watchJson, type KubeEndpoint } from '@splitlet/kube-client';
import { BoundPod } from '@splitlet/api';
import { sleep } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { ListingChanges, SourceListing, SourcedPod } from './listing.js';

/** Options of {@link ApiserverSource}. */
export interface ApiserverSourceOptions {
  readonly kubeconfig: string;
  readonly nodeName: string;
  readonly logger: Logger;
  readonly onListing: (listing: SourceListing) => Promise<void>;
  /** Each successful list or watch event (health). */
  readonly onProgress?: () => void;
  /** @default 1000 */
  readonly initialBackoffMs?: number;
  /** @default 30000 */
  readonly maxBackoffMs?: number;
}

/** A watch that ended: `gone` = the resourceVersion is too old (relist); else watch again. */
type WatchEnd = { gone: boolean; err?: unknown };

const podKey = (p: { metadata: { namespace: string; name: string } }): string => `${p.metadata.namespace}/${p.metadata.name}`;

const NO_CHANGES: ListingChanges = { upserted: [], removed: [] };

/** A list of the node's pods waits this long for the API server. */
const LIST_TIMEOUT_MS = 60_000;

/** The apiserver source; `run(signal)` until the signal aborts. */
export class ApiserverSource {
  readonly #o: ApiserverSourceOptions;
  readonly #pods = new Map<string, SourcedPod>();
  #resourceVersion = '';

  constructor(options: ApiserverSourceOptions) {
    this.#o = options;
  }

  /** Lists and watches until `signal` aborts; never throws (errors are logged and retried). */
  async run(signal: AbortSignal): Promise<void> {
    const initial = this.#o.initialBackoffMs ?? 1000;
    const max = this.#o.maxBackoffMs ?? 30_000;
    let backoff = initial;
    let waitedForFile = false;
    while (!signal.aborted) {
      try {
        if (!existsSync(this.#o.kubeconfig)) {
          if (!waitedForFile) this.#o.logger.info('waiting for the kubeconfig', { kubeconfig: this.#o.kubeconfig });
          waitedForFile = true;
          await sleep(Math.min(backoff, 1000), signal);
          continue;
        }
        const endpoint = await loadKubeEndpoint(this.#o.kubeconfig);
        await this.#list(endpoint);
        backoff = initial;
        for (;;) {
          if (signal.aborted) return;
          const end = await this.#watch(endpoint, signal);
          if (signal.aborted) return;
          if (end.gone) {
            this.#o.logger.info('watch resourceVersion too old (410 Gone), relisting', { resourceVersion: this.#resourceVersion });
            break;
          }
          if ('err' in end) throw end.err; // present only when the watch failed
        }
      } catch (e) {
        if (signal.aborted) return;
        this.#o.logger.warn('apiserver source: list/watch failed, retrying', { delayMs: backoff, err: e });
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, max);
      }
    }
  }

  async #list(endpoint: KubeEndpoint): Promise<void> {
    const path = `/api/v1/pods?fieldSelector=${encodeURIComponent(this.#selector())}`;
    const { status, body } = await getJson(endpoint, path, { timeoutMs: LIST_TIMEOUT_MS });
    if (status >= 300) throw new Error(`GET /api/v1/pods: HTTP ${status}: ${JSON.stringify(body ?? null).slice(0, 300)}`);
    if (body === undefined) throw new Error('GET /api/v1/pods: not JSON');
    const list = body as { items?: unknown[]; metadata?: { resourceVersion?: string } };
    this.#pods.clear();
    for (const r of list.items ?? []) this.#put(r);
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.#o.logger.info('listed pods from the API server', { pods: this.#pods.size, resourceVersion: this.#resourceVersion });
    await this.#send();
  }

  /** One watch, resolved when it ends. */
  async #watch(endpoint: KubeEndpoint, signal: AbortSignal): Promise<WatchEnd> {
    let chain: Promise<void> = Promise.resolve();
    let gone = false;
    let failure: unknown;
    // Ends this watch (410 Gone, an ERROR event) or follows the source's signal.
    const stop = new AbortController();
    const follow = (): void => stop.abort();
    signal.addEventListener('abort', follow, { once: true });
    // Events that arrive while the previous listing is still being handed on are applied together
    // and handed on as one listing (a burst of mirror pod changes is one PodUpdate, not one each).
    const queued: Array<{ type: string; obj: unknown }> = [];
    const applyQueued = async (): Promise<void> => {
      const batch = queued.splice(0);
      let changes: ListingChanges | undefined = NO_CHANGES;
      let changed = false;
      for (const { type, obj } of batch) {
        if (gone) break;
        let c: ListingChanges | undefined;
        const o = obj as { code?: number; metadata?: { resourceVersion?: string } };
        switch (type) {
          case 'ADDED':
          case 'MODIFIED':
            c = this.#put(obj);
            break;
          case 'DELETED':
            c = this.#delete(obj);
            break;
          case 'BOOKMARK':
            if (o.metadata?.resourceVersion) this.#resourceVersion = o.metadata.resourceVersion;
            continue;
          case 'ERROR':
            if (o.code === 410) gone = true;
            else failure ??= new Error(`watch error: ${JSON.stringify(obj)}`);
            stop.abort();
            continue;
          default:
            continue;
        }
        if (o.metadata?.resourceVersion) this.#resourceVersion = o.metadata.resourceVersion;
        changed = true;
        changes = changes === undefined || c === undefined ? undefined : combineChanges(changes, c);
      }
      if (changed) await this.#send(changes);
    };
    const onEvent = ({ type, object: obj }: { type: string; object: unknown }): void => {
      queued.push({ type, obj });
      if (queued.length === 1) chain = chain.then(applyQueued);
    };
    try {
      await watchJson(endpoint, '/api/v1/pods', { fieldSelector: this.#selector(), resourceVersion: this.#resourceVersion, allowWatchBookmarks: 'true' }, onEvent, stop.signal);
    } catch (e) {
      failure ??= e;
    } finally {
      signal.removeEventListener('abort', follow);
    }
    await chain;
    return { gone, ...(failure === undefined || signal.aborted ? {} : { err: failure }) };
  }

  #selector(): string {
    return `spec.nodeName=${this.#o.nodeName}`;
  }

  /**
   * Stores a listed or watched pod; returns how the listing changed, or `undefined` when the pod
   * took the place of another UID (its key's old pod), which only a full SET merges the same way.
   */
  #put(raw: unknown): ListingChanges | undefined {
    const p = BoundPod.safeParse(raw);
    if (!p.success) {
      const m = (raw as { metadata?: { namespace?: string; name?: string } }).metadata;
      this.#o.logger.warn('ignoring a pod from the API server that is not a valid pod', { pod: `${m?.namespace}/${m?.name}`, err: p.error.issues[0]?.message });
      return NO_CHANGES;
    }
    const key = podKey(p.data);
    const before = this.#pods.get(key);
    const sourced = { pod: p.data, origin: `api:${key}` };
    this.#pods.set(key, sourced);
    return before === undefined || before.pod.metadata.uid === p.data.metadata.uid ? { upserted: [sourced], removed: [] } : undefined;
  }

  /** Forgets a deleted pod; returns how the listing changed. */
  #delete(raw: unknown): ListingChanges {
    const p = BoundPod.safeParse(raw);
    if (!p.success) return NO_CHANGES;
    const key = podKey(p.data);
    const before = this.#pods.get(key);
    if (before === undefined) return NO_CHANGES;
    this.#pods.delete(key);
    return { upserted: [], removed: [before.pod.metadata.uid] };
  }

  /** Hands the listing to PodConfig: with `changes` since the previous one, or (none) as a full SET. */
  async #send(changes?: ListingChanges): Promise<void> {
    this.#o.onProgress?.();
    await this.#o.onListing({ source: 'api', pods: [...this.#pods.values()], errors: [], ...(changes !== undefined ? { changes } : {}) });
  }
}

/**
 * The changes of two listings in a row as the changes of one: the pods upserted by either (the later
 * version of a pod in the earlier one's place), the UIDs removed by either. Undefined (send the full
 * listing) when a pod is both upserted and removed — whether the listing before both had it is not
 * known here, so neither side of the contract of {@link ListingChanges} can be kept for it.
 */
export function combineChanges(first: ListingChanges, then: ListingChanges): ListingChanges | undefined {
  if (then.upserted.length === 0 && then.removed.length === 0) return first;
  if (first.upserted.length === 0 && first.removed.length === 0) return then;
  const upserted = new Map(first.upserted.map((p) => [p.pod.metadata.uid, p]));
  const removed = new Set(first.removed);
  for (const p of then.upserted) {
    if (removed.has(p.pod.metadata.uid)) return undefined;
    upserted.set(p.pod.metadata.uid, p);
  }
  for (const uid of then.removed) {
    if (upserted.has(uid)) return undefined;
    removed.add(uid);
  }
  return { upserted: [...upserted.values()], removed: [...removed] };
}
