import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Linux's range for ports the kernel assigns (bind to port 0, the local side of a connect). */
const EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range';
/** Where a port outside the ephemeral range is chosen from, below it. */
const LOWEST = 10_000;
const ATTEMPTS = 64;

/** The kernel's ephemeral port range, or undefined where it cannot be read (not Linux). */
export function ephemeralPortRange(file = EPHEMERAL_RANGE_FILE): { low: number; high: number } | undefined {
  try {
    const [low, high] = readFileSync(file, 'utf8').trim().split(/\s+/).map(Number);
    return low !== undefined && high !== undefined && Number.isInteger(low) && Number.isInteger(high) && low <= high ? { low, high } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The ports a chosen port may come from: those outside the ephemeral range (below it, from 10,000,
 * or above it), or undefined when the range leaves fewer than 1,000 of them.
 */
export function portsOutside(range: { low: number; high: number }): { from: number; to: number } | undefined {
  if (range.low - LOWEST >= 1000) return { from: LOWEST, to: range.low - 1 };
  if (65_535 - range.high >= 1000) return { from: range.high + 1, to: 65_535 };
  return undefined;
}

/** Binds `port` on `host` and releases it: the port it got (the kernel's pick for 0), or undefined when taken. */
function bindOnce(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' || e.code === 'EACCES' ? resolve(undefined) : reject(e)));
    server.listen({ port, host, exclusive: true }, () => {
      const address = server.address();
      const got = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close((err) => (err === undefined ? resolve(got) : reject(err)));
    });
  });
}

/**
 * A TCP port free on `host` (127.0.0.1) now, for a server that must be told its port before it
 * starts. It is chosen outside the kernel's ephemeral range: a port the kernel hands out (to a
 * server bound to port 0, to an outgoing connection) can go to another socket between this check
 * and the server's bind, and that server then fails with EADDRINUSE at every restart. Where the
 * range cannot be read, the kernel picks. Prefer port 0 when the server can report its port.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const range = ephemeralPortRange();
  const outside = range !== undefined ? portsOutside(range) : undefined;
  if (outside !== undefined) {
    for (let i = 0; i < ATTEMPTS; i++) {
      const port = await bindOnce(outside.from + Math.floor(Math.random() * (outside.to - outside.from + 1)), host);
      if (port !== undefined) return port;
    }
  }
  const port = await bindOnce(0, host);
  if (port === undefined) throw new Error(`no TCP port is free on ${host}`);
  return port;
}
