/**
 * tcpSocket probe: success when a TCP connection to host:port opens within the timeout.
 *
 * Models pkg/probe/tcp/tcp.go (DoTCPProbe).
 */
import { connect } from 'node:net';
import type { HandlerOutcome } from '../prober/probe-type.js';
import { goDialError } from './dial-error.js';
import { joinHostPort } from './resolve-port.js';

/** Opens and closes one connection; never throws (a failure is the outcome). */
export function tcpProbe(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<HandlerOutcome> {
  const addr = joinHostPort(host, port);
  return new Promise((resolve) => {
    let settled = false;
    const socket = connect({ host, port });
    const done = (outcome: HandlerOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => done({ result: 'failure', output: goDialError(addr, undefined, true) }), timeoutMs);
    const onAbort = (): void => done({ result: 'failure', output: `dial tcp ${addr}: operation was canceled` });
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => done({ result: 'success', output: '' }));
    socket.once('error', (e) => done({ result: 'failure', output: goDialError(addr, e, false) }));
  });
}
