/**
 * `splitlet-node`: node provisioning as a command, for the compose node image, `.ci/run` and a
 * person on a host (the `splitlet runtime` subcommands are the same code).
 *
 *   splitlet-node up|down|status [--state-dir DIR] [--subnet CIDR] [--network-name NAME] [--purge] [-o json]
 *   splitlet-node run [--state-dir DIR] [--subnet CIDR] [--network-name NAME] [--health-port PORT] [--image-cache DIR] [--pod-resolv-conf FILE]
 *   splitlet-node images --out DIR
 *
 * `run` is the node container's main process: it starts containerd (as `up`), imports the images,
 * serves `/healthz` (containerd alive) and `/readyz` (CRI runtime and network ready) on
 * 127.0.0.1:`--health-port`, and on SIGTERM/SIGINT drains the pods and stops containerd (as `down`). When
 * containerd's process is gone (or has not answered CRI for {@link HUNG_AFTER_MS}; a slow answer on a
 * loaded machine is not a death), it exits 1 so the container's restart policy takes over. When
 * ready it writes its network namespace to `<state-dir>/node-netns`: processes sharing the node's
 * network (compose's `network_mode: service:node`) compare it with their own and restart into the
 * new one after the node container restarted (docker/splitlet-entrypoint.sh). With
 * `--pod-resolv-conf` it serves DNS to pods (src/pod-dns.ts) and writes their resolv.conf there.
 * Log lines are JSON on stdout.
 */
import { readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { containerdStatus, startContainerd, stopContainerd } from './containerd.js';
import { IMAGE_RECIPES, buildBusyboxImage, ensureImages } from './oci-image.js';
import { runtimeCommand } from './runtime-command.js';
import { RuntimeError } from './runtime-error.js';
import { startPodDns } from './pod-dns.js';
import type { PodDns } from './pod-dns.js';

export const NODE_USAGE = `splitlet-node: a containerd node with its own CNI network and locally built images

  splitlet-node up|down|status [--state-dir DIR] [--subnet CIDR] [--network-name NAME] [--purge] [-o json]
  splitlet-node run [--state-dir DIR] [--subnet CIDR] [--network-name NAME] [--health-port PORT] [--image-cache DIR] [--pod-resolv-conf FILE]
  splitlet-node images --out DIR

--state-dir defaults to SPLITLET_STATE_DIR or /var/lib/splitlet; containerd's socket is
<state-dir>/containerd/containerd.sock. --pod-resolv-conf FILE: serve DNS to pods on port 53 (relayed
to this node's resolver, e.g. Docker's 127.0.0.11 that pods cannot reach) and write the resolv.conf
for pods (give FILE to cri-adapter as RESOLV_CONF).
`;

/** How often `run` checks that containerd is still alive. */
const WATCH_INTERVAL_MS = 5000;
/** How long containerd's process may be alive without answering CRI before `run` gives up on it. */
const HUNG_AFTER_MS = 120_000;
/** How long `run` waits for a starting containerd to get ready (a loaded machine is slow). */
const START_TIMEOUT_MS = 120_000;

/**
 * Runs `splitlet-node` with `argv` (without the node and script paths); resolves with the exit code.
 * `run` resolves only after a signal (or containerd's death). Failures are {@link RuntimeError}s.
 * `env` is the environment (`SPLITLET_STATE_DIR`), handed over by the `splitlet-node` launcher.
 */
export async function nodeCommand(argv: readonly string[], out: Writable, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      'state-dir': { type: 'string' },
      subnet: { type: 'string' },
      'network-name': { type: 'string' },
      purge: { type: 'boolean' },
      output: { type: 'string', short: 'o' },
      'health-port': { type: 'string' },
      'image-cache': { type: 'string' },
      'pod-resolv-conf': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [sub] = positionals;
  if (values.help === true || sub === undefined) {
    out.write(NODE_USAGE);
    return sub === undefined && values.help !== true ? 2 : 0;
  }
  const stateDir = values['state-dir'] ?? env['SPLITLET_STATE_DIR'] ?? '/var/lib/splitlet';
  switch (sub) {
    case 'images': {
      if (values.out === undefined) throw new RuntimeError('InvalidOption', 'splitlet-node images: --out DIR is required');
      for (const recipe of IMAGE_RECIPES) {
        const built = buildBusyboxImage({ recipe, outDir: values.out });
        out.write(`${JSON.stringify({ msg: 'image archive', names: built.names, path: built.path, built: built.built })}\n`);
      }
      return 0;
    }
    case 'run': {
      const healthPort = values['health-port'] === undefined ? 10258 : Number(values['health-port']);
      if (!Number.isInteger(healthPort) || healthPort < 1 || healthPort > 65535) {
        throw new RuntimeError('InvalidOption', `--health-port must be a port number, got ${values['health-port'] ?? ''}`);
      }
      return runNode(
        { stateDir, subnet: values.subnet, networkName: values['network-name'], healthPort, imageCache: values['image-cache'], podResolvConf: values['pod-resolv-conf'] },
        out,
      );
    }
    default:
      return runtimeCommand({ sub, stateDir, subnet: values.subnet, networkName: values['network-name'], purge: values.purge ?? false, json: values.output === 'json' }, out);
  }
}

interface RunNodeOptions {
  stateDir: string;
  subnet: string | undefined;
  networkName: string | undefined;
  healthPort: number;
  imageCache: string | undefined;
  podResolvConf: string | undefined;
}

/** `splitlet-node run`: containerd in the foreground of this process's lifetime. */
async function runNode(o: RunNodeOptions, out: Writable): Promise<number> {
  const log = (level: string, msg: string, fields: Record<string, unknown> = {}): void => {
    out.write(`${JSON.stringify({ time: new Date().toISOString(), level, service: 'splitlet-node', msg, ...fields })}\n`);
  };
  let stopping: Promise<number> | undefined;
  let wake: (code: number) => void = () => undefined;
  const done = new Promise<number>((r) => (wake = r));
  const onSignal = (signal: string): void => {
    stopping ??= (async () => {
      log('info', 'stopping: draining pods and stopping containerd', { signal });
      await stopContainerd(o.stateDir);
      log('info', 'stopped');
      return 0;
    })();
    void stopping.then(wake, (e: unknown) => {
      log('error', 'stop failed', { error: e instanceof Error ? e.message : String(e) });
      wake(1);
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  let server: Server | undefined;
  let watch: NodeJS.Timeout | undefined;
  let dns: PodDns | undefined;
  try {
    const rt = await startContainerd({
      timeoutMs: START_TIMEOUT_MS,
      stateDir: o.stateDir,
      ...(o.subnet === undefined ? {} : { subnet: o.subnet }),
      ...(o.networkName === undefined ? {} : { name: o.networkName }),
      registryAccess: 'none',
    });
    log('info', 'containerd ready', { version: rt.version.runtimeVersion, pid: rt.pid, socket: rt.socket, network: rt.network, snapshotter: rt.snapshotter, startMs: rt.startMs });
    const images = await ensureImages(o.imageCache === undefined ? rt : { ...rt, paths: { images: o.imageCache } });
    log('info', 'images ready', { images: images.map((i) => ({ names: i.names, imported: i.imported })) });
    if (o.podResolvConf !== undefined) {
      try {
        dns = await startPodDns({ gateway: rt.network.gateway, podResolvConf: o.podResolvConf });
      } catch (e) {
        throw new RuntimeError('StartFailed', `--pod-resolv-conf ${o.podResolvConf}: cannot serve DNS to pods: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      log('info', 'pod DNS ready', { nameserver: rt.network.gateway, upstream: dns.upstream, resolvConf: dns.podResolvConf });
    }
    server = createServer((req, res) => {
      void containerdStatus(o.stateDir).then((st) => {
        const live = st.running;
        const ready = st.running && st.reason === undefined && stopping === undefined;
        const ok = req.url === '/healthz' ? live : req.url === '/readyz' ? ready : undefined;
        if (ok === undefined) {
          res.writeHead(404).end('not found\n');
          return;
        }
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : `${st.reason ?? 'stopping'}\n`);
      });
    });
    await new Promise<void>((resolve, reject) => server?.once('error', reject).listen(o.healthPort, '127.0.0.1', resolve));
    const netns = writeNetnsMarker(o.stateDir);
    log('info', 'node ready', { health: `http://127.0.0.1:${o.healthPort}/readyz`, netns });
    let answeredAt = Date.now();
    watch = setInterval(() => {
      if (stopping !== undefined) return;
      void containerdStatus(o.stateDir).then((st) => {
        if (st.running) answeredAt = Date.now();
        if (st.running || stopping !== undefined) return;
        // Alive but slow (a loaded machine): not a death until it has not answered for HUNG_AFTER_MS.
        if (st.pid !== undefined && Date.now() - answeredAt < HUNG_AFTER_MS) return;
        log('error', 'containerd is gone; exiting so the node restarts', { reason: st.reason, pid: st.pid });
        stopping = stopContainerd(o.stateDir).then(
          () => 1,
          () => 1,
        );
        void stopping.then(wake);
      });
    }, WATCH_INTERVAL_MS);
    if (stopping !== undefined) {
      // A signal came while starting: the stop may have run before the daemon existed.
      await stopping.catch(() => undefined);
      await stopContainerd(o.stateDir);
      return 0;
    }
    return await done;
  } catch (e) {
    if (stopping === undefined) await stopContainerd(o.stateDir).catch(() => undefined);
    throw e;
  } finally {
    if (watch !== undefined) clearInterval(watch);
    server?.close();
    await dns?.close();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

/**
 * Writes this process's network namespace (`net:[inode]`) to `<state-dir>/node-netns`, atomically;
 * returns it. A restarted node container has a new one; processes that joined the old one see the
 * difference and restart into the new one.
 */
function writeNetnsMarker(stateDir: string): string {
  const netns = readlinkSync('/proc/self/ns/net');
  const file = join(stateDir, 'node-netns');
  writeFileSync(`${file}.tmp`, `${netns}\n`);
  renameSync(`${file}.tmp`, file);
  return netns;
}
