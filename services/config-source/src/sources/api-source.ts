/**
 * The api source: pods created, updated and deleted over the bus (`splitlet apply -f` and `delete`
 * against a remote node), kept in KV bucket `sl_api_pods` and handed to PodConfig as full SETs of
 * source `bus` (it was `api` before the apiserver source took the kubelet's name), so the merge (ADD / UPDATE / REMOVE / RECONCILE) is the same as for files and URLs.
 *
 * It stands in for the kubelet's apiserver source (pkg/kubelet/config/apiserver.go) on a node with
 * no API server: like the API server it gives a new pod a random UID and a creationTimestamp, keeps
 * the UID across updates of the same namespace/name, validates every pod (ValidatePodCreate) and
 * refuses spec changes the API server refuses (ValidatePodUpdate); pods keep their name (no
 * `-<node>` suffix) and are not static (no mirror pod). Deleting removes the object at once: the
 * pod is killed with its own grace period, as when a static manifest is removed (there is no API
 * object to keep until the pod has terminated).
 *
 * Concurrency: requests are applied one at a time (a promise chain), each one all-or-nothing for
 * validation; the KV writes of one request then the SET happen before the next request starts.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { KubeletError } from '@splitlet/api';
import type { ApiPodRecord, ApplyPodsReply, ApplyPodsRequest, BoundPod, DeletePodReply, DeletePodRequest, Pod } from '@splitlet/api';
import { applyPodApiDefaults, formatInvalidPod, validatePod } from '@splitlet/kube';
import type { Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { SourceListing } from './listing.js';

/** Where the api source keeps its pods (`sl_api_pods`, this node's keys). */
export interface ApiPodStore {
  list(): Promise<ApiPodRecord[]>;
  put(record: ApiPodRecord): Promise<void>;
  delete(namespace: string, name: string): Promise<void>;
}

/** Options of {@link ApiSource}. */
export interface ApiSourceOptions {
  readonly nodeName: string;
  readonly store: ApiPodStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Receives every full listing (awaited: the reply waits until PodConfig published the updates). */
  readonly onListing: (listing: SourceListing) => Promise<void>;
  /** @default crypto.randomUUID */
  readonly newUid?: () => string;
}

/** The error codes the api source replies with. */
export type ApiSourceErrorCode = 'Invalid' | 'NotFound' | 'Forbidden';

/** A request the api source refused; nothing was changed. */
export class ApiSourceError extends KubeletError {
  override readonly name = 'ApiSourceError';
  constructor(code: ApiSourceErrorCode, message: string) {
    super(code, message, { retryable: false });
  }
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The spec fields a pod update may change (ValidatePodUpdate). */
function mutableSpecBlanked(pod: Pod): unknown {
  const spec = structuredClone(pod.spec) as Pod['spec'] & Record<string, unknown>;
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) delete (c as { image?: string }).image;
  delete spec['activeDeadlineSeconds'];
  delete spec.tolerations;
  return spec;
}

/** A running api source. `start()` once (sends the stored pods: the source is seen), then serve requests. */
export class ApiSource {
  readonly #o: ApiSourceOptions;
  readonly #pods = new Map<string, ApiPodRecord>();
  #chain: Promise<unknown> = Promise.resolve();

  constructor(options: ApiSourceOptions) {
    this.#o = options;
  }

