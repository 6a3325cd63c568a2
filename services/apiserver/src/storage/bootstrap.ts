/**
 * The objects a fresh API server has: the four system namespaces, and in each the `default`
 * ServiceAccount.
 *
 * Models the namespace and service-account controllers' bootstrap (pkg/controlplane
 * systemnamespaces, serviceaccounts controller ensuring `default`).
 */
import { findResource, type ResourceDef } from '../registry/resources.js';
import type { RestStorage } from '../registry/rest-storage.js';
import { isApiError } from '../http/api-errors.js';

/** The namespaces that always exist. */
export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'] as const;

/** Creates whatever of the bootstrap objects is missing. Idempotent. */
export async function ensureBootstrapObjects(storage: RestStorage): Promise<void> {
  const ns = findResource('', 'v1', 'namespaces') as ResourceDef;
  const sa = findResource('', 'v1', 'serviceaccounts') as ResourceDef;
  const ignoreExists = (e: unknown): void => {
    if (!(isApiError(e) && e.reason === 'AlreadyExists')) throw e;
  };
  for (const name of SYSTEM_NAMESPACES) {
    await storage.create(ns, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(ignoreExists);
    await storage.create(sa, name, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } }).catch(ignoreExists);
  }
}
