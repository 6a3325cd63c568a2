/**
 * `splitlet up`: NATS (NATS_URL, else a spawned nats-server) plus every process, each its own OS
 * process, until Ctrl-C or SIGTERM.
 */
import { existsSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { nodeToken } from '@splitlet/api';
import type { StateDir } from '../state-dir.js';
import { CliError, ensureStateDir, isAlive, removeInstance, writeInstance } from '../state-dir.js';
import { readFileSync } from 'node:fs';
import { Supervisor } from '../up/supervisor.js';
import type { ProcessSpec } from '../up/supervisor.js';
import { spawnNatsServer } from '../up/nats-server.js';
import type { SpawnedNats } from '../up/nats-server.js';
import { serviceMain } from '../paths.js';
import { connectBus } from '@splitlet/bus';
import type { LogFormat } from '../up/console-format.js';
import { allReady, readySummary } from '../up/ready-summary.js';
import { createLogger } from '@splitlet/telemetry';

export interface UpOptions {
  nodeName: string;
  podWorkers: number;
  runtime: 'sim' | 'containerd';
  criEndpoint: string | undefined;
  manifestUrl: string | undefined;
  restart: boolean;
  partitions: number | undefined;
  /** Start the embedded API server (kubeconfig in the state dir) and take pods from it. @default true */
  apiserver?: boolean;
  extraEnv: Record<string, string>;
  /** How process output is shown (the log files stay JSON). @default 'console' */
  logFormat?: LogFormat;
}

/** The default node name: the host name, lower-cased into a DNS-1123 subdomain. */
export function defaultNodeName(): string {
  const h = hostname().toLowerCase().replace(/[^a-z0-9.-]/g, '-').replace(/^[-.]+|[-.]+$/g, '');
  return h || 'splitlet-node';
}

/** The processes of one node, in start order. */
export function processSpecs(s: StateDir, natsUrl: string, o: UpOptions, apiPort = 0): ProcessSpec[] {
  const common = (name: string): Record<string, string> => ({
    NATS_URL: natsUrl,
    NODE_NAME: o.nodeName,
    HEALTH_PORT: '0',
    HEALTH_PORT_FILE: join(s.run, `${name}.port`),
    ...(o.partitions !== undefined ? { PARTITIONS: String(o.partitions) } : {}),
    ...o.extraEnv,
  });
  const spec = (name: string, service: string, env: Record<string, string> = {}): ProcessSpec => ({
    name,
    main: serviceMain(service),
    env: { ...common(name), ...env },
    portFile: join(s.run, `${name}.port`),
  });
  const simSocket = join(s.run, 'sim-runtime.sock');
  const criEndpoint = o.criEndpoint ?? `unix://${simSocket}`;
  const specs: ProcessSpec[] = [];
  const withApi = o.apiserver !== false;
  // The processes that talk to the API server get its kubeconfig (they wait for the file to appear).
  const kube: Record<string, string> = withApi ? { KUBECONFIG: s.kubeconfig } : {};
  if (withApi) specs.push(spec('apiserver', 'apiserver', { API_PORT: String(apiPort), API_CERT_DIR: s.apiCerts, API_KUBECONFIG: s.kubeconfig }));
  if (o.runtime === 'sim' && o.criEndpoint === undefined) specs.push(spec('sim-runtime', 'sim-runtime', { SIM_SOCKET: simSocket }));
  specs.push(spec('cri-adapter', 'cri-adapter', { CRI_ENDPOINT: criEndpoint, POD_LOG_DIR: s.podLogs, ROOT_DIR: s.kubeletRoot }));
  specs.push(spec('volume-manager', 'volume-manager', { ROOT_DIR: s.kubeletRoot }));
  specs.push(spec('status-manager', 'status-manager', kube));
  specs.push(spec('pleg', 'pleg'));
  specs.push(spec('prober', 'prober', { CRI_ENDPOINT: criEndpoint }));
  for (let i = 1; i <= o.podWorkers; i++) specs.push(spec(`pod-worker-${i}`, 'pod-worker', { INSTANCE_ID: `${nodeToken(o.nodeName)}-pw-${i}` }));
  specs.push(spec('sync-loop', 'sync-loop'));
  specs.push(spec('config-source', 'config-source', { MANIFEST_DIR: s.manifests, ...(o.manifestUrl ? { MANIFEST_URL: o.manifestUrl } : {}), ...kube }));
  return specs;
}

/** Runs until SIGINT/SIGTERM; resolves with the exit code. */
export async function up(s: StateDir, o: UpOptions, env: NodeJS.ProcessEnv, out: NodeJS.WritableStream): Promise<number> {
  nodeToken(o.nodeName); // validates the node name
  ensureStateDir(s);
  if (existsSync(s.instanceFile)) {
    const prev = JSON.parse(readFileSync(s.instanceFile, 'utf8')) as { supervisorPid?: number };
    if (prev.supervisorPid && isAlive(prev.supervisorPid) && prev.supervisorPid !== process.pid) {
      throw new CliError(`splitlet is already running in ${s.root} (pid ${prev.supervisorPid}); use another --state-dir to run a second instance`);
    }
  }
  if (o.apiserver !== false) rmSync(s.kubeconfig, { force: true }); // a stale one would point at a dead port
  for (const svc of ['apiserver', 'config-source', 'sync-loop', 'pod-worker', 'pleg', 'prober', 'volume-manager', 'status-manager', 'cri-adapter', 'sim-runtime']) {
    if (!existsSync(serviceMain(svc))) throw new CliError(`${serviceMain(svc)} is missing: run \`npm run build\` in the repository root first`);
  }
  let nats: SpawnedNats | undefined;
  let natsUrl = env['NATS_URL'];
  if (!natsUrl) {
    nats = await spawnNatsServer({ bin: env['NATS_SERVER_BIN'] ?? 'nats-server', storeDir: s.natsStore, logFile: join(s.logs, 'nats-server.log') });
    natsUrl = nats.url;
    out.write(`started nats-server with JetStream at ${natsUrl} (store ${s.natsStore})\n`);
  }
  const url = natsUrl;
  // Provision streams and buckets once, before the processes race to do it.
  const provisioner = await connectBus({ servers: url, process: 'splitlet-up', node: o.nodeName, logger: createLogger({ service: 'splitlet-up', level: 'warn', stream: process.stderr }) });
  await provisioner.close();
  const startedAt = new Date().toISOString();
  const sup = new Supervisor({
    nodeBin: process.execPath,
    logsDir: s.logs,
    out,
    restart: o.restart,
    color: Boolean((out as { isTTY?: boolean }).isTTY),
    format: o.logFormat ?? 'console',
    onChange: () => {
      writeInstance(s, {
        version: 1,
        nodeName: o.nodeName,
        natsUrl: url,
        natsSpawned: nats !== undefined,
        supervisorPid: process.pid,
        runtime: o.runtime,
        ...(o.partitions !== undefined ? { partitions: o.partitions } : {}),
        startedAt,
        processes: sup.snapshot(),
      });
    },
  });
  // The processes run in their own process groups; never leave them behind if we die on an error.
  process.once('exit', () => sup.killAll());
  // One port for the API server's whole life: a restarted apiserver keeps the kubeconfig valid.
  const specs = processSpecs(s, url, o, o.apiserver === false ? 0 : await freeLoopbackPort());
  for (const p of specs) sup.start(p);
  out.write(`splitlet up: node ${o.nodeName}, ${specs.length} processes, state dir ${s.root}\n`);
  out.write(`manifests: ${s.manifests}  (splitlet apply -f FILE; splitlet get pods)\n`);
  if (o.apiserver !== false) out.write(`kubeconfig: ${s.kubeconfig}  (kubectl --kubeconfig ${s.kubeconfig} get pods)\n`);
  // Refresh health ports in instance.json once the processes wrote them.
  const refresh = setInterval(() => {
    writeInstance(s, { version: 1, nodeName: o.nodeName, natsUrl: url, natsSpawned: nats !== undefined, supervisorPid: process.pid, runtime: o.runtime, ...(o.partitions !== undefined ? { partitions: o.partitions } : {}), startedAt, processes: sup.snapshot() });
  }, 1000);
  const stopped = new AbortController();
  const signalled = new Promise<void>((resolveSignal) => {
    const stop = (): void => {
      stopped.abort();
      resolveSignal();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  void announceReady(sup, { nodeName: o.nodeName, natsUrl: url, kubeconfig: o.apiserver !== false ? s.kubeconfig : undefined, otlpEndpoint: env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT'] || undefined }, out, stopped.signal);
  await signalled;
  clearInterval(refresh);
  out.write('stopping splitlet…\n');
  await sup.stopAll(15_000);
  if (nats) await nats.stop(5000);
  removeInstance(s);
  out.write('splitlet stopped\n');
  return 0;
}

/**
 * Prints the ready summary once every process answers /readyz; while some do not after 30 s, says
 * which (every 30 s). Stops at `signal`.
 */
async function announceReady(sup: Supervisor, i: { nodeName: string; natsUrl: string; kubeconfig: string | undefined; otlpEndpoint: string | undefined }, out: NodeJS.WritableStream, signal: AbortSignal): Promise<void> {
  const t0 = performance.now();
  let nextNote = t0 + 30_000;
  while (!signal.aborted) {
    const processes = sup.snapshot();
    const { ready, waiting } = await allReady(processes);
    if (signal.aborted) return;
    if (ready) {
      out.write(readySummary({ ...i, processes, startedMs: performance.now() - t0 }));
      return;
    }
    if (performance.now() > nextNote) {
      out.write(`still waiting for ${waiting.join(', ')} to be ready (${Math.round((performance.now() - t0) / 1000)}s; see their lines above and .splitlet/logs/)\n`);
      nextNote += 30_000;
    }
    await new Promise<void>((r) => {
      const t = setTimeout(r, 250);
      signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
    });
  }
}

/** A TCP port free on 127.0.0.1 now. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
