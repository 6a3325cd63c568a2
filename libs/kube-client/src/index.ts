export { ObjectCache, ObjectCacheError, isNotFound } from './object-cache.js';
export type { CacheLogger, DataObject, ObjectCacheErrorCode, ObjectCacheOptions, ObjectKind, ObjectListWatch, ObjectRef, WatchEvent } from './object-cache.js';
export { kubeconfigListWatch } from './kube-list-watch.js';
export { configMapBytes, openNodeObjects, secretBytes } from './node-objects.js';
export type { NodeObjects, NodeObjectsOptions } from './node-objects.js';
export { apiUrl, getJson, loadKubeEndpoint, watchJson } from './kube-endpoint.js';
export type { GetJsonOptions, KubeEndpoint, KubeWatchEvent } from './kube-endpoint.js';
