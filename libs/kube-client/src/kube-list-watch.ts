/**
 * The list+watch transport of an {@link ObjectCache} over a kubeconfig: {@link loadKubeEndpoint}
 * supplies the server, CA, client certificate or token. The kubeconfig is (re)loaded when a list
 * starts, so a node process may start before the file exists (the embedded API server writes it):
 * the list fails naming the file, and the reflector retries.
 */
import { existsSync } from 'node:fs';
import { getJson, loadKubeEndpoint, watchJson, type KubeEndpoint } from './kube-endpoint.js';
import type { DataObject, ObjectKind, ObjectListWatch, ObjectRef, WatchEvent } from './object-cache.js';

/** A list waits this long for the API server. */
const LIST_TIMEOUT_MS = 30_000;

/** The REST resource (plural) of a kind. */
const RESOURCE: Readonly<Record<ObjectKind, string>> = { configmap: 'configmaps', secret: 'secrets' };

function collectionPath(ref: ObjectRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/${RESOURCE[ref.kind]}`;
}

/** The list+watch of single objects through the kubeconfig at `path`. */
export function kubeconfigListWatch(path: string): ObjectListWatch {
  let loaded: KubeEndpoint | undefined;
  const load = async (): Promise<KubeEndpoint> => {
    if (loaded !== undefined) return loaded;
    if (!existsSync(path)) throw new Error(`kubeconfig ${path} does not exist (yet)`);
    loaded = await loadKubeEndpoint(path);
    return loaded;
  };
  return {
    async list(ref, signal) {
      let endpoint: KubeEndpoint;
      try {
        endpoint = await load();
      } catch (e) {
        loaded = undefined;
        throw e;
      }
      const { status, body } = await getJson(endpoint, `${collectionPath(ref)}?fieldSelector=${encodeURIComponent(`metadata.name=${ref.name}`)}`, {
        signal,
        timeoutMs: LIST_TIMEOUT_MS,
      });
      if (status !== 200) {
        // The kubeconfig may have been rewritten (a restarted embedded API server): load it again next time.
        if (status === 401) loaded = undefined;
        const message = typeof (body as { message?: unknown } | undefined)?.message === 'string' ? (body as { message: string }).message : `HTTP ${status}`;
        throw new Error(`list ${RESOURCE[ref.kind]} ${ref.namespace}/${ref.name}: ${status} ${message}`);
      }
      const list = body as { items?: unknown[]; metadata?: { resourceVersion?: string } };
      const object = (list.items ?? []).find((o): o is DataObject => (o as DataObject | null)?.metadata?.name === ref.name);
      return { object, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    async watch(ref, resourceVersion, onEvent, signal) {
      const endpoint = await load();
      await watchJson(
        endpoint,
        collectionPath(ref),
        { fieldSelector: `metadata.name=${ref.name}`, resourceVersion, allowWatchBookmarks: 'true' },
        (e) => onEvent({ type: e.type, object: e.object } satisfies WatchEvent),
        signal,
      );
    },
  };
}
