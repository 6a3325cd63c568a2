import { ProxyTracerProvider, trace } from '@opentelemetry/api';

/**
 * True when some SDK provider is installed as the global tracer provider. The API always returns
 * its proxy; the proxy's delegate is the API's shared no-op provider until an SDK registers.
 */
export function isGlobalTracerProviderInstalled(): boolean {
  const current = trace.getTracerProvider();
  if (!(current instanceof ProxyTracerProvider)) return true;
  return current.getDelegate() !== new ProxyTracerProvider().getDelegate();
}
