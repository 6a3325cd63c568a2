/**
 * `GET pods/<name>/log`: a container's log, read from its node over the bus (cri-adapter's
 * `sl.<node>.rpc.logs.read`, the kubelet's `/containerLogs` endpoint), printed as the kubelet prints
 * it — CRI records decoded, partial records joined, stdout and stderr merged, `timestamps`,
 * `tailLines`, `sinceSeconds`/`sinceTime`, `limitBytes` — and with `follow` streamed (chunked) until
 * the container stops running or the client goes away.
 *
 * Models pkg/registry/core/pod/rest/log.go and strategy.go (LogLocation, validateContainer,
 * ValidatePodLogOptions) on the API server side, and on the node side the kubelet's
 * validateContainerLogStatus (which run's log, and its error texts, answered as 400) and
 * kuberuntime/logs ReadLogs (tail first, then since; follow ends when the container is not running).
 * One difference: the node's status comes from the API pod (what the node reported), not the
 * kubelet's own cache.
 */
import type { ServerResponse } from 'node:http';
import type { ContainerLogsReply, ContainerLogsRequest } from '@splitlet/api';
import { parseCriLogLine } from '@splitlet/cri/log';
import { sleep } from '@splitlet/service';
import type { KubeObject } from '../storage/object-store.js';
import { ApiError, type StatusCause } from './api-errors.js';

/** Reads one chunk of a container run's CRI log file on `node` (the bus request). */
export type NodeLogReader = (node: string, req: ContainerLogsRequest, signal: AbortSignal) => Promise<ContainerLogsReply>;

/** Why a read failed, as the bus reports it: the node has no such file, or nobody serves the node. */
export interface NodeLogFailure {
  readonly kind: 'NotFound' | 'NoResponders' | 'Other';
  readonly message: string;
}

/** The options of a log request (PodLogOptions from the query). */
export interface PodLogOptions {
  readonly container: string;
  readonly follow: boolean;
  readonly previous: boolean;
  readonly timestamps: boolean;
  readonly tailLines?: number;
  readonly sinceSeconds?: number;
  readonly sinceTime?: string;
  readonly limitBytes?: number;
}

interface ContainerStatusLike {
  name?: string;
  restartCount?: number;
  containerID?: string;
  state?: { running?: object | null; waiting?: { reason?: string } | null; terminated?: { containerID?: string } | null };
  lastState?: { terminated?: { containerID?: string } | null };
}

interface PodLike {
  metadata?: { name?: string; namespace?: string; uid?: string };
  spec?: { nodeName?: string; containers?: { name: string }[]; initContainers?: { name: string }[]; ephemeralContainers?: { name: string }[] };
  status?: { containerStatuses?: ContainerStatusLike[]; initContainerStatuses?: ContainerStatusLike[]; ephemeralContainerStatuses?: ContainerStatusLike[] };
}

const POLL_MS = 500;

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw ApiError.badRequest(`${name}: invalid value ${JSON.stringify(v)}: must be an integer`);
  return n;
}

const boolParam = (q: URLSearchParams, name: string): boolean => q.get(name) === 'true' || q.get(name) === '1';

