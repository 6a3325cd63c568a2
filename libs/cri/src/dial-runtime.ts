/**
 * Dialling a runtime that may come up after its client: a node-local process (cri-adapter, prober)
 * keeps connecting until the runtime answers or the process is stopped.
 */
import { GrpcRuntimeService, type GrpcRuntimeServiceOptions } from './grpc-runtime-service.js';

/** Called before each retry, with the attempt that failed and why. */
export type DialRetry = (attempt: number, err: unknown) => void;

function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = (): void => {
      clearTimeout(t);
      resolve(false);
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `GrpcRuntimeService.connect` again and again (1 s, 2 s, … up to 5 s apart) until it succeeds;
 * resolves undefined once `signal` aborts.
 */
export async function dialRuntime(options: GrpcRuntimeServiceOptions & { readonly signal: AbortSignal }, onRetry: DialRetry): Promise<GrpcRuntimeService | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await GrpcRuntimeService.connect(options);
    } catch (e) {
      if (options.signal.aborted) return undefined;
      onRetry(attempt, e);
      if (!(await pause(Math.min(1000 * attempt, 5000), options.signal))) return undefined;
    }
  }
}
