/**
 * A minimal REST client for the API server status-manager reports to: the kubeconfig (loaded with
 * @splitlet/kube-client's loadKubeEndpoint, which supplies the server, CA, client certificate and
 * token) and JSON requests over HTTPS. Narrow on purpose: status-manager needs get, create, update,
 * patch and delete of a handful of paths.
 */
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import { apiUrl, loadKubeEndpoint, watchJson, type KubeEndpoint, type KubeWatchEvent } from '@splitlet/kube-client';

// node:http through process.getBuiltinModule, not an ESM import: Node builds an imported builtin's
// namespace from every export, and node:http's lazy ones load fetch (undici) and http2 (~10 MiB of RSS).
const { request: httpRequest } = process.getBuiltinModule('node:http');

/** A response: the status code and the parsed JSON body (undefined when not JSON). */
export interface KubeResponse {
  readonly status: number;
  readonly body: unknown;
}

/** A string field of a JSON object body (`message`), undefined when the body has none. */
function stringField(body: unknown, field: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const v = (body as Record<string, unknown>)[field];
  return typeof v === 'string' ? v : undefined;
}

/** `metadata.uid` of an object in a response body. */
export function uidOf(body: unknown): string | undefined {
  return typeof body === 'object' && body !== null ? stringField((body as Record<string, unknown>)['metadata'], 'uid') : undefined;
}

/** The requests status-manager makes. */
export interface KubeRest {
  /** `contentType` defaults to `application/json`. */
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<KubeResponse>;
}

/** One event of a watch stream (`{type, object}`, one JSON document a line). */
export type { KubeWatchEvent } from '@splitlet/kube-client';

/** A streamed watch of a collection. */
export interface KubeWatch {
  /**
   * GETs `path` (a `watch=true` URL) and calls `onEvent` for every event until the server ends the
   * stream (resolves) or `signal` aborts (resolves).
   * @throws Error for an answer other than 200, a broken connection or a line that is not JSON.
   */
  watch(path: string, onEvent: (e: KubeWatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** The strategic-merge patch media type (types.StrategicMergePatchType). */
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/** How long one request may take before it fails. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Loads the kubeconfig at `path` and returns a client for its current context (`host`: its API
 * server's host and port, as client-go labels its metrics).
 * @throws Error naming the file when it cannot be read or has no current cluster.
 */
export async function createKubeRest(path: string): Promise<KubeRest & KubeWatch & { readonly host: string }> {
  let endpoint: KubeEndpoint;
  try {
    endpoint = await loadKubeEndpoint(path);
  } catch (e) {
    throw new Error(`KUBECONFIG ${path} could not be loaded: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const { headers: authHeaders, agent: clientNodeAgent, ...tls } = await endpoint.requestOptions();
  // client-node's agent (a kubeconfig that needs it) does not keep connections alive: every request
  // would be a new TLS handshake (a new secure context, and the API server's handshake too).
  // Without a proxy, one keep-alive agent with the same TLS settings reuses the connections.
  const pool = endpoint.proxyUrl === undefined && endpoint.server.protocol === 'https:' ? keepAliveAgent(tls) : undefined;
  // The pooled agent carries the TLS settings: a request passing them again would have the agent
  // stringify the CA, certificate and key into its pool key on every request.
  // (Basic auth is not a TLS setting: it goes with every request either way.)
  const perRequest: RequestOptions =
    pool === undefined ? { ...tls, ...(clientNodeAgent === undefined ? {} : { agent: clientNodeAgent }) } : { agent: pool, ...(tls.auth === undefined ? {} : { auth: tls.auth }) };
  const baseHeaders: Readonly<Record<string, string>> = { ...(authHeaders as Record<string, string>), accept: 'application/json' };
  return {
    host: endpoint.server.host,
    request(method, path, body, contentType = 'application/json') {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const url = apiUrl(endpoint, path);
      const headers: Record<string, string> = { ...baseHeaders };
      if (payload !== undefined) {
        headers['content-type'] = contentType;
        headers['content-length'] = String(Buffer.byteLength(payload));
      }
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      return new Promise<KubeResponse>((resolve, reject) => {
        const req = send(url, { ...perRequest, method, headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        });
        req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname} timed out after ${REQUEST_TIMEOUT_MS} ms`)));
        req.on('error', reject);
        // One write: the headers and the body go out together.
        req.end(payload);
      });
    },
    watch(path, onEvent, signal) {
      // Not the keep-alive pool: the stream holds its connection for as long as it runs.
      return watchJson(endpoint, path, {}, onEvent, signal);
    },
  };
}

/** How many connections to the API server a client keeps open at most. */
const MAX_SOCKETS = 16;

/** A keep-alive agent with the TLS settings `applyToHTTPSOptions` put into `o`. */
function keepAliveAgent(o: RequestOptions): HttpsAgent {
  return new HttpsAgent({
    keepAlive: true,
    maxSockets: MAX_SOCKETS,
    ...(o.ca !== undefined ? { ca: o.ca } : {}),
    ...(o.cert !== undefined ? { cert: o.cert } : {}),
    ...(o.key !== undefined ? { key: o.key } : {}),
    ...(o.pfx !== undefined ? { pfx: o.pfx } : {}),
    ...(o.passphrase !== undefined ? { passphrase: o.passphrase } : {}),
    ...(o.rejectUnauthorized !== undefined ? { rejectUnauthorized: o.rejectUnauthorized } : {}),
    ...(o.servername !== undefined ? { servername: o.servername } : {}),
  });
}

/** An error for an unexpected response, naming the request and the API server's message. */
export function kubeError(what: string, res: KubeResponse): Error {
  const message = stringField(res.body, 'message') ?? `HTTP ${res.status}`;
  return new Error(`${what}: ${res.status} ${message}`);
}
