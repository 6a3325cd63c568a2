import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { isGlobalTracerProviderInstalled } from '../global-provider.js';

/** Options of {@link createTestTracing}. */
export interface TestTracingOptions {
  /** `service.name` of the spans. @default 'test' */
  readonly serviceName?: string;
  /**
   * Also install the provider, the AsyncLocalStorage context manager and the W3C propagators
   * globally, as `startTelemetry` does. Needed when the code under test relies on the active
   * context (child spans parented by `withSpan`, trace ids in log records, `injectContext()` with
   * no argument). `shutdown()` uninstalls them. Throws when a global provider is already installed.
   * @default false
   */
  readonly register?: boolean;
  /** Extra span processors (e.g. a span-record processor under test). */
  readonly spanProcessors?: readonly SpanProcessor[];
}

/** An in-memory tracing setup for unit tests. */
export interface TestTracing {
  /** A tracer whose spans end up in {@link TestTracing.spans}. */
  readonly tracer: Tracer;
  /** The provider behind `tracer`. */
  readonly provider: NodeTracerProvider;
  /** Finished spans so far, in the order they ended (exported synchronously on `end()`). */
  spans(): ReadableSpan[];
  /** Finished spans with the given name. */
  spansNamed(name: string): ReadableSpan[];
  /** Forgets the finished spans. */
  reset(): void;
  /** Shuts the provider down and, with `register`, uninstalls the globals. Idempotent. */
  shutdown(): Promise<void>;
}

/**
 * Creates a tracer that records into an in-memory exporter through a `SimpleSpanProcessor` (so a
 * span is visible in `spans()` as soon as it ends), sampling everything. Does not touch the global
 * OpenTelemetry state unless `register: true`.
 */
export function createTestTracing(options: TestTracingOptions = {}): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName ?? 'test' }),
    spanProcessors: [new SimpleSpanProcessor(exporter), ...(options.spanProcessors ?? [])],
  });
  if (options.register === true) {
    if (isGlobalTracerProviderInstalled()) {
      throw new Error('createTestTracing({register: true}): a global tracer provider is already installed; shut it down first');
    }
    provider.register();
  }
  let stopped: Promise<void> | undefined;
  return {
    tracer: provider.getTracer(options.serviceName ?? 'test'),
    provider,
    spans: () => exporter.getFinishedSpans(),
    spansNamed: (name) => exporter.getFinishedSpans().filter((s) => s.name === name),
    reset: () => exporter.reset(),
    shutdown: () => {
      stopped ??= (async () => {
        try {
          await provider.shutdown();
        } finally {
          if (options.register === true) {
            trace.disable();
            context.disable();
            propagation.disable();
          }
        }
      })();
      return stopped;
    },
  };
}
