/**
 * The resources the embedded API server serves, with what each needs: kind, scope, short names,
 * the fields its field selector supports, and its strategy (defaulting, validation, what an update
 * may change).
 *
 * Models k8s.io/kubernetes/pkg/registry/core/* (rest storage and strategies) for the core/v1 and
 * coordination.k8s.io/v1 subset kubectl and client-node use.
 */
import type { KubeObject } from '../storage/object-store.js';
import type { StatusCause } from '../http/api-errors.js';
import { podFieldSet, preparePodForCreate, preparePodForUpdate, validatePodObject, validatePodStatusUpdate } from './pod-strategy.js';

/** What a resource's strategy may do. */
export interface ResourceStrategy {
  /** Defaulting and system fields on create (after metadata is filled). */
  prepareForCreate?(obj: KubeObject): void;
  /** The object an update stores, from the old one and the request's (`subresource` '' or 'status'). */
  prepareForUpdate?(next: KubeObject, old: KubeObject, subresource: string): KubeObject;
  /** Field errors; empty when valid. */
  validate?(obj: KubeObject, old?: KubeObject): StatusCause[];
  /** Field errors of a write through the `status` subresource (the stored object it would become, and the old one). */
  validateStatusUpdate?(obj: KubeObject, old: KubeObject): StatusCause[];
  /** The values its field selector can match. */
  fields?(obj: KubeObject): Record<string, string | undefined>;
}

/** One served resource. */
export interface ResourceDef {
  /** Plural, as in URLs: `pods`. */
  readonly name: string;
  readonly singular: string;
  readonly kind: string;
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly subresources: readonly string[];
  readonly fieldSelectors: ReadonlySet<string>;
  /** Graceful deletion (pods): DELETE sets deletionTimestamp; the kubelet finishes it. */
  readonly graceful: boolean;
  readonly strategy: ResourceStrategy;
}

const META_FIELDS = ['metadata.name', 'metadata.namespace'];
const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;

function def(
  d: Omit<ResourceDef, 'fieldSelectors' | 'graceful' | 'subresources' | 'strategy'> &
    Partial<Pick<ResourceDef, 'graceful' | 'subresources' | 'strategy'>> & { fields?: readonly string[] },
): ResourceDef {
  return {
    ...d,
    graceful: d.graceful ?? false,
    subresources: d.subresources ?? [],
    strategy: d.strategy ?? {},
    fieldSelectors: new Set([...META_FIELDS, ...(d.fields ?? [])]),
  };
}

function get(o: KubeObject, path: string): string | undefined {
  let cur: unknown = o;
  for (const p of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur === undefined || cur === null ? undefined : typeof cur === 'string' ? cur : JSON.stringify(cur);
}

/**
 * A secret's `stringData` merged into `data` (base64, overriding the same keys) and dropped: it is
 * write-only, as the API server's conversion of v1 secrets makes it.
 */
function mergeStringData(o: KubeObject): KubeObject {
  const sd = o['stringData'];
  if (sd !== null && typeof sd === 'object') {
    const data: Record<string, unknown> = { ...((o['data'] as Record<string, unknown> | null | undefined) ?? {}) };
    for (const [k, v] of Object.entries(sd)) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    o['data'] = data;
  }
  delete o['stringData'];
  return o;
}

/** The field-selector values of an object: metadata plus the resource's own fields. */
export function fieldValues(r: ResourceDef, o: KubeObject): Record<string, string | undefined> {
  const own = r.strategy.fields?.(o) ?? {};
  const out: Record<string, string | undefined> = { ...own };
  for (const f of r.fieldSelectors) if (!(f in out)) out[f] = get(o, f) ?? (f === 'metadata.namespace' ? '' : undefined);
  return out;
}

/** Every served resource. */
export const RESOURCES: readonly ResourceDef[] = [
  def({
    name: 'pods',
    singular: 'pod',
    kind: 'Pod',
    group: '',
    version: 'v1',
    namespaced: true,
    shortNames: ['po'],
    subresources: ['status', 'binding', 'log', 'eviction'],
    graceful: true,
    fields: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    strategy: {
      prepareForCreate: preparePodForCreate,
      prepareForUpdate: preparePodForUpdate,
      validate: validatePodObject,
      validateStatusUpdate: validatePodStatusUpdate,
      fields: podFieldSet,
    },
  }),
  def({ name: 'nodes', singular: 'node', kind: 'Node', group: '', version: 'v1', namespaced: false, shortNames: ['no'], subresources: ['status'], fields: ['spec.unschedulable'] }),
  def({
    name: 'namespaces',
    singular: 'namespace',
    kind: 'Namespace',
    group: '',
    version: 'v1',
    namespaced: false,
    shortNames: ['ns'],
    subresources: ['status'],
    fields: ['status.phase'],
    strategy: {
      prepareForCreate: (o) => {
        o['spec'] = { finalizers: ['kubernetes'], ...(o['spec'] ?? {}) };
        o['status'] = { phase: 'Active' };
      },
    },
  }),
  def({
    name: 'events',
    singular: 'event',
    kind: 'Event',
    group: '',
    version: 'v1',
    namespaced: true,
    shortNames: ['ev'],
    fields: [
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      'source',
      'type',
    ],
    strategy: { fields: (o) => ({ source: get(o, 'source.component') ?? get(o, 'reportingComponent') }) },
  }),
  def({ name: 'configmaps', singular: 'configmap', kind: 'ConfigMap', group: '', version: 'v1', namespaced: true, shortNames: ['cm'] }),
  def({
    name: 'secrets',
    singular: 'secret',
    kind: 'Secret',
    group: '',
    version: 'v1',
    namespaced: true,
    shortNames: [],
    fields: ['type'],
    strategy: {
      prepareForCreate: (o) => {
        if (typeof o['type'] !== 'string' || o['type'] === '') o['type'] = 'Opaque';
        mergeStringData(o);
      },
      prepareForUpdate: (next) => mergeStringData(next),
    },
  }),
  def({ name: 'serviceaccounts', singular: 'serviceaccount', kind: 'ServiceAccount', group: '', version: 'v1', namespaced: true, shortNames: ['sa'] }),
  def({ name: 'leases', singular: 'lease', kind: 'Lease', group: 'coordination.k8s.io', version: 'v1', namespaced: true, shortNames: [], fields: [] }),
];

/** The verbs every resource supports. */
export const RESOURCE_VERBS: readonly string[] = VERBS;

/** The resource named `name` (plural) in `group`/`version`, if served. */
export function findResource(group: string, version: string, name: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.name === name);
}

/** `apiVersion` of a resource's objects. */
export function apiVersionOf(r: ResourceDef): string {
  return r.group === '' ? r.version : `${r.group}/${r.version}`;
}
