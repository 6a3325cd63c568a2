/**
 * httpGet probe: GET scheme://host:port/path with the probe's headers (User-Agent
 * `kube-probe/<major>.<minor>` and `Accept: *\/*` unless given; a `Host` header sets the request's
 * host), TLS unverified, the whole exchange bounded by the timeout. 200–399 is success; redirects
 * are followed on the same host (at most 10); a redirect to another host is not followed and gives
 * a warning ("Probe terminated redirects, Response body: …", still a success); anything else is a
 * failure "HTTP probe failed with statuscode: N". Connection errors read as Go's http client words
 * them (`Get "<url>": dial tcp …: connect: connection refused`).
 *
 * Models pkg/probe/http/http.go (DoHTTPProbe, RedirectChecker with followNonLocalRedirects=false)
 * and request.go (NewRequestForHTTPGetAction, formatURL, User-Agent and Accept defaults).
 */
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { HandlerOutcome } from '../prober/probe-type.js';
import { goDialError } from './dial-error.js';
import { joinHostPort } from './resolve-port.js';

// node:http through process.getBuiltinModule, not an ESM import: Node builds an imported builtin's
// namespace from every export, and node:http's lazy ones load fetch (undici) and http2 (~10 MiB of RSS).
const { request: httpRequest } = process.getBuiltinModule('node:http');

/** maxRespBodyLength: the part of a body kept for the probe output. */
const MAX_BODY_BYTES = 10 * 1024;
const MAX_REDIRECTS = 10;

/** One HTTP probe's request. */
export interface HttpProbeRequest {
  /** `http` or `https`. */
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly port: number;
  /** As in the probe spec (may carry a query). */
  readonly path: string;
  /** The probe's httpHeaders, in order (repeated names kept). */
  readonly headers: readonly { readonly name: string; readonly value: string }[];
  readonly userAgent: string;
}

/** The probe URL: `scheme://host:port` + path (a path without a leading `/` gets one, as url.URL does). */
export function probeUrl(r: Pick<HttpProbeRequest, 'scheme' | 'host' | 'port' | 'path'>): URL {
  const path = r.path === '' ? '/' : r.path.startsWith('/') ? r.path : `/${r.path}`;
  return new URL(`${r.scheme}://${joinHostPort(r.host, r.port)}${path}`);
}

/** The request headers: the probe's, then User-Agent and `Accept: *\/*` unless set (an empty Accept removes it). */
export function probeHeaders(r: Pick<HttpProbeRequest, 'headers' | 'userAgent'>): Record<string, string | string[]> {
  const out: Record<string, string[]> = {};
  const names = new Map<string, string>();
  for (const h of r.headers) {
    const key = h.name.toLowerCase();
    const name = names.get(key) ?? h.name;
    names.set(key, name);
    (out[name] ??= []).push(h.value);
  }
  if (!names.has('user-agent')) out['User-Agent'] = [r.userAgent];
  const accept = names.get('accept');
  if (accept === undefined) out['Accept'] = ['*/*'];
  else if ((out[accept] ?? []).every((v) => v === '')) delete out[accept];
  return out;
}

interface Response {
  readonly status: number;
  readonly location: string | undefined;
  readonly body: string;
}

function getOnce(url: URL, headers: Record<string, string | string[]>, signal: AbortSignal): Promise<Response> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const hostHeader = Object.entries(headers).find(([k]) => k.toLowerCase() === 'host')?.[1];
    const req = send(
      url,
      {
        method: 'GET',
        headers,
        signal,
        agent: false,
        ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
        ...(hostHeader !== undefined ? { setHost: false } : {}),
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < MAX_BODY_BYTES) chunks.push(c.subarray(0, MAX_BODY_BYTES - size));
          size += c.length;
        });
        res.once('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString('utf8') }));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** Runs one HTTP probe; never throws (errors are failures with Go's texts). */
export async function httpProbe(r: HttpProbeRequest, timeoutMs: number, signal?: AbortSignal): Promise<HandlerOutcome> {
  const first = probeUrl(r);
  const headers = probeHeaders(r);
  const timeout = AbortSignal.timeout(timeoutMs);
  const all = signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
  let url = first;
  for (let hops = 0; ; hops++) {
    let res: Response;
    try {
      res = await getOnce(url, headers, all);
    } catch (e) {
      return { result: 'failure', output: `Get ${JSON.stringify(url.href)}: ${clientError(url, e, timeout.aborted)}` };
    }
    if (res.status >= 300 && res.status < 400 && res.location !== undefined) {
      let next: URL;
      try {
        next = new URL(res.location, url);
      } catch {
        return { result: 'warning', output: `Probe terminated redirects, Response body: ${res.body}` };
      }
      if (next.hostname === first.hostname && hops < MAX_REDIRECTS) {
        url = next;
        continue;
      }
      if (hops >= MAX_REDIRECTS) return { result: 'failure', output: `Get ${JSON.stringify(next.href)}: stopped after 10 redirects` };
    }
    if (res.status >= 200 && res.status < 400) {
      if (res.status >= 300) return { result: 'warning', output: `Probe terminated redirects, Response body: ${res.body}` };
      return { result: 'success', output: res.body };
    }
    return { result: 'failure', output: `HTTP probe failed with statuscode: ${res.status}` };
  }
}

function clientError(url: URL, e: unknown, timedOut: boolean): string {
  if (timedOut) return 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)';
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^E(CONNREFUSED|HOSTUNREACH|NETUNREACH|ADDRNOTAVAIL)$/.test(code)) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return goDialError(joinHostPort(host, Number(url.port || (url.protocol === 'https:' ? 443 : 80))), e, false);
  }
  if (code === 'ECONNRESET') return 'read: connection reset by peer';
  return e instanceof Error ? e.message : String(e);
}
