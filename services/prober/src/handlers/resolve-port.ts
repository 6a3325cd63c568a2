/**
 * A probe's port: a number, or the name of one of the container's ports (else a number in a
 * string), in 1–65535; the errors are the kubelet's.
 *
 * Models pkg/probe/util.go (ResolveContainerPort, findPortByName).
 */
import type { Container } from '@splitlet/api';

/** Resolves `port` against the container's named ports. Throws the kubelet's error text. */
export function resolveContainerPort(port: number | string, container: Container): number {
  let n: number;
  if (typeof port === 'number') {
    n = port;
  } else {
    const named = (container.ports ?? []).find((p) => p.name === port);
    if (named !== undefined) n = named.containerPort;
    else if (/^[+-]?\d+$/.test(port)) n = Number(port);
    else throw new Error(`strconv.Atoi: parsing ${JSON.stringify(port)}: invalid syntax`);
  }
  if (n > 0 && n < 65536) return n;
  throw new Error(`invalid port number: ${n}`);
}

/** Go's `net.JoinHostPort`: brackets around an IPv6 host. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