  /** Loads the stored pods and sends the first SET (also when empty: the source is then seen). */
  async start(): Promise<void> {
    for (const r of await this.#o.store.list()) this.#pods.set(keyOf(r.pod.metadata.namespace, r.pod.metadata.name), r);
    this.#o.logger.info('api source ready', { pods: this.#pods.size });
    await this.#send();
  }

  /** Creates or updates pods; every pod is validated before anything changes. */
  apply(req: ApplyPodsRequest): Promise<ApplyPodsReply> {
    return this.#serial(() => this.#apply(req));
  }

  /** Removes a pod; NotFound when this source has no such pod. */
  delete(req: DeletePodRequest): Promise<DeletePodReply> {
    return this.#serial(() => this.#delete(req));
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn);
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #apply(req: ApplyPodsRequest): Promise<ApplyPodsReply> {
    const now = new Date(this.#o.clock.now()).toISOString();
    const planned: { record: ApiPodRecord; outcome: ApplyPodsReply['results'][number]['outcome'] }[] = [];
    const seen = new Set<string>();
    for (const manifest of req.pods) {
      const name = manifest.metadata.name ?? '';
      const namespace = manifest.metadata.namespace || 'default';
      if (name === '') throw new ApiSourceError('Invalid', `error validating ${req.origin}: invalid pod: name is needed for the pod`);
      const key = keyOf(namespace, name);
      if (seen.has(key)) throw new ApiSourceError('Invalid', `error validating ${req.origin}: pod ${key} is given twice`);
      seen.add(key);
      const existing = this.#pods.get(key);
      const pod = this.#bind(manifest, namespace, existing, now);
      const errors = validatePod(pod);
      if (errors.length > 0) throw new ApiSourceError('Invalid', `The Pod ${JSON.stringify(name)} is invalid: ${formatInvalidPod(errors)}`);
      if (existing === undefined) {
        planned.push({ record: { type: 'kubelet.config.ApiPod.v1', pod, createdAt: now, updatedAt: now }, outcome: 'created' });
        continue;
      }
      if (isDeepStrictEqual(existing.pod, pod)) {
        planned.push({ record: existing, outcome: 'unchanged' });
        continue;
      }
      if (!isDeepStrictEqual(mutableSpecBlanked(existing.pod), mutableSpecBlanked(pod))) {
        throw new ApiSourceError(
          'Forbidden',
          `The Pod ${JSON.stringify(name)} is invalid: spec: Forbidden: pod updates may not change fields other than \`spec.containers[*].image\`,\`spec.initContainers[*].image\`,\`spec.activeDeadlineSeconds\`,\`spec.tolerations\` (only additions to existing tolerations); delete the pod and apply it again`,
        );
      }
      planned.push({ record: { ...existing, pod, updatedAt: now }, outcome: 'configured' });
    }
    const changed = planned.filter((p) => p.outcome !== 'unchanged');
    for (const p of changed) {
      await this.#o.store.put(p.record);
      this.#pods.set(keyOf(p.record.pod.metadata.namespace, p.record.pod.metadata.name), p.record);
    }
    if (changed.length > 0) {
      this.#o.logger.info('api source applied pods', {
        origin: req.origin,
        pods: changed.map((p) => `${p.record.pod.metadata.namespace}/${p.record.pod.metadata.name} ${p.outcome}`),
      });
      await this.#send();
    }
    return {
      type: 'kubelet.config.ApplyPodsResult.v1',
      results: planned.map((p) => ({ namespace: p.record.pod.metadata.namespace, name: p.record.pod.metadata.name, uid: p.record.pod.metadata.uid, outcome: p.outcome })),
    };
  }

  async #delete(req: DeletePodRequest): Promise<DeletePodReply> {
    const key = keyOf(req.namespace, req.name);
    const existing = this.#pods.get(key);
    if (existing === undefined) throw new ApiSourceError('NotFound', `pods ${JSON.stringify(req.name)} not found in namespace ${req.namespace} (the api source has no such pod)`);
    // The removal is published first and the record deleted after: a crash in between leaves the
    // record, so the restarted source lists the pod again and the client's retry (it got no reply)
    // deletes it. The other order would leave a pod running that no record or listing names.
    this.#pods.delete(key);
    await this.#send();
    try {
      await this.#o.store.delete(req.namespace, req.name);
    } catch (e) {
      // Still stored: keep it known, so a retry finds it (the listing no longer has it either way).
      this.#pods.set(key, existing);
      throw e;
    }
    this.#o.logger.info('api source deleted pod', { pod: key, uid: existing.pod.metadata.uid });
    return { type: 'kubelet.config.DeletePodResult.v1', uid: existing.pod.metadata.uid };
  }

  /** The pod as the API server would store it: defaults, UID, creationTimestamp, bound to this node. */
  #bind(manifest: Pod, namespace: string, existing: ApiPodRecord | undefined, now: string): BoundPod {
    const pod = applyPodApiDefaults(structuredClone(manifest)) as Pod & { apiVersion?: 'v1'; kind?: 'Pod' };
    pod.apiVersion = 'v1';
    pod.kind = 'Pod';
    pod.metadata.namespace = namespace;
    pod.metadata.uid = existing?.pod.metadata.uid ?? (this.#o.newUid ?? randomUUID)();
    (pod.metadata as Record<string, unknown>)['creationTimestamp'] = existing?.createdAt ?? now;
    pod.spec.nodeName = this.#o.nodeName;
    pod.status = { phase: 'Pending' };
    return pod as BoundPod;
  }

  async #send(): Promise<void> {
    const pods = [...this.#pods.values()].map((r) => ({ pod: r.pod, origin: `api:${r.pod.metadata.namespace}/${r.pod.metadata.name}` }));
    await this.#o.onListing({ source: 'bus', pods, errors: [] });
  }
}
