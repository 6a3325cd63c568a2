/**
 * Node socket errors in the words of Go's net package, as the kubelet's probe outputs show them
 * (`dial tcp 10.88.0.5:8080: connect: connection refused`, `… i/o timeout`).
 */

const CONNECT_ERRNO: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connect: connection refused',
  EHOSTUNREACH: 'connect: no route to host',
  ENETUNREACH: 'connect: network is unreachable',
  ECONNRESET: 'read: connection reset by peer',
  EADDRNOTAVAIL: 'connect: cannot assign requested address',
};

/** `dial tcp <addr>: <reason>` for a failed connect (`timedOut`: the dial hit the probe timeout). */
export function goDialError(addr: string, error: unknown, timedOut: boolean): string {
  if (timedOut) return `dial tcp ${addr}: i/o timeout`;
  const code = (error as { code?: unknown } | null)?.code;
  const reason = typeof code === 'string' ? CONNECT_ERRNO[code] : undefined;
  return `dial tcp ${addr}: ${reason ?? (error instanceof Error ? error.message : String(error))}`;
}
