/**
 * GrpcRuntimeService: the CRI client, over @grpc/grpc-js on the runtime's unix socket.
 *
 * Models k8s.io/cri-client/pkg/remote_runtime.go and remote_image.go (one connection, per-call
 * timeouts defaulting to runtimeRequestTimeout, 16 MiB messages, no timeout on the event stream).
 */
import { existsSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { context, propagation } from '@opentelemetry/api';
import { AsyncQueue } from './async-queue.js';
import { CriError, criErrorCodeFromGrpc } from './cri-error.js';
import { loadCriServices } from './proto.js';
import {
  CriMethods,
  CriStreamingMethods,
  type CallOptions,
  type ContainerEventStream,
  type CriMethod,
  type CriServiceName,
  type ImageService,
  type RuntimeService,
} from './services.js';
import type { ContainerEventResponse } from './types.js';

/** Options of {@link GrpcRuntimeService.connect}. */
export interface GrpcRuntimeServiceOptions {
  /** The runtime's socket: `unix:///run/containerd/containerd.sock` (an absolute path alone is accepted too). */
  endpoint: string;
  /**
   * Default timeout of each unary call, in ms (per call: `CallOptions.deadlineMs`).
   * @default 120000 (the kubelet's runtimeRequestTimeout, 2 min)
   */
  timeoutMs?: number;
  /**
   * How long `connect` waits for the channel to become ready before failing with `Unavailable`.
   * @default 10000
   */
  connectTimeoutMs?: number;
  /** Aborts `connect`. */
  signal?: AbortSignal;
  /**
   * Largest message sent or received.
   * @default 16 MiB (the kubelet's maxMsgSize)
   */
  maxMessageBytes?: number;
}

/** The kubelet's runtimeRequestTimeout. */
export const DEFAULT_CRI_TIMEOUT_MS = 120_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

type UnaryFn = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response: unknown) => void,
) => grpc.ClientUnaryCall;
type StreamFn = (request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions) => grpc.ClientReadableStream<unknown>;

const metadataSetter = {
  set(carrier: grpc.Metadata, key: string, value: string): void {
    carrier.set(key, value);
  },
};

/** Converts a grpc-js error (or anything thrown by grpc-js) into a CriError. */
export function criErrorFromGrpc(error: unknown, method?: string): CriError {
  const e = error as Partial<grpc.ServiceError> | undefined;
  const opts = method === undefined ? { cause: error } : { cause: error, method };
  if (typeof e?.code === 'number') {
    return new CriError(criErrorCodeFromGrpc(e.code), e.details ?? e.message ?? 'unknown error', opts);
  }
  return new CriError('Unknown', error instanceof Error ? error.message : String(error), opts);
}

/** Turns `unix:///p`, `unix:/p` or `/p` into the grpc-js target `unix:///p`. Other schemes pass through. */
function normalizeEndpoint(endpoint: string): { target: string; socketPath: string | undefined } {
  if (endpoint.startsWith('/')) return { target: `unix://${endpoint}`, socketPath: endpoint };
  const m = /^unix:(?:\/\/)?(\/.*)$/.exec(endpoint);
  if (m?.[1] !== undefined) return { target: `unix://${m[1]}`, socketPath: m[1] };
  return { target: endpoint, socketPath: undefined };
}