/** PodLogOptions from the query, validated as ValidatePodLogOptions does (422 with the field). */
export function parsePodLogOptions(q: URLSearchParams, podName: string): Omit<PodLogOptions, 'container'> & { container: string | undefined } {
  const tailLines = intParam(q, 'tailLines');
  const sinceSeconds = intParam(q, 'sinceSeconds');
  const limitBytes = intParam(q, 'limitBytes');
  const sinceTime = q.get('sinceTime') ?? undefined;
  const causes: StatusCause[] = [];
  if (tailLines !== undefined && tailLines < 0)
    causes.push({ reason: 'FieldValueInvalid', field: 'tailLines', message: `Invalid value: ${tailLines}: must be greater than or equal to 0` });
  if (limitBytes !== undefined && limitBytes < 1)
    causes.push({ reason: 'FieldValueInvalid', field: 'limitBytes', message: `Invalid value: ${limitBytes}: must be greater than 0` });
  if (sinceSeconds !== undefined && sinceTime !== undefined)
    causes.push({ reason: 'FieldValueForbidden', field: '', message: 'Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified' });
  else if (sinceSeconds !== undefined && sinceSeconds < 1)
    causes.push({ reason: 'FieldValueInvalid', field: 'sinceSeconds', message: `Invalid value: ${sinceSeconds}: must be greater than 0` });
  if (sinceTime !== undefined && Number.isNaN(Date.parse(sinceTime))) throw ApiError.badRequest(`sinceTime: invalid value ${JSON.stringify(sinceTime)}: not an RFC 3339 time`);
  if (causes.length > 0) throw ApiError.invalid('PodLogOptions', podName, causes);
  const container = q.get('container') ?? '';
  return {
    container: container === '' ? undefined : container,
    follow: boolParam(q, 'follow'),
    previous: boolParam(q, 'previous'),
    timestamps: boolParam(q, 'timestamps'),
    ...(tailLines === undefined ? {} : { tailLines }),
    ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
    ...(sinceTime === undefined ? {} : { sinceTime }),
    ...(limitBytes === undefined ? {} : { limitBytes }),
  };
}

/** The container a log request is for (validateContainer): the only one when none is named; 400 otherwise. */
export function logContainer(pod: KubeObject, requested: string | undefined): string {
  const p = pod as PodLike;
  const name = p.metadata?.name ?? '';
  const containers = (p.spec?.containers ?? []).map((c) => c.name);
  const all = [...(p.spec?.initContainers ?? []).map((c) => c.name), ...containers, ...(p.spec?.ephemeralContainers ?? []).map((c) => c.name)];
  if (requested === undefined) {
    if (containers.length === 1) return containers[0] as string;
    if (containers.length === 0) throw ApiError.badRequest(`a container name must be specified for pod ${name}`);
    throw ApiError.badRequest(`a container name must be specified for pod ${name}, choose one of: [${all.join(' ')}]`);
  }
  if (!all.includes(requested)) throw ApiError.badRequest(`container ${requested} is not valid for pod ${name}`);
  return requested;
}

function statusOf(pod: KubeObject, container: string): ContainerStatusLike | undefined {
  const s = (pod as PodLike).status ?? {};
  return [...(s.containerStatuses ?? []), ...(s.initContainerStatuses ?? []), ...(s.ephemeralContainerStatuses ?? [])].find((c) => c.name === container);
}

/**
 * Which run's log file to read (its restart count, the `<n>.log` name), as the kubelet's
 * validateContainerLogStatus picks the container; its error texts (400) otherwise. A run that ended
 * while the next one waits to start (CrashLoopBackOff) is the newest file: its status moved to
 * `lastState` and the restart count was not raised yet.
 */
export function logAttempt(pod: KubeObject, container: string, previous: boolean): number {
  const podName = (pod as PodLike).metadata?.name ?? '';
  const st = statusOf(pod, container);
  const q = (s: string): string => JSON.stringify(s);
  if (st === undefined) throw ApiError.badRequest(`container ${q(container)} in pod ${q(podName)} is not available`);
  const restarts = st.restartCount ?? 0;
  const running = st.state?.running ?? undefined;
  const terminated = st.state?.terminated ?? undefined;
  const lastTerminated = st.lastState?.terminated ?? undefined;
  const current = running !== undefined || terminated !== undefined;
  if (previous) {
    if (lastTerminated === undefined) throw ApiError.badRequest(`previous terminated container ${q(container)} in pod ${q(podName)} not found`);
    return current ? restarts - 1 : restarts;
  }
  if (current) return restarts;
  if (lastTerminated !== undefined) return restarts;
  const reason = st.state?.waiting?.reason;
  if (reason === 'ErrImagePull') throw ApiError.badRequest(`container ${q(container)} in pod ${q(podName)} is waiting to start: image can't be pulled`);
  if (reason === 'ImagePullBackOff') throw ApiError.badRequest(`container ${q(container)} in pod ${q(podName)} is waiting to start: trying and failing to pull image`);
  if (reason !== undefined && reason !== '') throw ApiError.badRequest(`container ${q(container)} in pod ${q(podName)} is waiting to start: ${reason}`);
  throw ApiError.badRequest(`container ${q(container)} in pod ${q(podName)} is waiting to start - no logs yet`);
}

