/**
 * Discovery and OpenAPI: what kubectl and client-node read before they make a request. The OpenAPI
 * v3 documents declare each resource's operations with their group-version-kind and the
 * `fieldValidation` parameter, so kubectl validates on the server (`?fieldValidation=Strict`) instead
 * of needing full schemas.
 *
 * Models k8s.io/apiserver/pkg/endpoints/discovery (APIVersions, APIGroupList, APIResourceList) and
 * the shape of /openapi/v3 (spec3 documents with `x-kubernetes-group-version-kind`).
 */
import { RESOURCES, RESOURCE_VERBS, apiVersionOf, type ResourceDef } from '../registry/resources.js';

/** The version this server reports (the kube API it serves). */
export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-splitlet',
  gitCommit: '',
  gitTreeState: 'clean',
  buildDate: '2026-12-01T00:00:00Z',
  goVersion: 'n/a (splitlet, TypeScript)',
  compiler: 'tsc',
  platform: 'linux/amd64',
} as const;

/** `/api`. */
export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function groups(): Map<string, ResourceDef[]> {
  const m = new Map<string, ResourceDef[]>();
  for (const r of RESOURCES) if (r.group !== '') m.set(r.group, [...(m.get(r.group) ?? []), r]);
  return m;
}

function groupEntry(name: string, version: string): Record<string, unknown> {
  const gv = { groupVersion: `${name}/${version}`, version };
  return { name, versions: [gv], preferredVersion: gv };
}

/** `/apis`. */
export function apiGroupList(): Record<string, unknown> {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups()].map(([name, rs]) => groupEntry(name, rs[0]?.version ?? 'v1')) };
}

/** `/apis/<group>`, or undefined when the group is not served. */
export function apiGroup(name: string): Record<string, unknown> | undefined {
  const rs = groups().get(name);
  return rs === undefined ? undefined : { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(name, rs[0]?.version ?? 'v1') };
}

/** `/api/v1` or `/apis/<group>/<version>`, or undefined when not served. */
export function apiResourceList(group: string, version: string): Record<string, unknown> | undefined {
  const rs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (rs.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const r of rs) {
    resources.push({ name: r.name, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: RESOURCE_VERBS, shortNames: r.shortNames, storageVersionHash: '' });
    for (const sub of r.subresources) {
      const verbs = sub === 'status' ? ['get', 'patch', 'update'] : sub === 'log' ? ['get'] : ['create'];
      const kind = sub === 'binding' ? 'Binding' : sub === 'eviction' ? 'Eviction' : r.kind;
      resources.push({ name: `${r.name}/${sub}`, singularName: '', namespaced: r.namespaced, kind, verbs });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group === '' ? version : `${group}/${version}`, resources };
}

const FIELD_VALIDATION = {
  name: 'fieldValidation',
  in: 'query',
  description: 'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.',
  schema: { type: 'string', uniqueItems: true },
};

function gvk(r: ResourceDef): Record<string, string> {
  return { group: r.group, version: r.version, kind: r.kind };
}

/** The OpenAPI v3 paths of one group-version (`api/v1`, `apis/coordination.k8s.io/v1`). */
function openApiPaths(group: string, version: string): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const r of RESOURCES.filter((x) => x.group === group && x.version === version)) {
    const base = `/${group === '' ? 'api' : `apis/${group}`}/${version}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.name}`;
    const op = (id: string): Record<string, unknown> => ({
      operationId: `${id}${r.kind}`,
      'x-kubernetes-group-version-kind': gvk(r),
      parameters: [FIELD_VALIDATION],
      responses: { '200': { description: 'OK' } },
    });
    paths[base] = { post: op('create'), get: { ...op('list'), parameters: [] } };
    paths[`${base}/{name}`] = { get: { ...op('read'), parameters: [] }, put: op('replace'), patch: op('patch'), delete: { ...op('delete'), parameters: [] } };
  }
  return paths;
}

/** `/openapi/v3`: one entry per served group-version. */
export function openApiRoot(): Record<string, unknown> {
  const paths: Record<string, unknown> = { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=splitlet1' } };
  for (const [name, rs] of groups()) {
    const v = rs[0]?.version ?? 'v1';
    paths[`apis/${name}/${v}`] = { serverRelativeURL: `/openapi/v3/apis/${name}/${v}?hash=splitlet1` };
  }
  return { paths };
}

/** `/openapi/v3/<api/v1|apis/g/v>`, or undefined. */
export function openApiDocument(gvPath: string): Record<string, unknown> | undefined {
  const m = /^(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(gvPath);
  if (m === null) return undefined;
  const group = m[2] ?? '';
  const version = m[1] ?? m[3] ?? '';
  if (!RESOURCES.some((r) => r.group === group && r.version === version)) return undefined;
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes (splitlet embedded API server)', version: SERVER_VERSION.gitVersion },
    paths: openApiPaths(group, version),
    components: { schemas: {} },
  };
}

/** For messages: `pods` → `Pod` kind apiVersion. */
export function typeMetaOf(r: ResourceDef): { apiVersion: string; kind: string } {
  return { apiVersion: apiVersionOf(r), kind: r.kind };
}
