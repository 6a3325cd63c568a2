/**
 * instrument(): spans and per-call metrics hooks for any RuntimeService/ImageService, by one Proxy.
 *
 * Models the kubelet's otelgrpc client interceptors (cri-client) for spans and
 * pkg/kubelet/kuberuntime/instrumented_services.go for the runtime_operations_* hook.
 */
import { errorMessage } from '@splitlet/api';
import { SpanKind, SpanStatusCode, context, trace, type Span, type Tracer } from '@opentelemetry/api';
import { GrpcStatusOf, isCriError } from './cri-error.js';
import { CriMethods, criFullMethodName, isCriMethod, type CriMethod, type CriServiceName } from './services.js';

/** What {@link InstrumentOptions.onCall} receives after every RPC. */
export interface CriCallRecord {
  /** `RuntimeService` or `ImageService`. */
  service: CriServiceName;
  /** The RPC, e.g. `RunPodSandbox`. */
  method: CriMethod;
  /** The kubelet's `operation_type` label, e.g. `run_podsandbox`. */
  operation: string;
  /** Wall time of the call (for a stream: until it ended). */
  durationMs: number;
  /** The failure, if the call failed (a CriError for any splitlet implementation). */
  error?: unknown;
}

/** Options of {@link instrument}. */
export interface InstrumentOptions {
  /**
   * Creates the CLIENT spans (without an installed SDK, spans are no-ops).
   * @default `trace.getTracer('@splitlet/cri')` from the global OpenTelemetry API
   */
  tracer?: Tracer;
  /**
   * Called once per finished RPC (runtime_operations_total / _errors_total / _duration_seconds).
   * It must not throw; an exception is swallowed so metrics never break a call.
   */
  onCall?: (record: CriCallRecord) => void;
}

const GRPC_OK = 0;
const GRPC_UNKNOWN = 2;

function grpcStatusOf(error: unknown): number {
  return isCriError(error) ? (GrpcStatusOf[error.code] ?? GRPC_UNKNOWN) : GRPC_UNKNOWN;
}

/**
 * Wraps `service` so every CRI RPC gets a CLIENT span named by its gRPC full method
 * (`runtime.v1.RuntimeService/RunPodSandbox`) with `rpc.system=grpc`, `rpc.service`, `rpc.method` and
 * `rpc.grpc.status_code`; a failure is recorded on the span with status ERROR. The call runs inside
 * the span's context, so the client propagates it to the runtime. Non-RPC members (`close`, …) pass
 * through. The wrapper adds no state: wrap once and share it.
 */
export function instrument<T extends object>(service: T, options: InstrumentOptions): T {
  const { onCall } = options;
  const tracer = options.tracer ?? trace.getTracer('@splitlet/cri');
  const wrappers = new Map<CriMethod, (...args: unknown[]) => unknown>();

  const finish = (span: Span, method: CriMethod, started: number, error?: unknown): void => {
    const status = error === undefined ? GRPC_OK : grpcStatusOf(error);
    span.setAttribute('rpc.grpc.status_code', status);
    if (error !== undefined) {
      span.recordException(error instanceof Error ? error : new Error(errorMessage(error)));
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
    }
    span.end();
    if (onCall !== undefined) {
      const record: CriCallRecord = {
        service: CriMethods[method].service,
        method,
        operation: CriMethods[method].operation,
        durationMs: performance.now() - started,
      };
      if (error !== undefined) record.error = error;
      try {
        onCall(record);
      } catch {
        // A metrics hook must never fail the RPC it observes.
      }
    }
  };

  const wrap = (method: CriMethod, fn: (...args: unknown[]) => unknown): ((...args: unknown[]) => unknown) => {
    const { service: serviceName } = CriMethods[method];
    return (...args: unknown[]): unknown => {
      const started = performance.now();
      const span = tracer.startSpan(criFullMethodName(method), {
        kind: SpanKind.CLIENT,
        attributes: { 'rpc.system': 'grpc', 'rpc.service': `runtime.v1.${serviceName}`, 'rpc.method': method },
      });
      const ctx = trace.setSpan(context.active(), span);
      let result: unknown;
      try {
        result = context.with(ctx, () => fn.apply(service, args));
      } catch (e) {
        finish(span, method, started, e);
        throw e;
      }
      if (result instanceof Promise) {
        return result.then(
          (value: unknown) => {
            finish(span, method, started);
            return value;
          },
          (e: unknown) => {
            finish(span, method, started, e);
            throw e;
          },
        );
      }
      if (isAsyncIterable(result)) return instrumentStream(result, (e) => finish(span, method, started, e));
      finish(span, method, started);
      return result;
    };
  };

  return new Proxy(service, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (!isCriMethod(prop)) return (value as (...a: unknown[]) => unknown).bind(target);
      let wrapper = wrappers.get(prop);
      if (wrapper === undefined) {
        wrapper = wrap(prop, value as (...a: unknown[]) => unknown);
        wrappers.set(prop, wrapper);
      }
      return wrapper;
    },
  });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/**
 * The same stream (its other members, e.g. `established`, are inherited), with `done` called once
 * when it ends, fails or is abandoned.
 */
function instrumentStream<S extends AsyncIterable<unknown>>(stream: S, done: (error?: unknown) => void): S {
  let finished = false;
  const once = (error?: unknown): void => {
    if (finished) return;
    finished = true;
    done(error);
  };
  const wrapped = Object.create(stream) as S;
  Object.defineProperty(wrapped, Symbol.asyncIterator, {
    value: () => {
      const it = stream[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const r = await it.next();
            if (r.done === true) once();
            return r;
          } catch (e) {
            once(e);
            throw e;
          }
        },
        async return(value?: unknown) {
          once();
          return it.return !== undefined ? it.return(value) : { value: undefined, done: true as const };
        },
        [Symbol.asyncIterator]() {
          return this;
        },
      };
    },
  });
  return wrapped;
}
