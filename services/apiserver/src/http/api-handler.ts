/**
 * The HTTP front of the API server: authentication, routing of `/api` and `/apis` paths to the REST
 * storage, request decoding, `Status` errors, Table output and streamed watches.
 *
 * Models k8s.io/apiserver/pkg/endpoints (handlers/get.go, create.go, update.go, patch.go, delete.go,
 * watch.go; request/requestinfo.go for the path grammar) and pkg/server/filters (authentication,
 * panic recovery: a bad request is a Status, never a crash).
 *
 * ```
 * /api/v1/<resource>[/<name>[/<sub>]]                       cluster-scoped, or all namespaces
 * /api/v1/namespaces/<ns>/<resource>[/<name>[/<sub>]]       namespaced
 * /apis/<group>/<version>/...                                the same under a group
 * ```
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@splitlet/telemetry';
import { RESOURCES, findResource, apiVersionOf, type ResourceDef } from '../registry/resources.js';
import type { RestStorage } from '../registry/rest-storage.js';
import { metaText, type KubeObject } from '../storage/object-store.js';
import { ApiError, isApiError } from './api-errors.js';
import { SERVER_VERSION, apiGroup, apiGroupList, apiResourceList, apiVersions, openApiDocument, openApiRoot } from './discovery.js';
import { logContainer, parsePodLogOptions, streamPodLog, type NodeLogFailure, type NodeLogReader } from './pod-logs.js';
import { toTable, wantsTable } from './tables.js';

/** Reads container logs on the pod's node (over the bus), and tells its failures apart. */
export interface PodLogSource {
  readonly read: NodeLogReader;
  readonly failure: (e: unknown) => NodeLogFailure;
}

/** What {@link createApiHandler} needs. */
export interface ApiHandlerOptions {
  readonly storage: RestStorage;
  /** The bearer token every request must carry (no anonymous access). */
  readonly token: string;
  /** host:port clients use (discovery's serverAddressByClientCIDRs). */
  readonly serverAddress: string;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Interval of watch bookmarks. @default 30 s */
  readonly bookmarkMs?: number;
  /** Reads container logs through the node; absent: `pods/log` answers 503. */
  readonly logs?: PodLogSource;
  /** Aborted at shutdown: open watches end. */
  readonly signal: AbortSignal;
}

interface Route {
  readonly resource: ResourceDef;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: string;
}

const MAX_BODY = 3 * 1024 * 1024;
const enc = (o: unknown): string => JSON.stringify(o);

