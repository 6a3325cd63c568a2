/**
 * An in-test, read-only OCI distribution registry (distribution-spec v1.1 pull endpoints) on
 * 127.0.0.1, for pulling images with real containerd:
 *
 *   GET|HEAD /v2/                              → 200 `{}`; 401 + `WWW-Authenticate: Basic realm=…`
 *   GET|HEAD /v2/<name>/manifests/<tag|digest> → the manifest (Content-Type, Docker-Content-Digest)
 *   GET|HEAD /v2/<name>/blobs/<digest>         → the blob
 *
 * Repositories listed in `users`-protected mode need HTTP Basic credentials of one of the users;
 * anything else answers 401 the way registry:2 with htpasswd auth does (`UNAUTHORIZED` error body).
 * Unknown names give 404 `NAME_UNKNOWN` / `MANIFEST_UNKNOWN` / `BLOB_UNKNOWN`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One image the registry serves: its manifest (with media type) and every blob it references. */
export interface RegistryImage {
  /** The repository, e.g. `private/busybox`. */
  readonly name: string;
  readonly tags: readonly string[];
  readonly manifest: Buffer;
  readonly manifestMediaType: string;
  readonly blobs: ReadonlyMap<string, Buffer>;
}

/** Options of {@link startOciRegistry}. */
export interface OciRegistryOptions {
  readonly images: readonly RegistryImage[];
  /** Basic-auth users; empty: no authentication at all. */
  readonly users: readonly { readonly username: string; readonly password: string }[];
  /** The `realm` of the Basic challenge. @default 'splitlet-test-registry' */
  readonly realm?: string;
}

/** One request the registry answered. */
export interface RegistryRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The Basic-auth user the request authenticated as (only when the credentials were right). */
  readonly user?: string;
  /** Whether an Authorization header was sent at all. */
  readonly withAuthorization: boolean;
}

/** A running registry. */
export interface OciRegistry {
  /** `127.0.0.1:<port>`: the registry host as image references name it. */
  readonly host: string;
  readonly port: number;
  readonly requests: readonly RegistryRequest[];
  close(): Promise<void>;
}

function digestOf(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function errorBody(code: string, message: string, detail: unknown = null): string {
  return JSON.stringify({ errors: [{ code, message, detail }] });
}

/** Starts the registry on a free loopback port. */
export async function startOciRegistry(options: OciRegistryOptions): Promise<OciRegistry> {
  const realm = options.realm ?? 'splitlet-test-registry';
  const requests: RegistryRequest[] = [];
  const byName = new Map(options.images.map((img) => [img.name, img]));

  const authenticate = (req: IncomingMessage): { ok: boolean; user?: string } => {
    if (options.users.length === 0) return { ok: true };
    const h = req.headers.authorization ?? '';
    const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(h);
    if (m === null) return { ok: false };
    const decoded = Buffer.from(m[1] ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return { ok: false };
    const username = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    const user = options.users.find((u) => sameText(u.username, username) && sameText(u.password, password));
    return user === undefined ? { ok: false } : { ok: true, user: user.username };
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://registry').pathname;
    const auth = authenticate(req);
    const send = (status: number, headers: Record<string, string | number>, body: Buffer | string = ''): void => {
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      res.writeHead(status, { 'Docker-Distribution-API-Version': 'registry/2.0', 'Content-Length': data.length, ...headers });
      res.end(method === 'HEAD' ? undefined : data);
      requests.push({ method, path, status, ...(auth.user !== undefined ? { user: auth.user } : {}), withAuthorization: req.headers.authorization !== undefined });
    };
    const json = { 'Content-Type': 'application/json; charset=utf-8' };
    if (method !== 'GET' && method !== 'HEAD') {
      send(405, json, errorBody('UNSUPPORTED', 'The operation is unsupported.'));
      return;
    }
    if (!auth.ok) {
      send(401, { ...json, 'WWW-Authenticate': `Basic realm="${realm}"` }, errorBody('UNAUTHORIZED', 'authentication required'));
      return;
    }
    if (path === '/v2/' || path === '/v2') {
      send(200, json, '{}');
      return;
    }
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(path);
    if (m === null) {
      send(404, json, errorBody('NOT_FOUND', 'not found'));
      return;
    }
    const [, name = '', kind, ref = ''] = m;
    const img = byName.get(name);
    if (img === undefined) {
      send(404, json, errorBody('NAME_UNKNOWN', 'repository name not known to registry', { name }));
      return;
    }
    if (kind === 'manifests') {
      const digest = digestOf(img.manifest);
      if (ref !== digest && !img.tags.includes(ref)) {
        send(404, json, errorBody('MANIFEST_UNKNOWN', 'manifest unknown', { Tag: ref }));
        return;
      }
      send(200, { 'Content-Type': img.manifestMediaType, 'Docker-Content-Digest': digest }, img.manifest);
      return;
    }
    const blob = img.blobs.get(ref);
    if (blob === undefined) {
      send(404, json, errorBody('BLOB_UNKNOWN', 'blob unknown to registry', { digest: ref }));
      return;
    }
    send(200, { 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': ref }, blob);
  };

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
