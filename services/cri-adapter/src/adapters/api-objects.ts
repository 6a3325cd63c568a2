/**
 * Cluster mode: the configMaps and secrets the cri-adapter reads on the node — for env
 * `configMapKeyRef` / `secretKeyRef` / `envFrom`, and for image pull secrets — from the node's
 * watch-based caches (@splitlet/kube-client, one list+watch per object through the kubeconfig).
 * Values stay in this process: they go into the CRI container config or pull request only.
 */
import { isNotFound, secretBytes, type DataObject, type NodeObjects } from '@splitlet/kube-client';
import { CredentialError } from '../credentials/credential-error.js';
import type { EnvObjectSource } from '../kuberuntime/env.js';
import type { PullSecretSource } from '../ports.js';

function text(values: ReadonlyMap<string, Buffer>): Map<string, string> {
  return new Map([...values].map(([k, v]) => [k, v.toString('utf8')]));
}

/** Env references read from the caches (configMap `data` only, as the kubelet's env does). */
export function apiEnvObjectSource(objects: NodeObjects): EnvObjectSource {
  return {
    configMap: async (namespace, name) => new Map(Object.entries((await objects.configMaps.get(namespace, name)).data ?? {})),
    secret: async (namespace, name) => text(secretBytes(await objects.secrets.get(namespace, name))),
    isNotFound,
  };
}

/** Pull secrets read from the secret cache: NotFound → `PullSecretNotFound`, else `PullSecretUnavailable`. */
export function apiPullSecretSource(objects: NodeObjects): PullSecretSource {
  return {
    getSecret: async (namespace, name) => {
      let s: DataObject;
      try {
        s = await objects.secrets.get(namespace, name);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        throw new CredentialError(isNotFound(e) ? 'PullSecretNotFound' : 'PullSecretUnavailable', message, { cause: e });
      }
      return { namespace, name, type: s.type ?? 'Opaque', data: Object.fromEntries(text(secretBytes(s))) };
    },
  };
}
