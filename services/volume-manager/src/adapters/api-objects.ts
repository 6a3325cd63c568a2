/**
 * The {@link ApiObjectReader} of cluster mode: the node's configMap and secret caches
 * (@splitlet/kube-client, one list+watch per object through the kubeconfig).
 */
import { configMapBytes, isNotFound, secretBytes, type NodeObjects } from '@splitlet/kube-client';
import type { ApiObjectReader } from '../ports.js';

/** Reads volumes' objects from `objects`. */
export function apiObjectReader(objects: NodeObjects): ApiObjectReader {
  return {
    read: async (ref) => {
      const o = await objects.cache(ref.kind).get(ref.namespace, ref.name);
      return ref.kind === 'configmap' ? configMapBytes(o) : secretBytes(o);
    },
    isNotFound,
    hold: (holder, refs) => {
      objects.configMaps.hold(holder, refs);
      objects.secrets.hold(holder, refs);
    },
    holders: (ref) => objects.cache(ref.kind).holders(ref.namespace, ref.name),
    onChange: (listener) => objects.onChange(listener),
  };
}