/**
 * The CRI client: implements {@link RuntimeService} and {@link ImageService} over one gRPC channel.
 * Create it with {@link GrpcRuntimeService.connect}; `close()` it when done. Safe for concurrent use.
 * Every failure is a {@link CriError}; a call past its deadline fails with `DeadlineExceeded`, an
 * aborted one with `Canceled`. The W3C trace context of the active span is sent in the gRPC
 * metadata (when a propagator is installed), as the kubelet's otelgrpc interceptor does.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the interface below declares the RPC methods installed on the prototype
export class GrpcRuntimeService {
  /** The endpoint this client dials, as given. */
  readonly endpoint: string;
  readonly #timeoutMs: number;
  readonly #clients: Record<CriServiceName, grpc.Client>;
  #closed = false;

  private constructor(endpoint: string, timeoutMs: number, clients: Record<CriServiceName, grpc.Client>) {
    this.endpoint = endpoint;
    this.#timeoutMs = timeoutMs;
    this.#clients = clients;
  }

  /**
   * Dials the runtime and waits until the channel is ready. Fails with a CriError `Unavailable`
   * naming the endpoint when it cannot connect within `connectTimeoutMs`, or `Canceled` on abort.
   */
  static async connect(options: GrpcRuntimeServiceOptions): Promise<GrpcRuntimeService> {
    const { target, socketPath } = normalizeEndpoint(options.endpoint);
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const maxBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    const ctors = loadCriServices();
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_receive_message_length': maxBytes,
      'grpc.max_send_message_length': maxBytes,
    };
    const credentials = grpc.credentials.createInsecure();
    const runtime = new ctors.RuntimeService(target, credentials, channelOptions);
    const image = new ctors.ImageService(target, credentials, { ...channelOptions, channelOverride: runtime.getChannel() });
    const client = new GrpcRuntimeService(options.endpoint, options.timeoutMs ?? DEFAULT_CRI_TIMEOUT_MS, {
      RuntimeService: runtime,
      ImageService: image,
    });
    try {
      await waitForReady(runtime, connectTimeoutMs, options.signal);
    } catch (e) {
      client.close();
      if (options.signal?.aborted === true) {
        throw new CriError('Canceled', `connecting to the CRI runtime at ${options.endpoint} was aborted`, { cause: e });
      }
      const hint = socketPath !== undefined && !existsSync(socketPath) ? ` (socket ${socketPath} does not exist)` : '';
      throw new CriError(
        'Unavailable',
        `cannot connect to the CRI runtime at ${options.endpoint} within ${connectTimeoutMs} ms${hint}: ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    }
    return client;
  }

  /** Closes the channel. In-flight calls fail with `Canceled`/`Unavailable`; later calls fail with `Unavailable`. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clients.ImageService.close();
    this.#clients.RuntimeService.close();
  }

  /** @internal Performs one unary RPC. */
  unary(method: CriMethod, request: unknown, options: CallOptions | undefined): Promise<unknown> {
    if (this.#closed) return Promise.reject(new CriError('Unavailable', `CRI client for ${this.endpoint} is closed`, { method }));
    const signal = options?.signal;
    if (signal?.aborted === true) return Promise.reject(new CriError('Canceled', 'call aborted before it started', { method }));
    const client = this.#clients[CriMethods[method].service];
    const fn = (client as unknown as Record<string, UnaryFn>)[method];
    if (fn === undefined) return Promise.reject(new CriError('Unimplemented', `no client method ${method}`, { method }));
    const deadline = Date.now() + (options?.deadlineMs ?? defaultDeadlineMs(method, request, this.#timeoutMs));
    return new Promise((resolve, reject) => {
      let call: grpc.ClientUnaryCall | undefined;
      const onAbort = (): void => call?.cancel();
      try {
        call = fn.call(client, request, outgoingMetadata(), { deadline }, (error, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (error !== null) reject(criErrorFromGrpc(error, method));
          else resolve(response);
        });
      } catch (e) {
        reject(criErrorFromGrpc(e, method));
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** @internal Starts one server-streaming RPC. */
  stream(method: CriMethod, request: unknown, options: CallOptions | undefined): ContainerEventStream {
    const signal = options?.signal;
    let call: grpc.ClientReadableStream<unknown> | undefined;
    let cancelledByUs = false;
    const cancel = (): void => {
      cancelledByUs = true;
      call?.cancel();
    };
    const queue = new AsyncQueue<ContainerEventResponse>(cancel);
    let establish!: { resolve: () => void; reject: (e: unknown) => void };
    const established = new Promise<void>((resolve, reject) => {
      establish = { resolve, reject };
    });
    established.catch(() => undefined); // the error also reaches the iterator; never unhandled
    const fail = (error: CriError): void => {
      establish.reject(error);
      queue.fail(error);
    };
    if (this.#closed) {
      fail(new CriError('Unavailable', `CRI client for ${this.endpoint} is closed`, { method }));
    } else if (signal?.aborted === true) {
      establish.reject(new CriError('Canceled', 'call aborted before it started', { method }));
      queue.end();
    } else {
      const client = this.#clients[CriMethods[method].service];
      const fn = (client as unknown as Record<string, StreamFn>)[method];
      const callOptions: grpc.CallOptions = options?.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs };
      try {
        if (fn === undefined) throw new CriError('Unimplemented', `no client method ${method}`, { method });
        call = fn.call(client, request, outgoingMetadata(), callOptions);
        call.on('metadata', () => establish.resolve());
        call.on('data', (item: ContainerEventResponse) => {
          establish.resolve();
          queue.push(item);
        });
        call.on('error', (error: grpc.ServiceError) => {
          if (cancelledByUs && error.code === grpc.status.CANCELLED) {
            establish.reject(criErrorFromGrpc(error, method));
            queue.end();
          } else {
            fail(criErrorFromGrpc(error, method));
          }
        });
        call.on('end', () => {
          establish.resolve();
          queue.end();
        });
        signal?.addEventListener('abort', cancel, { once: true });
        const detach = (): void => signal?.removeEventListener('abort', cancel);
        call.on('close', detach);
      } catch (e) {
        fail(e instanceof CriError ? e : criErrorFromGrpc(e, method));
      }
    }
    return Object.assign(Object.create(null) as object, {
      established,
      [Symbol.asyncIterator]: () => queue,
    });
  }
}

// One prototype method per RPC, generated from the method table (no hand-written copies to drift).
for (const method of Object.keys(CriMethods) as CriMethod[]) {
  Object.defineProperty(GrpcRuntimeService.prototype, method, {
    configurable: true,
    writable: true,
    value: CriStreamingMethods.has(method)
      ? function (this: GrpcRuntimeService, request: unknown, options?: CallOptions) {
          return this.stream(method, request, options);
        }
      : function (this: GrpcRuntimeService, request: unknown, options?: CallOptions) {
          return this.unary(method, request, options);
        },
  });
}

// The RPC methods above are installed on the prototype from the method table; this declaration tells
// TypeScript the class implements both interfaces.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface GrpcRuntimeService extends RuntimeService, ImageService {}

/**
 * The deadline of a call that gives none: the client's timeout, except for `ExecSync`, which the
 * kubelet gives its own `timeout` plus the runtime request timeout (to leave the runtime time to
 * clean up after a timed-out command), and no deadline at all when `timeout` is 0.
 *
 * Models k8s.io/cri-client/pkg/remote_runtime.go (ExecSync).
 */
export function defaultDeadlineMs(method: CriMethod, request: unknown, timeoutMs: number): number {
  if (method !== 'ExecSync') return timeoutMs;
  const seconds = Number((request as { timeout?: unknown } | null)?.timeout ?? 0);
  if (!Number.isFinite(seconds) || seconds <= 0) return Infinity;
  return timeoutMs + seconds * 1000;
}

function outgoingMetadata(): grpc.Metadata {
  const metadata = new grpc.Metadata();
  propagation.inject(context.active(), metadata, metadataSetter);
  return metadata;
}

function waitForReady(client: grpc.Client, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(new Error('aborted'));
      return;
    }
    const onAbort = (): void => reject(new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    client.waitForReady(Date.now() + timeoutMs, (error) => {
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined || error === null) resolve();
      else reject(error);
    });
  });
}
