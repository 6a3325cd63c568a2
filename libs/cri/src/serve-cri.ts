/**
 * serveCri(): puts any RuntimeService & ImageService implementation behind a real gRPC server on a
 * unix socket, so a CRI client (splitlet's, crictl, a kubelet) can talk to it.
 */
import { once } from 'node:events';
import { lstatSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { GrpcStatusOf, isCriError, parseCriErrorCode } from './cri-error.js';
import { loadCriServices } from './proto.js';
import { CriMethods, CriStreamingMethods, type CallOptions, type CriMethod, type CriServiceName, type ImageService, type RuntimeService } from './services.js';
import { wireBytesOf } from './wire-bytes.js';

/** A running CRI gRPC server. */
export interface CriServer {
  /** The socket file the server listens on. */
  readonly socketPath: string;
  /** `unix://<socketPath>`, ready for `GrpcRuntimeService.connect`. */
  readonly endpoint: string;
  /**
   * Stops accepting calls, waits up to `graceMs` (default 1000) for running calls, then cancels the
   * rest (open event streams included) and removes the socket file. Idempotent. It does not close `impl`.
   */
  close(graceMs?: number): Promise<void>;
}

type AnyImpl = Record<string, (request: unknown, options?: CallOptions) => unknown>;

/** The gRPC status for anything an implementation throws: a CriError keeps its code; anything else is UNKNOWN. */
function toStatus(error: unknown): Partial<grpc.StatusObject> {
  if (isCriError(error)) {
    const details = typeof (error as { details?: unknown }).details === 'string' ? (error as { details: string }).details : error.message;
    return { code: GrpcStatusOf[error.code], details };
  }
  const code = typeof (error as { code?: unknown })?.code === 'string' ? parseCriErrorCode((error as { code: string }).code) : undefined;
  const details = error instanceof Error ? error.message : String(error);
  return { code: code === undefined ? grpc.status.UNKNOWN : GrpcStatusOf[code], details };
}

/** The handler's options; `signal` is made on first read (most handlers never read it: an AbortSignal is not free). */
function callOptions(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>, signal: () => AbortSignal): CallOptions {
  const deadline = call.getDeadline();
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  const deadlineMs = Number.isFinite(at) && at > 0 ? { deadlineMs: Math.max(0, at - Date.now()) } : {};
  return {
    get signal(): AbortSignal {
      return signal();
    },
    ...deadlineMs,
  };
}

function unaryHandler(impl: AnyImpl, method: CriMethod): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    // grpc-js reports 'cancelled' when the call's stream closes, also after a call that answered:
    // only a call still running is aborted (abort() builds a DOMException with its stack — with the
    // controller made for every call, ~1.5 CPU ms per pod in the simulator's profile).
    let abort: AbortController | undefined;
    let cancelled = false;
    let answered = false;
    const signal = (): AbortSignal => {
      if (abort === undefined) {
        abort = new AbortController();
        if (cancelled) abort.abort();
      }
      return abort.signal;
    };
    call.on('cancelled', () => {
      if (answered) return;
      cancelled = true;
      abort?.abort();
    });
    const answer: grpc.sendUnaryData<unknown> = (error, response) => {
      answered = true;
      callback(error, response);
    };
    let result: unknown;
    try {
      const fn = impl[method];
      if (fn === undefined) throw Object.assign(new Error(`${method} is not implemented`), { code: 'Unimplemented' });
      result = fn.call(impl, call.request, callOptions(call, signal));
    } catch (e) {
      answer(toStatus(e));
      return;
    }
    Promise.resolve(result).then(
      (response) => answer(null, response),
      (e: unknown) => answer(toStatus(e)),
    );
  };
}

function streamHandler(impl: AnyImpl, method: CriMethod): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const abort = new AbortController();
    call.on('cancelled', () => abort.abort());
    const run = async (): Promise<void> => {
      const fn = impl[method];
      if (fn === undefined) throw Object.assign(new Error(`${method} is not implemented`), { code: 'Unimplemented' });
      const stream = fn.call(
        impl,
        call.request,
        callOptions(call, () => abort.signal),
      ) as AsyncIterable<unknown> & { established?: Promise<void> };
      if (stream.established !== undefined) await stream.established;
      call.sendMetadata(new grpc.Metadata()); // tells the client the subscription is live
      for await (const item of stream) {
        if (abort.signal.aborted) break;
        // Flow control: a client slower than the stream makes its items wait in the implementation's
        // queue (which bounds it) rather than in gRPC's unbounded write buffer.
        if (!call.write(item)) await drained(call, abort.signal);
      }
      if (!abort.signal.aborted) call.end();
    };
    run().catch((e: unknown) => {
      if (!abort.signal.aborted) call.emit('error', toStatus(e));
    });
  };
}

