/**
 * The http source: GET a manifest URL every `periodMs` (10 s timeout); the body is a single v1 Pod
 * or a v1 PodList.
 *
 * Models pkg/kubelet/config/http.go (sourceURL.run / extractFromURL). As there:
 * - a non-200 status or a transport error is an error and changes nothing;
 * - an empty body sends `SET []` (the source is seen) plus an error;
 * - a body identical to the last one is ignored;
 * - a body that parses but cannot be used is an error and changes nothing;
 * - after 3 consecutive failures the failure log drops to debug.
 * One deliberate difference: after an empty body the last body is forgotten, so the previous
 * manifest coming back is applied again (the kubelet would keep ignoring it).
 */
import type { Clock } from '@splitlet/service';
import { sleep } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { decodeManifest, MAX_CONFIG_LENGTH } from './manifest-decoder.js';
import type { SourceListing } from './listing.js';

/** The outcome of one poll, for tests and logs. */
export type PollOutcome = 'applied' | 'unchanged' | 'empty' | 'invalid' | 'failed';

/** Options of {@link HttpSource}. */
export interface HttpSourceOptions {
  readonly url: string;
  /** Extra request header (`staticPodURLHeader`); its value is never logged. */
  readonly header?: { readonly name: string; readonly value: string };
  readonly nodeName: string;
  /** `httpCheckFrequency`. @default 20000 */
  readonly periodMs?: number;
  /** Client timeout per request. @default 10000 */
  readonly timeoutMs?: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Receives each usable result (a SET) or manifest error; awaited before the next poll. */
  readonly onListing: (listing: SourceListing) => Promise<void>;
  /** Called after each poll (health by progress). */
  readonly onProgress?: () => void;
  /** Called on each failed poll (transport, status, empty or invalid body), for metrics. */
  readonly onError?: () => void;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

/** The URL without its password, for logs and events. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = 'REDACTED';
    return u.toString();
  } catch {
    return url;
  }
}

/** Reads a response body, refusing more than `limit` bytes. */
async function readBody(res: Response, limit: number): Promise<Uint8Array> {
  if (res.body === null) return new Uint8Array();
  const reader = (res.body as ReadableStream<Uint8Array>).getReader(); // fetch's body is bytes (typed ReadableStream<any>)
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new Error(`response body is more than ${limit} bytes (maxConfigLength)`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** A running http source. Create it, then `run(signal)`. */
export class HttpSource {
  readonly #o: HttpSourceOptions;
  readonly #safeUrl: string;
  #last: Uint8Array | undefined;
  #failureLogs = 0;

  constructor(options: HttpSourceOptions) {
    this.#o = options;
    this.#safeUrl = redactUrl(options.url);
  }

  /** Polls once. Never throws: failures are logged (with the kubelet's verbosity drop) and returned. */
  async poll(signal?: AbortSignal): Promise<PollOutcome> {
    let outcome: PollOutcome;
    let error: string | undefined;
    try {
      [outcome, error] = await this.#extract(signal);
    } catch (e) {
      // Only a shutdown interrupts delivery to PodConfig; report it as a failed poll.
      outcome = 'failed';
      error = e instanceof Error ? e.message : String(e);
    }
    if (error !== undefined) {
      this.#o.onError?.();
      // Manifest errors ('invalid', 'empty') are also reported through the listing; this is the log line.
      const fields = { url: this.#safeUrl, err: error };
      if (this.#failureLogs < 3) this.#o.logger.warn('failed to read pods from URL', fields);
      else if (this.#failureLogs === 3) this.#o.logger.warn('failed to read pods from URL; dropping verbosity of this message to debug', fields);
      else this.#o.logger.debug('failed to read pods from URL', fields);
      this.#failureLogs++;
    } else if (this.#failureLogs > 0) {
      this.#o.logger.info('successfully read pods from URL', { url: this.#safeUrl });
      this.#failureLogs = 0;
    }
    return outcome;
  }

  async #extract(signal: AbortSignal | undefined): Promise<[PollOutcome, string | undefined]> {
    const timeout = AbortSignal.timeout(this.#o.timeoutMs ?? 10_000);
    const headers: Record<string, string> = {};
    if (this.#o.header !== undefined) headers[this.#o.header.name] = this.#o.header.value;
    const doFetch = this.#o.fetch ?? globalThis.fetch;
    let data: Uint8Array;
    let res: Response;
    try {
      res = await doFetch(this.#o.url, { headers, signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]), redirect: 'follow' });
      data = await readBody(res, MAX_CONFIG_LENGTH);
    } catch (e) {
      const msg = timeout.aborted
        ? `request timed out after ${this.#o.timeoutMs ?? 10_000} ms`
        : e instanceof Error
          ? e.cause instanceof Error
            ? `${e.message}: ${e.cause.message}`
            : e.message
          : String(e);
      return ['failed', `${this.#safeUrl}: ${msg}`];
    }
    if (res.status !== 200) return ['failed', `${this.#safeUrl}: ${res.status} ${res.statusText}`.trimEnd()];
    if (data.byteLength === 0) {
      this.#last = undefined;
      const message = `zero-length data received from ${this.#safeUrl}`;
      await this.#o.onListing({ source: 'http', pods: [], errors: [{ kind: 'url', location: this.#safeUrl, message }] });
      return ['empty', message];
    }
    if (this.#last !== undefined && Buffer.compare(Buffer.from(data), Buffer.from(this.#last)) === 0) return ['unchanged', undefined];
    this.#last = data;
    const decoded = decodeManifest(Buffer.from(data).toString('utf8'), this.#o.nodeName, { kind: 'http', url: this.#o.url }, { multiDocument: false });
    if (!decoded.ok) {
      await this.#o.onListing({ source: 'http', errors: [{ kind: 'url', location: this.#safeUrl, message: decoded.message }] });
      return ['invalid', decoded.message];
    }
    await this.#o.onListing({ source: 'http', pods: decoded.pods.map((pod) => ({ pod, origin: this.#safeUrl })), errors: [] });
    return ['applied', undefined];
  }

  /** Polls now and then every period until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    do {
      await this.poll(signal);
      this.#o.onProgress?.();
    } while (await sleep(this.#o.periodMs ?? 20_000, signal, this.#o.clock));
  }
}
