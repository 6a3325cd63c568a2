/**
 * `splitlet up`: NATS (NATS_URL, else a spawned nats-server) plus every process, each its own OS
 * process, until Ctrl-C or SIGTERM.
 */
import { existsSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { nodeToken } from '@splitlet/api';
import { freePort, kubeletConfigEnv, type KubeletConfig, type KubeletConfigProcess } from '@splitlet/service';
import type { StateDir } from '../state-dir.js';
import { CliError, ensureStateDir, isAlive, removeInstance, writeInstance } from '../state-dir.js';
import { readFileSync } from 'node:fs';
import { Supervisor } from '../up/supervisor.js';
import type { ProcessSpec } from '../up/supervisor.js';
import { natsReachable, natsServerSpec, waitForNats } from '../up/nats-server.js';
import { credentialsFile, identityOf } from '../up/nats-config.js';
import type { Identity, NatsCredential } from '@splitlet/bus';
import { natsClusterSpecs } from '../up/nats-cluster.js';
import { serviceMain } from '../paths.js';
import { connectBus } from '@splitlet/bus';
import { streamMaxAgesOf } from '../target.js';
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
  /** A cluster's kubeconfig (`--kubeconfig`): register there and take pods from there, no embedded API server. */
  kubeconfig?: string | undefined;
  extraEnv: Record<string, string>;
  /** The validated KubeletConfiguration (file and flags); translated into each process's environment. */
  kubeletConfig?: KubeletConfig;
  /** How process output is shown (the log files stay JSON). @default 'console' */
  logFormat?: LogFormat;
  /** Spawn this many clustered nats-servers (R-N streams and buckets) instead of one. */
  natsCluster?: number;
}

/** The default node name: the host name, lower-cased into a DNS-1123 subdomain. */
export function defaultNodeName(): string {
  const h = hostname()
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '');
  return h || 'splitlet-node';
}

/**
 * V8 flags of every process. The young generation is bounded at 8 MiB per semi-space: V8 sizes it
 * from the machine's memory (64 MiB per semi-space on a 24 GiB machine), and a burst grows it to
 * that and keeps it. Measured over 200-pod bursts (test/bench/burst-probe.ts): RSS after the burst
 * cri-adapter 258.6 → 190.7 MiB, sim-runtime 238.8 → 165.7 MiB; GC time (CPU profiles, ms per pod,
 * all processes) 14.5 unbounded, 21.0 at 16 MiB, 19.2 at 8 MiB — within the runs' spread — but
 * 37.6 at 2 MiB, which is why the bound is not smaller.
 *
 * `--expose-gc` gives the process V8's `gc`, which @splitlet/service's heap trimmer needs to hand
 * the memory of a burst back once the process is quiet (libs/service/src/heap-trimmer.ts).
 * `--optimize-for-size` would do that at every major GC, but it cost ~30 % more CPU per pod
 * in a 300-pod burst (68.6 and 64.7 → 90.4 CPU ms per pod, the whole node, runs back to back).
 *
 * V8's mid-tier compiler (Maglev) stays on. Without it (`--no-maglev`) a process is 3–5 MiB smaller
 * idle, but on the Node this runs on (24, from the npm dependency) a 1,000-pod burst on a fresh node
 * (test/bench/burst-probe.ts), three pairs alternated on a quiet machine, cost 50.2, 46.8 and 43.7
 * CPU ms per pod with Maglev and 57.2, 57.0 and 49.7 without (−14 %; 42.0 against 35.9 pods/s);
 * the mean idle RSS per process was 82.0 against 79.4 MiB. On Node 20 the same pairs showed no
 * difference (61.3 and 61.9 on average).
 *
 * The images' entrypoint (docker/splitlet-entrypoint.sh) starts a process with the same flags, so
 * compose and k8s run them as `splitlet up` does (services/cli/test/entrypoint.test.ts keeps the two equal).
 */
export const PROCESS_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--expose-gc'];