/** True while `attempt` of the container is the one running (follow goes on). */
export function stillRunning(pod: KubeObject | undefined, uid: string, container: string, attempt: number): boolean {
  if (pod === undefined || (pod as PodLike).metadata?.uid !== uid) return false;
  const st = statusOf(pod, container);
  return st !== undefined && (st.restartCount ?? 0) === attempt && st.state?.running !== undefined && st.state.running !== null;
}

/** CRI log bytes → the lines the kubelet writes, with a cut-off time and the timestamp prefix. */
export class CriLogPrinter {
  #carry = Buffer.alloc(0);
  #partial: Buffer[] = [];
  #partialTime = '';
  readonly #sinceMs: number | undefined;
  readonly #timestamps: boolean;

  constructor(opts: { sinceMs?: number; timestamps: boolean }) {
    this.#sinceMs = opts.sinceMs;
    this.#timestamps = opts.timestamps;
  }

  /** The output for `data` (bytes of the file in order); an unfinished line waits for the next call. */
  push(data: Buffer): Buffer {
    const text = this.#carry.length === 0 ? data : Buffer.concat([this.#carry, data]);
    const out: Buffer[] = [];
    let start = 0;
    for (;;) {
      const nl = text.indexOf(0x0a, start);
      if (nl < 0) break;
      const line = text.subarray(start, nl + 1);
      start = nl + 1;
      const b = this.#line(line);
      if (b !== undefined) out.push(b);
    }
    this.#carry = Buffer.from(text.subarray(start));
    return Buffer.concat(out);
  }

