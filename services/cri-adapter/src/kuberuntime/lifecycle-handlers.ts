/**
 * Runs a container's postStart / preStop lifecycle handler: exec (through CRI ExecSync), HTTP GET
 * (from the node to the pod), or sleep.
 *
 * Models pkg/kubelet/lifecycle/handlers.go (handlerRunner.Run, runHTTPHandler, runSleepHandler) and
 * kuberuntime_container.go (RunInContainer).
 */
import type { BoundPod, Container, LifecycleHandler } from '@splitlet/api';
import { formatPod } from '@splitlet/kube';
import type { CriRuntime } from '../ports.js';

/** A failed handler: `message` is the kubelet's text (kept out of events, as it may hold secrets). */
export class LifecycleHandlerError extends Error {
  override readonly name = 'LifecycleHandlerError';
}

/** What a handler runs against. */
export interface HandlerTarget {
  readonly pod: BoundPod;
  readonly container: Pick<Container, 'name' | 'ports'>;
  readonly containerId: string;
  /** The pod's IP, the default host of an httpGet handler. */
  readonly podIP: string;
}

/** Runs lifecycle handlers. */
export interface LifecycleHandlerRunner {
  /** Resolves when the handler succeeded; rejects with a {@link LifecycleHandlerError} otherwise or on abort. */
  run(target: HandlerTarget, handler: LifecycleHandler, signal: AbortSignal): Promise<void>;
}

function resolvePort(port: number | string, container: Pick<Container, 'ports'>): number {
  if (typeof port === 'number') return port;
  const named = (container.ports ?? []).find((p) => p.name === port);
  if (named !== undefined) return named.containerPort;
  const n = Number.parseInt(port, 10);
  if (Number.isFinite(n)) return n;
  throw new Error(`couldn't find port: ${port} in ${JSON.stringify(container.ports ?? [])}`);
}

function abortable(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new Error('context canceled'));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('context canceled'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The CRI-backed runner: exec runs `ExecSync(cmd, timeout 0)` and fails on a non-zero exit
 * (`command '<cmd>' exited with <n>: <stderr>`); httpGet GETs `<scheme>://<host|podIP>:<port><path>`
 * and fails on a status outside 200–399; sleep waits. Messages follow the kubelet's
 * `Exec lifecycle hook ([…]) for Container "<c>" in Pod "<pod>" failed - error: …, message: "…"`.
 *
 * Models handlerRunner.
 */
export function createLifecycleHandlerRunner(runtime: Pick<CriRuntime, 'ExecSync'>): LifecycleHandlerRunner {
  return {
    async run(target, handler, signal) {
      const who = `for Container ${JSON.stringify(target.container.name)} in Pod ${JSON.stringify(formatPod(target.pod))}`;
      if (handler.exec !== undefined) {
        const cmd = handler.exec.command ?? [];
        let output = '';
        try {
          const resp = await runtime.ExecSync({ containerId: target.containerId, cmd, timeout: '0' }, { signal });
          const dec = new TextDecoder();
          output = dec.decode(resp.stdout) + dec.decode(resp.stderr);
          if (resp.exitCode !== 0) throw new Error(`command '${cmd.join(' ')}' exited with ${resp.exitCode}: ${dec.decode(resp.stderr)}`);
        } catch (e) {
          const err = e instanceof Error ? e.message : String(e);
          throw new LifecycleHandlerError(`Exec lifecycle hook ([${cmd.join(' ')}]) ${who} failed - error: ${err}, message: ${JSON.stringify(output)}`, { cause: e });
        }
        return;
      }
      if (handler.httpGet !== undefined) {
        const h = handler.httpGet as { path?: string; port: number | string; host?: string; scheme?: string };
        try {
          const host = h.host !== undefined && h.host !== '' ? h.host : target.podIP;
          const port = resolvePort(h.port, target.container);
          const scheme = (h.scheme ?? 'HTTP').toLowerCase();
          const path = h.path ?? '';
          const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path.startsWith('/') || path === '' ? path : `/${path}`}`;
          const res = await fetch(url, { signal });
          await res.body?.cancel();
          if (res.status < 200 || res.status >= 400) throw new Error(`HTTP lifecycle hook (${path}) returned status ${res.status}`);
        } catch (e) {
          const err = e instanceof Error ? e.message : String(e);
          throw new LifecycleHandlerError(`HTTP lifecycle hook (${h.path ?? ''}) ${who} failed - error: ${err}`, { cause: e });
        }
        return;
      }
      if (handler.sleep !== undefined) {
        const seconds = handler.sleep.seconds;
        try {
          await abortable(signal, seconds * 1000);
        } catch (e) {
          throw new LifecycleHandlerError(`Sleep lifecycle hook (${seconds}) ${who} failed - error: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
        }
        return;
      }
      throw new LifecycleHandlerError(`Cannot run handler: invalid handler: ${JSON.stringify(handler)}`);
    },
  };
}
