/**
 * A TCP port on 127.0.0.1 that was free a moment ago, outside the kernel's ephemeral range (see
 * `@splitlet/service`'s `freePort`). Prefer letting the server pick (`-p -1`, port 0) when it can
 * report its port.
 */
export { freePort } from '@splitlet/service/free-port';
