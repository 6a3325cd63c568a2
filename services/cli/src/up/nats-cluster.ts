/**
 * `splitlet up --nats-cluster N`: N nats-servers on loopback, one JetStream cluster (routes between
 * them on free ports), each a supervised process under the same guard as the single server (restarted
 * with the same ports, name and store when it dies). Streams and KV buckets are created with N
 * replicas (`ensureTopology(…, { replicas })`), and every process gets all N client URLs, so the
 * node keeps working when any one server dies (a quorum of the others remains for N ≥ 3).
 *
 * What one server runs with: its config file (nats-config.ts: listen address, JetStream store and the
 * same users and permissions as the single server, one set of credentials for the whole cluster) and
 * the cluster options assembled in {@link clusterServerArgs}.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { freePort } from '@splitlet/service';
import type { ProcessSpec } from './supervisor.js';
import type { Identity, NatsCredential } from '@splitlet/bus';
import { generateCredentials, renderNatsServerConfig, writeCredentials, writePrivateFile } from './nats-config.js';
import { renderAuthorization } from '@splitlet/bus';

/** The guard process's main module (see nats-guard.ts). */
const GUARD_MAIN = fileURLToPath(new URL('./nats-guard.js', import.meta.url));

/** The name of the JetStream cluster `splitlet up` forms. */
export const CLUSTER_NAME = 'splitlet';

/** One server of the cluster: its name, client and route ports. */
export interface ClusterMember {
  readonly name: string;
  readonly clientPort: number;
  readonly routePort: number;
  readonly storeDir: string;
  readonly logFile: string;
  /** Its config file (0600): listen address, store, users. */
  readonly configFile: string;
}

/** The nats-server command line of `member`, routed to every other member. */
export function clusterServerArgs(member: ClusterMember, all: readonly ClusterMember[]): string[] {
  const routes = all.filter((m) => m.name !== member.name).map((m) => `nats://127.0.0.1:${m.routePort}`);
  return [
    '-c',
    member.configFile,
    '-n',
    member.name,
    '-l',
    member.logFile,
    '--cluster_name',
    CLUSTER_NAME,
    '--cluster',
    `nats://127.0.0.1:${member.routePort}`,
    '--routes',
    routes.join(','),
  ];
}

/**
 * The `size` servers (named `nats-1` … `nats-<size>`, stores `<storeDir>/nats-<i>`, logs
 * `<logsDir>/nats-server-<i>.log`) as supervised processes, and the client URLs of all of them.
 */
export async function natsClusterSpecs(opts: {
  bin: string;
  storeDir: string;
  logsDir: string;
  size: number;
  stateRoot: string;
  node: string;
  /** The node's pod-worker partitions (`--partitions`). @default DEFAULT_PARTITIONS */
  partitions?: number | undefined;
}): Promise<{ specs: ProcessSpec[]; urls: string[]; members: ClusterMember[]; credentials: Map<Identity, NatsCredential> }> {
  if (!Number.isInteger(opts.size) || opts.size < 3) throw new Error(`a NATS cluster needs at least 3 servers (a JetStream quorum survives one loss), got ${opts.size}`);
  const members: ClusterMember[] = [];
  const taken = new Set<number>();
  const port = async (): Promise<number> => {
    for (;;) {
      const p = await freePort();
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
  };
  const credentials = generateCredentials();
  writeCredentials(opts.stateRoot, credentials);
  const authorization = renderAuthorization(credentials, { node: opts.node, partitions: opts.partitions });
  for (let i = 1; i <= opts.size; i++) {
    const m = {
      name: `nats-${i}`,
      clientPort: await port(),
      routePort: await port(),
      storeDir: join(opts.storeDir, `nats-${i}`),
      logFile: join(opts.logsDir, `nats-server-${i}.log`),
      configFile: join(opts.stateRoot, `nats-${i}.conf`),
    };
    writePrivateFile(m.configFile, renderNatsServerConfig({ host: '127.0.0.1', port: m.clientPort, storeDir: m.storeDir, authorization }));
    members.push(m);
  }
  const specs = members.map((m) => ({ name: m.name, main: GUARD_MAIN, env: { NATS_SERVER_BIN: opts.bin, NATS_SERVER_ARGS: JSON.stringify(clusterServerArgs(m, members)) } }));
  return { specs, urls: members.map((m) => `nats://127.0.0.1:${m.clientPort}`), members, credentials };
}