  /** What is left at the end of the stream (a last line without its newline). */
  flush(): Buffer {
    const out: Buffer[] = [];
    if (this.#carry.length > 0) {
      const b = this.#line(this.#carry);
      this.#carry = Buffer.alloc(0);
      if (b !== undefined) out.push(b);
    }
    if (this.#partial.length > 0) {
      out.push(this.#emit(this.#partialTime, Buffer.concat(this.#partial)));
      this.#partial = [];
    }
    return Buffer.concat(out);
  }

  #line(raw: Buffer): Buffer | undefined {
    const r = parseCriLogLine(raw);
    if (r === undefined) return undefined; // kubelet: "Failed with err parsing log line" — skipped
    if (r.partial) {
      if (this.#partial.length === 0) this.#partialTime = r.time;
      this.#partial.push(r.content);
      return undefined;
    }
    const time = this.#partial.length > 0 ? this.#partialTime : r.time;
    const content = this.#partial.length > 0 ? Buffer.concat([...this.#partial, r.content]) : r.content;
    this.#partial = [];
    return this.#emit(time, content);
  }

  #emit(time: string, content: Buffer): Buffer {
    if (this.#sinceMs !== undefined) {
      const t = Date.parse(time);
      if (!Number.isNaN(t) && t < this.#sinceMs) return Buffer.alloc(0);
    }
    return this.#timestamps ? Buffer.concat([Buffer.from(`${time} `), content]) : content;
  }
}

/** What {@link streamPodLog} needs. */
export interface StreamPodLogDeps {
  readonly read: NodeLogReader;
  /** The pod as stored now (follow asks whether the container still runs); undefined once deleted. */
  readonly currentPod: () => Promise<KubeObject | undefined>;
  /** Classifies a read failure. */
  readonly failure: (e: unknown) => NodeLogFailure;
  readonly now: () => number;
  /** Ends the stream (the client left, or shutdown). */
  readonly signal: AbortSignal;
  /** @default 500 ms */
  readonly pollMs?: number;
}

/**
 * Serves the log of `pod` (already read from storage) on `res`. Errors before the first byte are
 * thrown as ApiErrors (the handler answers with a Status); once streaming, a failure ends the stream.
 */
export async function streamPodLog(deps: StreamPodLogDeps, res: ServerResponse, pod: KubeObject, opts: PodLogOptions): Promise<void> {
  const p = pod as PodLike;
  const node = p.spec?.nodeName ?? '';
  if (node === '') {
    // LogLocation: a pod without a host has no location, and StreamObject answers a nil stream with 204 No Content.
    res.writeHead(204);
    res.end();
    return;
  }
  const podName = p.metadata?.name ?? '';
  const namespace = p.metadata?.namespace ?? 'default';
  const uid = p.metadata?.uid ?? '';
  const attempt = logAttempt(pod, opts.container, opts.previous);
  const sinceMs = opts.sinceTime !== undefined ? Date.parse(opts.sinceTime) : opts.sinceSeconds !== undefined ? deps.now() - opts.sinceSeconds * 1000 : undefined;
  const printer = new CriLogPrinter({ timestamps: opts.timestamps, ...(sinceMs === undefined ? {} : { sinceMs }) });
  const base = { type: 'kubelet.logs.Read.v1', namespace, podName, podUid: uid, container: opts.container, attempt } as const;
  let offset: number | undefined;
  let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;

  /** Reads one chunk (tailLines on the very first); returns what it prints and whether the file has more now. */
  const readChunk = async (): Promise<{ printed: Buffer; more: boolean }> => {
    const tail = offset === undefined && opts.tailLines !== undefined ? { tailLines: opts.tailLines } : {};
    const r = await deps.read(node, { ...base, ...(offset !== undefined ? { offset } : {}), ...tail }, deps.signal);
    offset = r.nextOffset;
    const bytes = Buffer.from(r.data, 'base64');
    return { printed: printer.push(bytes), more: bytes.length > 0 && r.nextOffset < r.size };
  };
  const nodeError = (e: unknown): ApiError => {
    const f = deps.failure(e);
    const q = (s: string): string => JSON.stringify(s);
    if (f.kind === 'NotFound') {
      return opts.previous
        ? ApiError.badRequest(`previous terminated container ${q(opts.container)} in pod ${q(podName)} not found`)
        : ApiError.badRequest(`container ${q(opts.container)} in pod ${q(podName)} is waiting to start - no logs yet`);
    }
    if (f.kind === 'NoResponders') return new ApiError(503, 'ServiceUnavailable', `the node ${node} does not answer log requests: no cri-adapter of node ${node} on the bus`);
    return new ApiError(500, 'InternalError', `reading the log of container ${opts.container} of pod ${namespace}/${podName} from node ${node}: ${f.message}`);
  };

  // The first chunk before the answer starts: a failure here is the request's Status.
  let first: { printed: Buffer; more: boolean };
  try {
    first = await readChunk();
  } catch (e) {
    throw nodeError(e);
  }
  /** Writes within limitBytes; false once the limit is reached (the stream ends there). */
  const write = (c: Buffer): boolean => {
    if (budget <= 0) return false;
    const piece = c.length > budget ? c.subarray(0, budget) : c;
    budget -= piece.length;
    if (piece.length > 0) res.write(piece);
    return budget > 0;
  };
  /** Everything the file has now, chunk by chunk. */
  const drain = async (): Promise<boolean> => {
    for (;;) {
      const c = await readChunk();
      if (!write(c.printed)) return false;
      if (!c.more) return true;
    }
  };
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked', ...(opts.follow ? { 'Cache-Control': 'no-cache' } : {}) });
  if (opts.follow) res.flushHeaders();
  try {
    if (!write(first.printed)) return;
    if (first.more && !(await drain())) return;
    // Follow: more bytes as they come, until the run ends (a last read after that) or the client leaves.
    let running = opts.follow && stillRunning(await deps.currentPod(), uid, opts.container, attempt);
    while (running && !deps.signal.aborted) {
      if (!(await sleep(deps.pollMs ?? POLL_MS, deps.signal))) break;
      running = stillRunning(await deps.currentPod(), uid, opts.container, attempt);
      if (!(await drain())) return;
    }
    if (!deps.signal.aborted) write(printer.flush());
  } catch {
    // As the kubelet's stream: a failure once the log is flowing just ends it.
  } finally {
    res.end();
  }
}
