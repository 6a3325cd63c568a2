/**
 * The API server a kubeconfig points at, and what a request to it needs: the current context's
 * server, its TLS settings and the user's credentials, read without @kubernetes/client-node for the
 * kubeconfigs nodes use (certificate-authority(-data), insecure-skip-tls-verify, tls-server-name;
 * client-certificate(-data) + client-key(-data), token, tokenFile, username + password, `as`).
 *
 * client-node's index pulls in every generated API (~35–58 MiB of RSS a process); a kubeconfig that
 * needs what only client-node implements — an `exec` credential plugin, an `auth-provider`, a
 * `proxy-url` — is loaded with client-node (imported then, not before), with its behaviour.
 * The rules client-node applies are kept: relative file paths are relative to the kubeconfig's
 * folder, a server's trailing slash is dropped, an `http:` server needs insecure-skip-tls-verify.
 */
import { readFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';

// node:http through process.getBuiltinModule, not an ESM import: Node builds an imported builtin's
// namespace from every export, and node:http's lazy ones load fetch (undici) and http2 (~10 MiB of RSS).
const { request: httpRequest } = process.getBuiltinModule('node:http');

/** An API server and how to reach it. */
export interface KubeEndpoint {
  /** The current cluster's server, e.g. `https://127.0.0.1:6443`. */
  readonly server: URL;
  /**
   * The options of one request: TLS material (`ca`, `cert`, `key`, `rejectUnauthorized`,
   * `servername`), the `Authorization` (and `Impersonate-User`) header, `auth` for basic auth; with
   * client-node, also its agent (a proxy's). Read again on every call where credentials may change
   * (a token file, an exec plugin), so call it per request or per connection.
   */
  requestOptions(): Promise<RequestOptions & { headers: Record<string, string> }>;
  /** Whether client-node was needed for this kubeconfig (`exec`, `auth-provider`, `proxy-url`). */
  readonly viaClientNode: boolean;
  /** The cluster's `proxy-url` (client-node's agent in {@link KubeEndpoint.requestOptions} goes through it). */
  readonly proxyUrl?: string;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (o: Json, k: string): string | undefined => (typeof o[k] === 'string' && o[k] !== '' ? o[k] : undefined);

/** The `name`d entry's `field` object of a kubeconfig list (clusters, users, contexts). */
function entry(list: unknown, name: string, field: string, what: string, path: string): Json {
  const found = Array.isArray(list) ? list.find((e): e is Json => isObject(e) && e['name'] === name) : undefined;
  if (found === undefined) throw new Error(`kubeconfig ${path}: ${what} "${name}" not found`);
  const v = found[field];
  return isObject(v) ? v : {};
}

/**
 * Loads the kubeconfig at `path` (YAML or JSON) for its current context.
 * @throws Error naming the file when it cannot be read or parsed, has no current context, or names
 *   a cluster or user it does not define.
 */
export async function loadKubeEndpoint(path: string): Promise<KubeEndpoint> {
  let doc: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    const { parse } = await import('yaml');
    doc = parse(text);
  } catch (e) {
    throw new Error(`kubeconfig ${path} could not be read: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (!isObject(doc)) throw new Error(`kubeconfig ${path} is not a kubeconfig (not a YAML mapping)`);
  const current = str(doc, 'current-context');
  if (current === undefined) throw new Error(`kubeconfig ${path} has no current-context`);
  const context = entry(doc['contexts'], current, 'context', 'context', path);
  const cluster = entry(doc['clusters'], str(context, 'cluster') ?? '', 'cluster', 'cluster', path);
  const user = str(context, 'user') === undefined ? {} : entry(doc['users'], str(context, 'user')!, 'user', 'user', path);
  const serverText = str(cluster, 'server');
  if (serverText === undefined) throw new Error(`kubeconfig ${path}: cluster "${str(context, 'cluster')}" has no server`);
  const server = new URL(serverText.replace(/\/$/, ''));
  const proxyUrl = str(cluster, 'proxy-url');
  if (user['exec'] !== undefined || user['auth-provider'] !== undefined || proxyUrl !== undefined) return clientNodeEndpoint(path, server, proxyUrl);

  const dir = dirname(path);
  const file = (f: string): string => (isAbsolute(f) ? f : join(dir, f));
  /** A file's bytes, else base64 data (a file wins, as in client-node). */
  const material = (o: Json, fileKey: string, dataKey: string): Buffer | undefined => {
    const f = str(o, fileKey);
    if (f !== undefined) return readFileSync(file(f));
    const d = str(o, dataKey);
    return d === undefined ? undefined : Buffer.from(d, 'base64');
  };
  const skipTls = cluster['insecure-skip-tls-verify'] === true;
  if (server.protocol === 'http:' && !skipTls) throw new Error(`kubeconfig ${path}: HTTP protocol is not allowed when insecure-skip-tls-verify is not set or false`);
  const tls: RequestOptions = {};
  if (skipTls) tls.rejectUnauthorized = false;
  const servername = str(cluster, 'tls-server-name');
  if (servername !== undefined) tls.servername = servername;
  const ca = material(cluster, 'certificate-authority', 'certificate-authority-data');
  if (ca !== undefined) tls.ca = ca;
  const cert = material(user, 'client-certificate', 'client-certificate-data');
  if (cert !== undefined) tls.cert = cert;
  const key = material(user, 'client-key', 'client-key-data');
  if (key !== undefined) tls.key = key;
  const username = str(user, 'username');
  if (username !== undefined) tls.auth = `${username}:${str(user, 'password') ?? ''}`;
  const impersonate = str(user, 'as');
  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile') ?? str(user, 'token-file');
  return {
    server,
    viaClientNode: false,
    requestOptions() {
      const headers: Record<string, string> = {};
      if (impersonate !== undefined) headers['Impersonate-User'] = impersonate;
      // A token file is read at every call: the credentials it holds may be rotated (client-go re-reads it too).
      const bearer = token ?? (tokenFile === undefined ? undefined : readFileSync(file(tokenFile), 'utf8').trim());
      if (bearer !== undefined) headers['Authorization'] = `Bearer ${bearer}`;
      return Promise.resolve({ ...tls, headers });
    },
  };
}

/** The endpoint of a kubeconfig only @kubernetes/client-node can serve (imported now). */
async function clientNodeEndpoint(path: string, server: URL, proxyUrl: string | undefined): Promise<KubeEndpoint> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return {
    server,
    viaClientNode: true,
    ...(proxyUrl === undefined ? {} : { proxyUrl }),
    async requestOptions() {
      const o: RequestOptions & { headers: Record<string, string> } = { headers: {} };
      await kc.applyToHTTPSOptions(o);
      return o;
    },
  };
}

/** The URL of an API path (with its query) on the endpoint's server, under the server's own path if it has one (a proxy's `/k8s/clusters/x`). */
export function apiUrl(endpoint: KubeEndpoint, path: string): URL {
  return new URL(`${endpoint.server.origin}${endpoint.server.pathname.replace(/\/$/, '')}${path}`);
}

/** Options of {@link getJson}. */
export interface GetJsonOptions {
  readonly signal?: AbortSignal;
  /** The request fails after this long. @default 30000 */
  readonly timeoutMs?: number;
  /** Extra request options (e.g. a keep-alive `agent`), over the endpoint's. */
  readonly request?: RequestOptions;
}

/**
 * GETs `path` (with its query) from the endpoint as JSON: the status and the parsed body
 * (`undefined` when the body is not JSON). Rejects on a connection error, a timeout or an abort.
 */
export async function getJson(endpoint: KubeEndpoint, path: string, o: GetJsonOptions = {}): Promise<{ status: number; body: unknown }> {
  const url = apiUrl(endpoint, path);
  const base = await endpoint.requestOptions();
  const timeoutMs = o.timeoutMs ?? 30_000;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        ...base,
        ...o.request,
        headers: { ...base.headers, accept: 'application/json' },
        method: 'GET',
        timeout: timeoutMs,
        ...(o.signal === undefined ? {} : { signal: o.signal }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url.pathname}: timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** One event of a watch stream. */
export interface KubeWatchEvent {
  readonly type: string;
  readonly object: unknown;
}

/**
 * Watches `path` (`watch=true` and `query` are added): calls `onEvent` for every event, in order,
 * until the server ends the stream (resolves) or `signal` aborts (resolves). A thrown `onEvent`
 * ends the watch with that error.
 * @throws Error with `statusCode` for an answer other than 200; Error for a broken connection or a
 *   line that is not JSON.
 */
export async function watchJson(
  endpoint: KubeEndpoint,
  path: string,
  query: Readonly<Record<string, string>>,
  onEvent: (e: KubeWatchEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const url = apiUrl(endpoint, path);
  url.searchParams.set('watch', 'true');
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const base = await endpoint.requestOptions();
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return resolve();
    const req = send(url, { ...base, headers: { ...base.headers, accept: 'application/json' }, method: 'GET', signal }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(Object.assign(new Error(`watch ${url.pathname}: HTTP ${res.statusCode ?? 0}`), { statusCode: res.statusCode ?? 0 }));
        return;
      }
      const lines = new LineSplitter((line) => onEvent(JSON.parse(line) as KubeWatchEvent));
      res.on('data', (c: Buffer) => {
        try {
          lines.push(c);
        } catch (e) {
          req.destroy(e instanceof Error ? e : new Error(String(e)));
        }
      });
      res.on('error', (e) => (signal.aborted ? resolve() : reject(e)));
      res.on('end', () => resolve());
    });
    req.on('error', (e) => (signal.aborted ? resolve() : reject(e)));
    req.end();
  });
}

/** Splits a byte stream into lines (a chunk may end inside a line, or inside a UTF-8 sequence). */
class LineSplitter {
  #rest: Buffer = Buffer.alloc(0);
  readonly #onLine: (line: string) => void;
  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }
  push(chunk: Buffer): void {
    let buf = this.#rest.length === 0 ? chunk : Buffer.concat([this.#rest, chunk]);
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) >= 0) {
      const line = buf.toString('utf8', 0, nl).trim();
      buf = buf.subarray(nl + 1);
      if (line !== '') this.#onLine(line);
    }
    this.#rest = buf;
  }
}
