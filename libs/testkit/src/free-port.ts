import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, released).
 * Another process can take it before you bind it: prefer letting the server pick (`-p -1`, port 0)
 * when it can report its port.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close((err) => (err === undefined ? resolve(port) : reject(err)));
    });
  });
}
