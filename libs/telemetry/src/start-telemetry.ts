import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { context, propagation, trace, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { globalErrorHandler, loggingErrorHandler, setGlobalErrorHandler } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { isGlobalTracerProviderInstalled } from './global-provider.js';
import { LazyOtlpTraceExporter } from './lazy-otlp-exporter.js';
import { readOtelEnv, type Env, type OtelSettings, type SamplerName } from './otel-env.js';
import { LateSpanProcessor } from './span-processors.js';
import { ATTR_SERVICE_NAME } from './span-record.js';
import { TelemetryError, TelemetryErrorCodes } from './telemetry-error.js';

/**
 * Resource attribute names, spelled out rather than imported from @opentelemetry/semantic-conventions:
 * its ESM entry point would be a second copy beside the CommonJS one the SDK loads (~0.9 MiB of
 * heap a process). `host.name` is incubating there anyway.
 */
const ATTR_SERVICE_INSTANCE_ID = 'service.instance.id';
const ATTR_K8S_NODE_NAME = 'k8s.node.name';
const ATTR_HOST_NAME = 'host.name';

/** Options of {@link startTelemetry}. */
export interface TelemetryOptions {
  /** `service.name` of every span, e.g. `pod-worker`. Wins over `OTEL_RESOURCE_ATTRIBUTES`. */
  readonly serviceName: string;
  /** `k8s.node.name`, when the process serves one node. */
  readonly nodeName?: string;
  /** `service.instance.id`. @default a random UUID per process start */
  readonly instanceId?: string;
  /** `host.name`. @default `os.hostname()` */
  readonly hostName?: string;
  /** The environment holding the `OTEL_*` variables (the service's config passes `process.env`). */
  readonly env: Env;
  /**
   * Extra span processors, called for every sampled span (before the OTLP exporter), e.g. the
   * bus's span publisher. More can be added later with {@link Telemetry.addSpanProcessor}.
   */
  readonly spanProcessors?: readonly SpanProcessor[];
  /**
   * Receives SDK errors (failed exports and the like), which the SDK otherwise drops silently.
   * Typically `(e) => logger.warn('telemetry error', { err: e })`.
   */
  readonly onError?: (error: unknown) => void;
  /** How long {@link Telemetry.shutdown} waits for the final flush. @default 5000 */
  readonly shutdownTimeoutMs?: number;
}

/** A started telemetry SDK: the process's tracer and how to stop it. */
export interface Telemetry {
  /** The tracer services pass to their components (scope name = the service name). */
  readonly tracer: Tracer;
  /** The installed provider (the no-op API provider when `OTEL_SDK_DISABLED=true`). */
  readonly tracerProvider: TracerProvider;
  /** The validated `OTEL_*` settings in effect (header values included: do not log `otlp.headers`). */
  readonly settings: OtelSettings;
  /**
   * Attaches a span processor after start (the bus is connected after telemetry). It sees spans
   * that start from now on; it is flushed and shut down with the SDK. A no-op when the SDK is disabled.
   */
  addSpanProcessor(processor: SpanProcessor): void;
  /** Exports every finished span now. Rejects if an export fails. */
  forceFlush(): Promise<void>;
  /**
   * Flushes and shuts down every processor and exporter, then unregisters the global provider,
   * context manager and propagator. Idempotent; never waits longer than `shutdownTimeoutMs`
   * and never rejects (export failures go to `onError`).
   */
  shutdown(): Promise<void>;
}

function buildSampler(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/**
 * Installs the OpenTelemetry SDK for this process — the only place in splitlet that does — and
 * returns the tracer to hand to components.
 *
 * Installs, globally and once: a `NodeTracerProvider` with resource attributes `service.name`,
 * `service.instance.id`, `host.name` and `k8s.node.name`, the AsyncLocalStorage context manager, and
 * the W3C trace-context + baggage propagators. Spans go to the extra `spanProcessors` and, when the
 * `OTEL_*` variables ask for it (see `readOtelEnv`), to an OTLP http/protobuf exporter behind a
 * `BatchSpanProcessor`. With `OTEL_SDK_DISABLED=true` nothing is installed and the tracer is the
 * API's no-op tracer.
 *
 * Call it from `main` only, after `loadConfig` and before anything creates spans.
 *
 * @throws {@link TelemetryError} `InvalidConfig` for unsupported `OTEL_*` values; `AlreadyStarted`
 *   when a global tracer provider is already installed (call `shutdown()` first).
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const settings = readOtelEnv(options.env);

  if (settings.disabled) {
    const tracerProvider = trace.getTracerProvider();
    return {
      tracer: tracerProvider.getTracer(options.serviceName),
      tracerProvider,
      settings,
      addSpanProcessor: () => {},
      forceFlush: () => Promise.resolve(),
      shutdown: () => Promise.resolve(),
    };
  }

  if (isGlobalTracerProviderInstalled()) {
    throw new TelemetryError(
      TelemetryErrorCodes.AlreadyStarted,
      'a global OpenTelemetry tracer provider is already installed: startTelemetry must be called once per process (shut the previous one down first)',
    );
  }

  const resource = defaultResource()
    .merge(resourceFromAttributes({ ...settings.resourceAttributes }))
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: options.serviceName,
        [ATTR_SERVICE_INSTANCE_ID]: options.instanceId ?? randomUUID(),
        [ATTR_HOST_NAME]: options.hostName ?? hostname(),
        ...(options.nodeName === undefined ? {} : { [ATTR_K8S_NODE_NAME]: options.nodeName }),
      }),
    );

  const late = new LateSpanProcessor();
  const spanProcessors: SpanProcessor[] = [late, ...(options.spanProcessors ?? [])];
  if (settings.otlp !== undefined) {
    const exporter = new LazyOtlpTraceExporter({
      url: settings.otlp.url,
      headers: { ...settings.otlp.headers },
      ...(settings.otlp.timeoutMillis === undefined ? {} : { timeoutMillis: settings.otlp.timeoutMillis }),
    });
    spanProcessors.push(new BatchSpanProcessor(exporter));
  }

  const provider = new NodeTracerProvider({
    resource,
    sampler: buildSampler(settings.sampler, settings.samplerRatio),
    spanProcessors,
  });
  const onError = options.onError;
  if (onError !== undefined) setGlobalErrorHandler((e) => onError(e));
  // Default context manager (AsyncLocalStorage) and default propagator (W3C trace-context + baggage).
  provider.register();

  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 5000;
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), shutdownTimeoutMs);
      });
      try {
        const outcome = await Promise.race([provider.shutdown().then(() => 'done' as const), timedOut]);
        if (outcome === 'timeout') {
          globalErrorHandler(
            new TelemetryError(TelemetryErrorCodes.ShutdownTimeout, `telemetry shutdown did not finish within ${shutdownTimeoutMs} ms; unexported spans were dropped`),
          );
        }
      } catch (e) {
        // Reported through the SDK's error handler (`onError` when given, else OTel diag).
        globalErrorHandler(e instanceof Error ? e : new Error(String(e)));
      } finally {
        clearTimeout(timer);
        trace.disable();
        context.disable();
        propagation.disable();
        if (onError !== undefined) setGlobalErrorHandler(loggingErrorHandler());
      }
    })();
    return stopping;
  };

  return {
    tracer: provider.getTracer(options.serviceName),
    tracerProvider: provider,
    settings,
    addSpanProcessor: (p) => late.add(p),
    forceFlush: () => provider.forceFlush(),
    shutdown,
  };
}
