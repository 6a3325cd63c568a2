/**
 * The list+watch transport of an {@link ObjectCache} over a kubeconfig, with
 * @kubernetes/client-node: its KubeConfig supplies the server, CA, client certificate or token, its
 * Watch streams the watch. The kubeconfig is (re)loaded when a list starts, so a node process may
 * start before the file exists (the embedded API server writes it): the list fails naming the file,
 * and the reflector retries.
 *
 * @kubernetes/client-node is imported on the first list, not with this module: its index pulls in
 * every generated API (~58 MiB of RSS), and a node process reads a ConfigMap or Secret only when a
 * pod references one (volumes, image pull secrets).
 */
import { existsSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { inspect } from 'node:util';
import type * as ClientNode from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { DataObject, ObjectKind, ObjectListWatch, ObjectRef, WatchEvent } from './object-cache.js';

/** A list waits this long for the API server. */
const LIST_TIMEOUT_MS = 30_000;

/** The REST resource (plural) of a kind. */
const RESOURCE: Readonly<Record<ObjectKind, string>> = { configmap: 'configmaps', secret: 'secrets' };

function collectionPath(ref: ObjectRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/${RESOURCE[ref.kind]}`;
}

let clientNodeModule: Promise<typeof ClientNode> | undefined;
/** @kubernetes/client-node, imported once, on first use. */
function clientNode(): Promise<typeof ClientNode> {
  clientNodeModule ??= import('@kubernetes/client-node');
  return clientNodeModule;
}

/** The list+watch of single objects through the kubeconfig at `path`. */
export function kubeconfigListWatch(path: string): ObjectListWatch {
  let loaded: { kc: KubeConfig; server: URL } | undefined;
  const load = async (): Promise<{ kc: KubeConfig; server: URL }> => {
    if (loaded !== undefined) return loaded;
    if (!existsSync(path)) throw new Error(`kubeconfig ${path} does not exist (yet)`);
    const { KubeConfig } = await clientNode();
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const cluster = kc.getCurrentCluster();
    if (cluster === null) throw new Error(`kubeconfig ${path} has no current cluster`);
    loaded = { kc, server: new URL(cluster.server) };
    return loaded;
  };
  return {
    async list(ref, signal) {
      let cfg: { kc: KubeConfig; server: URL };
      try {
        cfg = await load();
      } catch (e) {
        loaded = undefined;
        throw e;
      }
      const url = new URL(`${collectionPath(ref)}?fieldSelector=${encodeURIComponent(`metadata.name=${ref.name}`)}`, cfg.server);
      const { status, body } = await getJson(cfg.kc, url, signal);
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
      const { kc } = await load();
      const { Watch } = await clientNode();
      let failure: unknown;
      let controller: AbortController | undefined;
      await new Promise<void>((resolve) => {
        let ended = false;
        const end = (err?: unknown): void => {
          if (err !== undefined && err !== null && failure === undefined) failure = err;
          if (ended) return;
          ended = true;
          signal.removeEventListener('abort', stop);
          resolve();
        };
        const stop = (): void => {
          controller?.abort();
          end();
        };
        signal.addEventListener('abort', stop, { once: true });
        new Watch(kc)
          .watch(
            collectionPath(ref),
            { fieldSelector: `metadata.name=${ref.name}`, resourceVersion, allowWatchBookmarks: true },
            (type: string, object: unknown) => {
              if (ended) return;
              try {
                onEvent({ type, object } satisfies WatchEvent);
              } catch (e) {
                controller?.abort();
                end(e);
              }
            },
            (err: unknown) => end(err),
          )
          .then((c) => {
            controller = c;
            if (ended) c.abort();
          })
          .catch((e: unknown) => end(e));
      });
      if (failure !== undefined && !signal.aborted) throw failure instanceof Error ? failure : new Error(typeof failure === 'string' ? failure : inspect(failure));
    },
  };
}

/** GET `url` as JSON with the kubeconfig's credentials. */
async function getJson(kc: KubeConfig, url: URL, signal: AbortSignal): Promise<{ status: number; body: unknown }> {
  const opts: { headers: Record<string, string> } & Record<string, unknown> = { headers: { Accept: 'application/json' } };
  await kc.applyToHTTPSOptions(opts);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { ...opts, method: 'GET', timeout: LIST_TIMEOUT_MS, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url.pathname}: timed out after ${LIST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}