function authorized(req: IncomingMessage, token: string): boolean {
  const h = req.headers.authorization;
  if (h === undefined || !h.startsWith('Bearer ')) return false;
  const got = Buffer.from(h.slice(7).trim());
  const want = Buffer.from(token);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** The media type of Kubernetes protobuf (decoded by protobuf-body.ts). */
const PROTOBUF_TYPE = 'application/vnd.kubernetes.protobuf';
/** JSON bodies only: a protobuf or CBOR body is 415, which makes client-go fall back to JSON. */
const BODY_TYPES = ['application/json', 'application/merge-patch+json', 'application/json-patch+json', 'application/strategic-merge-patch+json'];

async function readBody(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim() ?? '';
  if (type !== PROTOBUF_TYPE && !BODY_TYPES.includes(type)) {
    req.resume();
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${[...BODY_TYPES, PROTOBUF_TYPE].join(', ')}`,
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new ApiError(413, 'RequestEntityTooLarge', `the request body is larger than ${MAX_BODY} bytes`);
    chunks.push(c as Buffer);
  }
  // protobufjs is loaded with the first protobuf body (kubectl create configmap|secret|…): not before.
  if (type === PROTOBUF_TYPE) return (await import('./protobuf-body.js')).decodeProtobufBody(Buffer.concat(chunks));
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw ApiError.badRequest(`the body of the request is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = enc(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Parses the resource part of a path (`segments` after the group-version). */
function route(group: string, version: string, segments: readonly string[]): Route | undefined {
  let ns: string | undefined;
  let rest = segments;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const r = findResource(group, version, rest[2] as string);
    if (r !== undefined && r.namespaced) {
      ns = rest[1];
      rest = rest.slice(2);
    }
  }
  const r = findResource(group, version, rest[0] ?? '');
  if (r === undefined) return undefined;
  if (rest.length > 3) return undefined;
  return { resource: r, namespace: ns, name: rest[1], subresource: rest[2] ?? '' };
}

/** The Node-style request handler. */
export function createApiHandler(o: ApiHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const now = o.now ?? Date.now;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://apiserver');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (!authorized(req, o.token)) throw ApiError.unauthorized();
    const method = req.method ?? 'GET';
    if (path === '/version') return send(res, 200, SERVER_VERSION);
    if (path === '/api') return send(res, 200, apiVersions(o.serverAddress));
    if (path === '/apis') return send(res, 200, apiGroupList());
    if (path === '/openapi/v3') return send(res, 200, openApiRoot());
    if (path.startsWith('/openapi/v3/')) {
      const doc = openApiDocument(path.slice('/openapi/v3/'.length));
      if (doc !== undefined) return send(res, 200, doc);
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    const parts = path
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent);
    let group: string;
    let version: string;
    let segments: string[];
    if (parts[0] === 'api' && parts[1] !== undefined) {
      group = '';
      version = parts[1];
      segments = parts.slice(2);
    } else if (parts[0] === 'apis' && parts[1] !== undefined) {
      group = parts[1];
      if (parts[2] === undefined) {
        const g = apiGroup(group);
        if (g === undefined) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        return send(res, 200, g);
      }
      version = parts[2];
      segments = parts.slice(3);
    } else {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (segments.length === 0) {
      const list = apiResourceList(group, version);
      if (list === undefined) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      return send(res, 200, list);
    }
    const rt = route(group, version, segments);
    if (rt === undefined) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    return serveResource(req, res, url, method, rt);
  }

  async function serveResource(req: IncomingMessage, res: ServerResponse, url: URL, method: string, rt: Route): Promise<void> {
    const { resource: r, namespace: ns, name, subresource: sub } = rt;
    const q = url.searchParams;
    const dryRun = q.get('dryRun') === 'All';
    if (sub !== '' && !r.subresources.includes(sub)) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    if (name === undefined) {
      if (method === 'GET') {
        const watch = q.get('watch') === 'true' || q.get('watch') === '1';
        const limit = Number(q.get('limit') ?? 0);
        const opts = { labelSelector: q.get('labelSelector'), fieldSelector: q.get('fieldSelector'), continueToken: q.get('continue'), ...(limit > 0 ? { limit } : {}) };
        if (watch) return serveWatch(req, res, r, ns, opts, q);
        const listed = await o.storage.list(r, ns, opts);
        const listMeta: Record<string, unknown> = {
          resourceVersion: String(listed.revision),
          ...(listed.continueToken === undefined ? {} : { continue: listed.continueToken, remainingItemCount: listed.remaining }),
        };
        if (wantsTable(req.headers.accept)) return send(res, 200, toTable(r, listed.items, listMeta, now()));
        return send(res, 200, { kind: `${r.kind}List`, apiVersion: apiVersionOf(r), metadata: listMeta, items: listed.items });
      }
      if (method === 'POST') {
        const body = (await readBody(req)) as KubeObject | undefined;
        if (body === undefined || typeof body !== 'object') throw ApiError.badRequest('the request body must be an object');
        const created = await o.storage.create(r, ns, body, dryRun);
        return send(res, 201, created.object);
      }
      if (method === 'DELETE') {
        const listed = await o.storage.list(r, ns, { labelSelector: q.get('labelSelector'), fieldSelector: q.get('fieldSelector') });
        for (const item of listed.items) await o.storage.delete(r, item.metadata?.['namespace'] as string | undefined, String(item.metadata?.['name']), {}).catch(() => undefined);
        return send(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' });
      }
      throw ApiError.methodNotSupported(r.name, method);
    }
    if (sub === 'binding' || (r.name === 'bindings' && method === 'POST')) {
      if (method !== 'POST') throw ApiError.methodNotSupported('pods/binding', method);
      await o.storage.bind(r, ns ?? 'default', name, ((await readBody(req)) as KubeObject | undefined) ?? {});
      return send(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
    }
    if (sub === 'log') {
      if (method !== 'GET') throw ApiError.methodNotSupported('pods/log', method);
      if (o.logs === undefined) throw new ApiError(503, 'ServiceUnavailable', 'container logs are not reachable: no node log service is configured');
      const pod = await o.storage.get(r, ns, name);
      const parsed = parsePodLogOptions(q, name);
      const container = logContainer(pod.object, parsed.container);
      const ctl = new AbortController();
      const stop = (): void => ctl.abort();
      o.signal.addEventListener('abort', stop, { once: true });
      res.on('close', stop);
      try {
        await streamPodLog(
          {
            read: o.logs.read,
            failure: o.logs.failure,
            currentPod: () =>
              o.storage.get(r, ns, name).then(
                (s) => s.object,
                (e: unknown) => (isApiError(e) && e.code === 404 ? undefined : Promise.reject(e)),
              ),
            now,
            signal: ctl.signal,
          },
          res,
          pod.object,
          { ...parsed, container },
        );
      } finally {
        o.signal.removeEventListener('abort', stop);
      }
      return;
    }
    if (sub === 'eviction') {
      if (method !== 'POST') throw ApiError.methodNotSupported('pods/eviction', method);
      const body = ((await readBody(req)) as { deleteOptions?: { gracePeriodSeconds?: number } } | undefined) ?? {};
      await o.storage.delete(r, ns, name, body.deleteOptions?.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: body.deleteOptions.gracePeriodSeconds });
      return send(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
    }
    switch (method) {
      case 'GET': {
        const got = await o.storage.get(r, ns, name);
        if (wantsTable(req.headers.accept)) return send(res, 200, toTable(r, [got.object], { resourceVersion: String(got.revision) }, now()));
        return send(res, 200, got.object);
      }
      case 'PUT': {
        const body = (await readBody(req)) as KubeObject | undefined;
        if (body === undefined || typeof body !== 'object') throw ApiError.badRequest('the request body must be an object');
        return send(res, 200, (await o.storage.update(r, ns, name, body, sub)).object);
      }
      case 'PATCH': {
        const body = await readBody(req);
        return send(res, 200, (await o.storage.patch(r, ns, name, req.headers['content-type'] ?? '', body, sub)).object);
      }
      case 'DELETE': {
        const body = ((await readBody(req)) as { gracePeriodSeconds?: number; preconditions?: { uid?: string; resourceVersion?: string } } | undefined) ?? {};
        const qGrace = q.get('gracePeriodSeconds');
        const grace = qGrace !== null ? Number(qGrace) : body.gracePeriodSeconds;
        if (r.name === 'namespaces') return send(res, 200, await deleteNamespace(name));
        const out = await o.storage.delete(r, ns, name, {
          ...(grace === undefined || Number.isNaN(grace) ? {} : { gracePeriodSeconds: grace }),
          ...(body.preconditions === undefined ? {} : { preconditions: body.preconditions }),
        });
        return send(res, 200, out.stored.object);
      }
      default:
        throw ApiError.methodNotSupported(r.name, method);
    }
  }

  /** A namespace goes with everything in it (the namespace controller's job, done inline). */
  async function deleteNamespace(name: string): Promise<KubeObject> {
    const nsRes = findResource('', 'v1', 'namespaces') as ResourceDef;
    const cur = await o.storage.get(nsRes, undefined, name);
    if (['default', 'kube-system', 'kube-public', 'kube-node-lease'].includes(name))
      throw new ApiError(403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`);
    for (const r of RESOURCES.filter((x) => x.namespaced)) {
      const listed = await o.storage.list(r, name, { labelSelector: null, fieldSelector: null });
      for (const item of listed.items) await o.storage.delete(r, name, String(item.metadata?.['name']), { gracePeriodSeconds: 0 }).catch(() => undefined);
    }
    await o.storage.delete(nsRes, undefined, name, {});
    return cur.object;
  }

  async function serveWatch(
    req: IncomingMessage,
    res: ServerResponse,
    r: ResourceDef,
    ns: string | undefined,
    opts: { labelSelector: string | null; fieldSelector: string | null },
    q: URLSearchParams,
  ): Promise<void> {
    const rvParam = q.get('resourceVersion');
    const table = wantsTable(req.headers.accept);
    const timeoutS = Number(q.get('timeoutSeconds') ?? 1800) || 1800;
    const bookmarks = q.get('allowWatchBookmarks') === 'true';
    const ctl = new AbortController();
    const stop = (): void => ctl.abort();
    o.signal.addEventListener('abort', stop, { once: true });
    req.on('close', stop);
    const timer = setTimeout(stop, timeoutS * 1000);
    let from: number;
    const initial: KubeObject[] = [];
    const matching = new Set<string>();
    const keyOf = (x: KubeObject): string => `${metaText(x, 'namespace')}/${metaText(x, 'name')}`;
    if (rvParam === null || rvParam === '' || rvParam === '0') {
      // No revision: the current state first (as ADDED), then the changes after it.
      const listed = await o.storage.list(r, ns, opts);
      from = listed.revision;
      for (const item of listed.items) {
        initial.push(item);
        matching.add(keyOf(item));
      }
    } else {
      from = Number(rvParam);
      if (!Number.isInteger(from) || from < 0) throw ApiError.badRequest(`invalid resource version: ${rvParam}`);
      const listed = await o.storage.list(r, ns, opts);
      for (const item of listed.items) matching.add(keyOf(item));
    }
    // As kube-apiserver does, the response starts at once; a revision too old to resume from
    // (410 Expired) and any later failure arrive as an ERROR event, which informers answer with a relist.
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache' });
    res.flushHeaders();
    const watchLog = { resource: r.name, namespace: ns ?? '', fromRevision: from };
    o.logger.debug('watch started', watchLog);
    let sent = 0;
    let headers = true;
    let last = from;
    const write = (type: string, object: KubeObject): void => {
      const obj = table && type !== 'BOOKMARK' && type !== 'ERROR' ? toTable(r, [object], { resourceVersion: metaText(object, 'resourceVersion') }, now(), headers) : object;
      headers = false;
      res.write(enc({ type, object: obj }) + '\n');
    };
    for (const item of initial) write('ADDED', item);
    const bm = bookmarks
      ? setInterval(() => write('BOOKMARK', { kind: r.kind, apiVersion: apiVersionOf(r), metadata: { resourceVersion: String(last) } }), o.bookmarkMs ?? 30_000)
      : undefined;
    try {
      for await (const e of o.storage.watch(r, ns, opts, from, matching, ctl.signal)) {
        last = e.revision;
        write(e.type, e.object);
        sent++;
      }
      o.logger.debug('watch ended', { ...watchLog, events: sent, lastRevision: last });
    } catch (e) {
      o.logger.debug('watch ended', { ...watchLog, events: sent, lastRevision: last, err: e instanceof Error ? e.message : String(e) });
      if (!ctl.signal.aborted) {
        const status = isApiError(e) ? e.status() : new ApiError(500, 'InternalError', e instanceof Error ? e.message : String(e)).status();
        res.write(enc({ type: 'ERROR', object: status }) + '\n');
      }
    } finally {
      if (bm !== undefined) clearInterval(bm);
      clearTimeout(timer);
      o.signal.removeEventListener('abort', stop);
      res.end();
    }
  }

  return (req, res) => {
    handle(req, res).catch((e: unknown) => {
      const err = isApiError(e) ? e : new ApiError(500, 'InternalError', `Internal error occurred: ${e instanceof Error ? e.message : String(e)}`);
      if (err.code >= 500) o.logger.error('request failed', { method: req.method, url: req.url, err: e instanceof Error ? e.message : String(e) });
      if (res.headersSent) {
        res.end();
        return;
      }
      send(res, err.code, err.status());
    });
  };
}
