/**
 * Mirror pods: the API server's copy of a static pod, through which its status is reported.
 *
 * Models pkg/kubelet/pod/mirror_client.go (CreateMirrorPod: a copy of the static pod with the
 * `kubernetes.io/config.mirror` annotation set to the static pod's hash, owned by the Node;
 * DeleteMirrorPod: grace 0 with a UID precondition) and the kubelet's syncPod, which deletes a mirror
 * pod whose hash no longer matches (or that is being deleted) and creates it again when missing.
 */
import type { BoundPod } from '@splitlet/api';
import { ConfigAnnotations } from '@splitlet/kube';
import { kubeError, type KubeRest } from './kube-rest.js';

/** The API copy of a mirror pod, as far as status reporting needs it. */
export interface ApiPod {
  metadata: { uid: string; resourceVersion?: string; deletionTimestamp?: string; annotations?: Record<string, string> };
  status?: Record<string, unknown>;
}

/** Creates, recreates and deletes mirror pods. */
export class MirrorPods {
  readonly #api: KubeRest;
  readonly #node: string;
  readonly #nodeUid: () => string | undefined;

  constructor(api: KubeRest, node: string, nodeUid: () => string | undefined) {
    this.#api = api;
    this.#node = node;
    this.#nodeUid = nodeUid;
  }

  /**
   * The static pod's mirror pod, created (or replaced when outdated) as needed. Undefined while the
   * Node is not registered yet, or when a pod of that name exists that is not a mirror pod.
   */
  async ensure(pod: BoundPod): Promise<ApiPod | undefined> {
    const hash = staticPodHash(pod);
    // Called when the syncer knows no current mirror pod: usually a static pod's first status, whose
    // mirror pod does not exist yet. It is created at once (the kubelet's syncPod creates it from its
    // pod manager's view, without a read); only a refused create (409: the name is taken) reads it.
    if (this.#nodeUid() !== undefined) {
      const created = await this.#create(pod, hash);
      if (created !== undefined) return created;
    }
    const path = podPath(pod.metadata.namespace, pod.metadata.name);
    const got = await this.#api.request('GET', path);
    if (got.status === 200) {
      const existing = got.body as ApiPod;
      const mirrorOf = existing.metadata.annotations?.[ConfigAnnotations.mirror];
      if (mirrorOf === undefined) return undefined;
      if (mirrorOf === hash && existing.metadata.deletionTimestamp === undefined) return existing;
      await this.delete(pod.metadata.namespace, pod.metadata.name, existing.metadata.uid);
    } else if (got.status !== 404) throw kubeError(`GET mirror pod ${pod.metadata.namespace}/${pod.metadata.name}`, got);
    return this.#create(pod, hash);
  }

  /** Deletes a mirror pod (grace 0, UID precondition); a missing one is fine. */
  async delete(namespace: string, name: string, uid: string): Promise<void> {
    const res = await this.#api.request('DELETE', podPath(namespace, name), { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid } });
    if (res.status !== 200 && res.status !== 202 && res.status !== 404 && res.status !== 409) throw kubeError(`Failed deleting a mirror pod ${namespace}/${name}`, res);
  }

  async #create(pod: BoundPod, hash: string): Promise<ApiPod | undefined> {
    const nodeUid = this.#nodeUid();
    if (nodeUid === undefined) return undefined;
    const { namespace, name } = pod.metadata;
    const body = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        ...(pod.metadata.labels === undefined ? {} : { labels: pod.metadata.labels }),
        annotations: { ...pod.metadata.annotations, [ConfigAnnotations.mirror]: hash },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.#node, uid: nodeUid, controller: true }],
      },
      spec: { ...pod.spec, nodeName: this.#node },
    };
    const res = await this.#api.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, body);
    if (res.status === 409) return undefined;
    if (res.status !== 201 && res.status !== 200) throw kubeError(`Failed creating a mirror pod for ${namespace}/${name}`, res);
    return res.body as ApiPod;
  }
}

/** The static pod's hash (its `kubernetes.io/config.hash` annotation, else its UID). */
export function staticPodHash(pod: BoundPod): string {
  return pod.metadata.annotations?.[ConfigAnnotations.hash] ?? pod.metadata.uid;
}

/** The API path of a pod. */
export function podPath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
}