/** The processes of one node, in start order. */
export function processSpecs(s: StateDir, natsUrl: string, o: UpOptions, apiPort = 0, credentials?: ReadonlyMap<Identity, NatsCredential>): ProcessSpec[] {
  const identity = (name: string): Record<string, string> => {
    const id = identityOf(name);
    const c = id === undefined ? undefined : credentials?.get(id);
    return c === undefined ? {} : { NATS_USER: c.user, NATS_PASSWORD: c.password };
  };
  const common = (name: string): Record<string, string> => ({
    NATS_URL: natsUrl,
    ...identity(name),
    NODE_NAME: o.nodeName,
    HEALTH_PORT: '0',
    HEALTH_PORT_FILE: join(s.run, `${name}.port`),
    ...(o.partitions !== undefined ? { PARTITIONS: String(o.partitions) } : {}),
    ...o.extraEnv,
  });
  // The configuration's variables go over the supervisor's defaults (e.g. staticPodPath over the state dir's manifests).
  const fromConfig = kubeletConfigEnv(o.kubeletConfig ?? {});
  const spec = (name: string, service: string, env: Record<string, string> = {}): ProcessSpec => ({
    name,
    main: serviceMain(service),
    env: { ...common(name), ...env, ...(fromConfig[service as KubeletConfigProcess] ?? {}) },
    portFile: join(s.run, `${name}.port`),
  });
  const simSocket = join(s.run, 'sim-runtime.sock');
  const criEndpoint = o.criEndpoint ?? `unix://${simSocket}`;
  const specs: ProcessSpec[] = [];
  const withApi = o.apiserver !== false && o.kubeconfig === undefined;
  // The processes that talk to the API server get its kubeconfig (they wait for the file to appear).
  const kube: Record<string, string> = o.kubeconfig !== undefined ? { KUBECONFIG: o.kubeconfig } : withApi ? { KUBECONFIG: s.kubeconfig } : {};
  if (withApi) specs.push(spec('apiserver', 'apiserver', { API_PORT: String(apiPort), API_CERT_DIR: s.apiCerts, API_KUBECONFIG: s.kubeconfig }));
  if (o.runtime === 'sim' && o.criEndpoint === undefined) specs.push(spec('sim-runtime', 'sim-runtime', { SIM_SOCKET: simSocket }));
  specs.push(spec('cri-adapter', 'cri-adapter', { CRI_ENDPOINT: criEndpoint, POD_LOG_DIR: s.podLogs, ROOT_DIR: s.kubeletRoot, ...kube }));
  specs.push(spec('volume-manager', 'volume-manager', { ROOT_DIR: s.kubeletRoot, ...kube }));
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
  // The streams' max ages: checked before anything starts, applied by the provisioning below and
  // passed to every process (each provisions with them too, so all must have the same).
  const streamMaxAges = streamMaxAgesOf(env);
  const streamMaxAge = env['STREAM_MAX_AGE'] ?? '';
  const specOptions: UpOptions = streamMaxAge === '' ? o : { ...o, extraEnv: { ...o.extraEnv, STREAM_MAX_AGE: streamMaxAge } };
  const embeddedApi = o.apiserver !== false && o.kubeconfig === undefined;
  if (embeddedApi) rmSync(s.kubeconfig, { force: true }); // a stale one would point at a dead port
  for (const svc of ['apiserver', 'config-source', 'sync-loop', 'pod-worker', 'pleg', 'prober', 'volume-manager', 'status-manager', 'cri-adapter', 'sim-runtime']) {
    if (!existsSync(serviceMain(svc))) throw new CliError(`${serviceMain(svc)} is missing: run \`npm run build\` in the repository root first`);
  }
  const natsLog = join(s.logs, 'nats-server.log');
  if (o.natsCluster !== undefined && env['NATS_URL']) throw new CliError('--nats-cluster spawns its own servers: give it or --nats-url/NATS_URL, not both');
  const cluster =
    o.natsCluster === undefined
      ? undefined
      : await natsClusterSpecs({
          bin: env['NATS_SERVER_BIN'] ?? 'nats-server',
          storeDir: s.natsStore,
          logsDir: s.logs,
          size: o.natsCluster,
          stateRoot: s.root,
          node: o.nodeName,
          partitions: o.partitions,
        });
  const spawned =
    env['NATS_URL'] || cluster
      ? undefined
      : await natsServerSpec({
          bin: env['NATS_SERVER_BIN'] ?? 'nats-server',
          storeDir: s.natsStore,
          logFile: natsLog,
          stateRoot: s.root,
          node: o.nodeName,
          partitions: o.partitions,
        });
  const credentials = cluster?.credentials ?? spawned?.credentials;
  const admin = credentials?.get('admin');
  const url = cluster?.urls.join(',') ?? spawned?.url ?? env['NATS_URL']!;
  const natsSpawned = spawned !== undefined || cluster !== undefined;
  const startedAt = new Date().toISOString();
  const sup = new Supervisor({
    nodeBin: process.execPath,
    nodeFlags: PROCESS_NODE_FLAGS,
    logsDir: s.logs,
    out,
    restart: o.restart,
    color: Boolean((out as { isTTY?: boolean }).isTTY),
    format: o.logFormat ?? 'console',
    onChange: () => refreshInstance(),
  });
  /** instance.json: what the CLI's other commands read to find this node and its processes. */
  const saveInstance = (snap: ReturnType<Supervisor['snapshot']>): void =>
    writeInstance(s, {
      version: 1,
      nodeName: o.nodeName,
      natsUrl: url,
      natsSpawned,
      supervisorPid: process.pid,
      runtime: o.runtime,
      ...(o.partitions !== undefined ? { partitions: o.partitions } : {}),
      startedAt,
      processes: nodeProcesses(snap),
    });
  /**
   * Saves instance.json at each start of a process, and then every second until every running
   * process has written its health port (it writes it once, after each start): nothing is polled
   * while the node runs as it is.
   */
  let refresh: NodeJS.Timeout | undefined;
  const refreshInstance = (): void => {
    clearTimeout(refresh);
    refresh = undefined;
    // Pending in what was saved: a port written since is saved by the next pass.
    const snap = sup.snapshot();
    saveInstance(snap);
    if (sup.portsPending(snap)) refresh = setTimeout(refreshInstance, 1000);
  };
  // The processes run in their own process groups; never leave them behind if we die on an error.
  process.once('exit', () => sup.killAll());

  // Stop on SIGINT/SIGTERM/SIGHUP, and when our parent goes away (`npx` does not pass SIGTERM on: it
  // exits and leaves us re-parented). A second signal SIGKILLs everything at once.
  const stopped = new AbortController();
  let stopReason = '';
  const onSignal = (signal: string): void => {
    if (stopped.signal.aborted) {
      out.write(`second ${signal}: killing every process now\n`);
      sup.killAll();
      process.exit(1);
    }
    stopReason = signal;
    stopped.abort();
  };
  const onSigint = (): void => onSignal('SIGINT');
  const onSigterm = (): void => onSignal('SIGTERM');
  const onSighup = (): void => onSignal('SIGHUP');
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  process.on('SIGHUP', onSighup);
  const parentPid = process.ppid;
  const parentWatch = setInterval(() => {
    if (process.ppid !== parentPid && !stopped.signal.aborted) onSignal(`the exit of the parent process ${parentPid}`);
  }, 500);
  const signalled = new Promise<void>((r) => stopped.signal.addEventListener('abort', () => r(), { once: true }));

  const run = async (): Promise<void> => {
    if (spawned !== undefined) {
      sup.start(spawned.spec);
      await Promise.race([waitForNats(spawned.port, natsLog, 10_000), signalled]);
      if (stopped.signal.aborted) return;
      out.write(
        `started nats-server with JetStream at ${url} (store ${s.natsStore}; restarted with the same port and store if it dies; one NATS user per process, credentials in ${credentialsFile(s.root)})\n`,
      );
    }
    if (cluster !== undefined) {
      for (const spec of cluster.specs) sup.start(spec);
      await Promise.race([Promise.all(cluster.members.map((m) => waitForNats(m.clientPort, m.logFile, 20_000))), signalled]);
      if (stopped.signal.aborted) return;
      out.write(
        `started a cluster of ${cluster.members.length} nats-servers with JetStream at ${url} (stores under ${s.natsStore}; streams and buckets replicated ${cluster.members.length} times; each restarted if it dies; one NATS user per process, credentials in ${credentialsFile(s.root)})\n`,
      );
    }
    // Provision streams and buckets once, before the processes race to do it. A new cluster takes a
    // moment to elect its JetStream meta leader: retry until it answers.
    const replicas = cluster?.members.length;
    for (let attempt = 1; ; attempt++) {
      try {
        const provisioner = await connectBus({
          servers: url.split(','),
          process: 'splitlet-up',
          node: o.nodeName,
          logger: createLogger({ service: 'splitlet-up', level: 'warn', stream: process.stderr }),
          signal: stopped.signal,
          streamMaxAges,
          ...(replicas !== undefined ? { replicas } : {}),
          ...(admin !== undefined ? { user: admin.user, pass: admin.password } : {}),
        });
        await provisioner.close();
        break;
      } catch (e) {
        if (stopped.signal.aborted || cluster === undefined || attempt >= 60) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // One port for the API server's whole life: a restarted apiserver keeps the kubeconfig valid.
    const specs = processSpecs(s, url, specOptions, embeddedApi ? await freePort() : 0, credentials);
    for (const p of specs) sup.start(p);
    out.write(`splitlet up: node ${o.nodeName}, ${specs.length} processes, state dir ${s.root}\n`);
    out.write(`manifests: ${s.manifests}  (splitlet apply -f FILE; splitlet get pods)\n`);
    if (embeddedApi) out.write(`kubeconfig: ${s.kubeconfig}  (kubectl --kubeconfig ${s.kubeconfig} get pods)\n`);
    else if (o.kubeconfig !== undefined) out.write(`cluster mode: node ${o.nodeName} registers with the API server of ${o.kubeconfig}\n`);
    void announceReady(
      sup,
      {
        nodeName: o.nodeName,
        natsUrl: url,
        kubeconfig: embeddedApi ? s.kubeconfig : o.kubeconfig,
        otlpEndpoint: env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT'] || undefined,
      },
      out,
      stopped.signal,
    );
  };
  let failure: { error: unknown } | undefined;
  await run().catch((e: unknown) => {
    if (!stopped.signal.aborted) failure = { error: e };
  });
  if (failure === undefined) await signalled;
  clearInterval(parentWatch);
  clearTimeout(refresh);
  // With NATS up, the processes drain one by one through it (up to 15 s); with NATS gone there is
  // nothing to drain through: all at once, SIGKILL after 3 s.
  const ordered = (await Promise.all(url.split(',').map((u) => natsReachable(u, 500)))).some(Boolean);
  out.write(`stopping splitlet${stopReason ? ` (${stopReason})` : ''}${ordered ? '' : ', NATS unreachable: stopping every process at once'}…\n`);
  const t0 = Date.now();
  await sup.stopAll(ordered ? { graceMs: 15_000, ordered: true } : { graceMs: 3000, ordered: false });
  removeInstance(s);
  process.off('SIGINT', onSigint);
  process.off('SIGTERM', onSigterm);
  process.off('SIGHUP', onSighup);
  if (failure !== undefined) throw failure.error;
  out.write(`splitlet stopped in ${Date.now() - t0} ms\n`);
  return 0;
}

/**
 * Prints the ready summary once every process answers /readyz; while some do not after 30 s, says
 * which (every 30 s). Stops at `signal`.
 */
async function announceReady(
  sup: Supervisor,
  i: { nodeName: string; natsUrl: string; kubeconfig: string | undefined; otlpEndpoint: string | undefined },
  out: NodeJS.WritableStream,
  signal: AbortSignal,
): Promise<void> {
  const t0 = performance.now();
  let nextNote = t0 + 30_000;
  while (!signal.aborted) {
    const processes = nodeProcesses(sup.snapshot());
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

/** The node's processes, each with a health port: all but `nats` / `nats-<i>` (the guards of the spawned nats-servers). */
function nodeProcesses(snap: ReturnType<Supervisor['snapshot']>): ReturnType<Supervisor['snapshot']> {
  return snap.filter((p) => !/^nats(-\d+)?$/.test(p.name));
}
