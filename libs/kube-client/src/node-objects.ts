/**
 * The configMaps and secrets a node reads, one {@link ObjectCache} per kind over one kubeconfig,
 * and the decoding of their data (the API's base64 undone).
 */
import { kubeconfigListWatch } from './kube-list-watch.js';
import { ObjectCache, type CacheLogger, type DataObject, type ObjectCacheOptions, type ObjectKind, type ObjectListWatch, type ObjectRef } from './object-cache.js';

/** Both caches. */
export interface NodeObjects {
  readonly configMaps: ObjectCache;
  readonly secrets: ObjectCache;
  /** The cache of `kind`. */
  cache(kind: ObjectKind): ObjectCache;
  /** Calls `listener` after any watched object changed. */
  onChange(listener: (ref: ObjectRef) => void): void;
  close(): Promise<void>;
}

/** Options of {@link openNodeObjects}. */
export type NodeObjectsOptions = Omit<ObjectCacheOptions, 'kind' | 'listWatch'> & {
  /** The transport. @default the kubeconfig's API server */
  readonly listWatch?: ObjectListWatch;
};

/** The configMap and secret caches of a node, reading through the kubeconfig at `kubeconfig`. */
export function openNodeObjects(kubeconfig: string, options: NodeObjectsOptions & { readonly logger: CacheLogger }): NodeObjects {
  const listWatch = options.listWatch ?? kubeconfigListWatch(kubeconfig);
  const configMaps = new ObjectCache({ ...options, kind: 'configmap', listWatch });
  const secrets = new ObjectCache({ ...options, kind: 'secret', listWatch });
  return {
    configMaps,
    secrets,
    cache: (kind) => (kind === 'configmap' ? configMaps : secrets),
    onChange: (listener) => {
      configMaps.onChange(listener);
      secrets.onChange(listener);
    },
    close: async () => {
      await Promise.all([configMaps.close(), secrets.close()]);
    },
  };
}

/** A configMap's values by key: `data` as UTF-8, `binaryData` decoded from base64. */
export function configMapBytes(cm: DataObject): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) out.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out.set(k, Buffer.from(v, 'base64'));
  return out;
}

/** A secret's values by key, decoded from base64. */
export function secretBytes(secret: DataObject): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(secret.data ?? {})) out.set(k, Buffer.from(v, 'base64'));
  return out;
}
