/**
 * DNS for pods on a node whose own resolver is out of the pods' reach.
 *
 * In a container (compose's node) /etc/resolv.conf names Docker's embedded resolver, 127.0.0.11:
 * a loopback address, which inside a pod's network namespace is the pod itself. The kubelet hands
 * pods the file `--resolv-conf` names, as it is; the fix on such a node is the kubelet's own one
 * for systemd-resolved (127.0.0.53): point `--resolv-conf` (splitlet: cri-adapter's RESOLV_CONF)
 * at a file whose nameserver pods can reach. {@link startPodDns} provides both: a forwarder on
 * port 53 of every address of the node (pods reach it at their gateway, the bridge's address),
 * relaying UDP and TCP queries to the node's resolver, and a resolv.conf that names the gateway
 * with the node's search domains and options.
 */
import { createSocket } from 'node:dgram';
import type { RemoteInfo, Socket } from 'node:dgram';
import { createConnection, createServer } from 'node:net';
import type { Server } from 'node:net';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';

/** The forwarder's answer deadline per UDP query (the resolver's own retry is 5 s). */
const UDP_TIMEOUT_MS = 5000;

export interface PodDnsOptions {
  /** The node's resolv.conf (default `/etc/resolv.conf`): the upstream server, search domains, options. */
  hostResolvConf?: string;
  /** The address pods reach the node at: the pod network's gateway. */
  gateway: string;
  /** Where to write the pods' resolv.conf. */
  podResolvConf: string;
  /** The port to listen on (default 53) on every address; 0 picks a free one (see {@link PodDns.port}). */
  port?: number;
  /** The upstream resolver's port (default 53; resolv.conf cannot name another). */
  upstreamPort?: number;
}

export interface PodDns {
  /** The node resolver queries are relayed to (`ip:port`). */
  upstream: string;
  /** The resolv.conf written for pods. */
  podResolvConf: string;
  /** The port the forwarder listens on (UDP and TCP). */
  port: number;
  close(): Promise<void>;
}

/** The nameserver, search and options lines of a resolv.conf. */
function readResolvConf(path: string): { servers: string[]; lines: string[] } {
  const servers: string[] = [];
  const lines: string[] = [];
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    const [key, value] = line.split(/\s+/);
    if (key === 'nameserver' && value !== undefined) servers.push(value);
    else if (key === 'search' || key === 'domain' || key === 'options') lines.push(line);
  }
  return { servers, lines };
}

/**
 * Starts the forwarder and writes the pods' resolv.conf (atomically). Fails when the node's
 * resolv.conf names no nameserver or port 53 is taken.
 */
export async function startPodDns(o: PodDnsOptions): Promise<PodDns> {
  const hostPath = o.hostResolvConf ?? '/etc/resolv.conf';
  const { servers, lines } = readResolvConf(hostPath);
  const upstreamHost = servers[0];
  if (upstreamHost === undefined) throw new Error(`${hostPath} names no nameserver to forward pod DNS queries to`);
  const upstreamPort = o.upstreamPort ?? 53;
  const udp = createSocket(upstreamHost.includes(':') ? 'udp6' : 'udp4');
  udp.on('message', (query: Buffer, from: RemoteInfo) => relayUdp(udp, query, from, upstreamHost, upstreamPort));
  udp.on('error', () => undefined);
  const tcp: Server = createServer((client) => {
    const up = createConnection({ host: upstreamHost, port: upstreamPort });
    const end = (): void => {
      client.destroy();
      up.destroy();
    };
    client.setTimeout(30_000, end);
    client.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    client.pipe(up).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(o.port ?? 53, () => {
      udp.off('error', reject);
      resolve();
    });
  });
  try {
    // The same port for TCP (with port 0: the one UDP got).
    await new Promise<void>((resolve, reject) => tcp.once('error', reject).listen(udp.address().port, resolve));
  } catch (e) {
    udp.close();
    throw e;
  }
  const text = [`# splitlet-node: pods ask the node's DNS forwarder at their gateway, which relays to ${upstreamHost} (${hostPath})`, `nameserver ${o.gateway}`, ...lines, ''].join(
    '\n',
  );
  writeFileSync(`${o.podResolvConf}.tmp`, text);
  renameSync(`${o.podResolvConf}.tmp`, o.podResolvConf);
  return {
    upstream: `${upstreamHost}:${upstreamPort}`,
    podResolvConf: o.podResolvConf,
    port: udp.address().port,
    close: async () => {
      await Promise.all([new Promise<void>((r) => udp.close(() => r())), new Promise<void>((r) => tcp.close(() => r()))]);
    },
  };
}

/** One UDP query: relayed from a socket of its own, the first answer goes back to the asker. */
function relayUdp(server: Socket, query: Buffer, from: RemoteInfo, upstreamHost: string, upstreamPort: number): void {
  const out = createSocket(upstreamHost.includes(':') ? 'udp6' : 'udp4');
  let open = true;
  const finish = (): void => {
    if (!open) return;
    open = false;
    clearTimeout(timer);
    out.close();
  };
  const timer = setTimeout(finish, UDP_TIMEOUT_MS);
  out.on('error', finish);
  out.once('message', (answer: Buffer) => {
    finish();
    server.send(answer, from.port, from.address);
  });
  out.send(query, upstreamPort, upstreamHost);
}