/** Resolves once a server stream can take more writes, or when the call is cancelled. */
function drained(call: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  return once(call, 'drain', { signal }).then(
    () => undefined,
    () => undefined,
  );
}

/**
 * Serves `impl` as `runtime.v1.RuntimeService` and `runtime.v1.ImageService` on `unix://<socketPath>`.
 * A stale socket file at the path is replaced (any other file is an error). Thrown CriErrors become
 * their gRPC status codes; other errors become UNKNOWN. Each handler gets a `signal` that aborts when
 * the client cancels, and the client's remaining deadline as `deadlineMs`.
 */
export async function serveCri(impl: RuntimeService & ImageService, socketPath: string): Promise<CriServer> {
  const ctors = loadCriServices();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': 16 * 1024 * 1024,
    'grpc.max_send_message_length': 16 * 1024 * 1024,
  });
  const target = impl as unknown as AnyImpl;
  for (const serviceName of ['RuntimeService', 'ImageService'] as const satisfies CriServiceName[]) {
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const method of Object.keys(CriMethods) as CriMethod[]) {
      if (CriMethods[method].service !== serviceName) continue;
      handlers[method] = CriStreamingMethods.has(method) ? streamHandler(target, method) : unaryHandler(target, method);
    }
    server.addService(sendingWireBytes(ctors[serviceName].service), handlers);
  }

  removeStaleSocket(socketPath);
  const endpoint = `unix://${socketPath}`;
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => {
      if (error === null) resolve();
      else reject(new Error(`cannot serve CRI on ${endpoint}: ${error.message}`, { cause: error }));
    });
  });

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    endpoint,
    close(graceMs = 1000): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        let done = false;
        const finish = (): void => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          server.forceShutdown();
          finish();
        }, graceMs);
        server.tryShutdown(finish);
      }).then(() => {
        try {
          removeStaleSocket(socketPath);
        } catch {
          // Not a socket any more: someone else owns the path now; leave it.
        }
      });
      return closing;
    },
  };
}

/** The service with each response serializer sending the bytes a response carries (see withWireBytes) as they are. */
function sendingWireBytes(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service)) {
    const encode = method.responseSerialize;
    out[name] = {
      ...method,
      responseSerialize: (response: unknown) => {
        const bytes = wireBytesOf(response);
        return bytes === undefined ? encode(response) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
    };
  }
  return out;
}

function removeStaleSocket(path: string): void {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!isSocket) throw new Error(`cannot serve CRI on ${path}: the path exists and is not a socket`);
  unlinkSync(path);
}

/** A CRI implementation served on a socket by {@link serveCriOwned}, closed together with its server. */
export interface OwnedCriServer {
  readonly server: CriServer;
  /** `unix:///…/cri.sock`: pass it to `GrpcRuntimeService.connect({ endpoint })`. */
  readonly endpoint: string;
  /** Closes the server, then the implementation, then removes the temp directory. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves `impl` on `socketPath`, by default `cri.sock` in a new temp directory (removed on close),
 * and ties `closeImpl` to the server's close: the helper behind `startFakeCri` (tests) and the
 * simulator's `startSimCri`. If serving fails, `closeImpl` runs and the error is rethrown.
 */
export async function serveCriOwned(impl: RuntimeService & ImageService, closeImpl: () => Promise<void>, socketPath?: string): Promise<OwnedCriServer> {
  const dir = socketPath === undefined ? mkdtempSync(path.join(tmpdir(), 'splitlet-cri-')) : undefined;
  const removeDir = (): void => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  };
  let server: CriServer;
  try {
    server = await serveCri(impl, socketPath ?? path.join(dir as string, 'cri.sock'));
  } catch (e) {
    await closeImpl();
    removeDir();
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    server,
    endpoint: server.endpoint,
    close: () =>
      (closing ??= (async () => {
        await server.close(100);
        await closeImpl();
        removeDir();
      })()),
  };
}
