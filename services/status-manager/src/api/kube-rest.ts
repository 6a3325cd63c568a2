/**
 * A minimal REST client for the API server status-manager reports to: the kubeconfig (loaded with
 * @kubernetes/client-node's KubeConfig, which supplies the server, CA, client certificate and token)
 * and JSON requests over HTTPS. Narrow on purpose: status-manager needs get, create, update, patch
 * and delete of a handful of paths.
 */
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

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

/** The strategic-merge patch media type (types.StrategicMergePatchType). */
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/** How long one request may take before it fails. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Loads the kubeconfig at `path` and returns a client for its current context.
 * @throws Error naming the file when it cannot be read or has no current cluster.
 */
export async function createKubeRest(path: string): Promise<KubeRest> {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (e) {
    throw new Error(`KUBECONFIG ${path} could not be loaded: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error(`KUBECONFIG ${path} has no current cluster (current-context ${JSON.stringify(kc.getCurrentContext())})`);
  const base = new URL(cluster.server);
  const tls: RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  // client-node's agent does not keep connections alive: every request would be a new TLS
  // handshake (a new secure context, and the API server's handshake too). Without a proxy, one
  // keep-alive agent with the same TLS settings reuses the connections.
  if (cluster.proxyUrl === undefined && base.protocol === 'https:') tls.agent = keepAliveAgent(tls);
  return {
    request(method, path, body, contentType = 'application/json') {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const url = new URL(path, base);
      const headers: Record<string, string> = { ...(tls.headers as Record<string, string> | undefined), accept: 'application/json' };
      if (payload !== undefined) {
        headers['content-type'] = contentType;
        headers['content-length'] = String(Buffer.byteLength(payload));
      }
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      return new Promise<KubeResponse>((resolve, reject) => {
        const req = send(url, { ...tls, method, headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
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
        if (payload !== undefined) req.write(payload);
        req.end();
      });
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
