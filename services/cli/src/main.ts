/**
 * The `splitlet` command line.
 *
 *   splitlet up [--node-name N] [--pod-workers N] [--manifest-url URL] [--cri-endpoint unix://…] [--no-restart]
 *   splitlet apply -f FILE|-
 *   splitlet delete pod NAME [--wait=false]
 *   splitlet get pods [NAME] [-n NAMESPACE | -A] [-o wide|json|yaml|name]
 *   splitlet describe pod NAME
 *
 * Every command finds its node through --nats-url / SPLITLET_NATS_URL (plus --node-name, or the
 * one node on that NATS), else through the state dir of a local `splitlet up`: --state-dir,
 * SPLITLET_STATE_DIR, or `.splitlet/` in the current directory (see target.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError, resolveStateDir, ensureStateDir } from './state-dir.js';
import { defaultNodeName, up } from './commands/up.js';
import { apply, applyRemote, deletePod, describe, getPods } from './commands/pods.js';
import { getPartitions } from './commands/partitions.js';
import { openTarget, provisionTopology, streamMaxAgesOf, targetFlags } from './target.js';
import { renderHelmAuthValues, writeNatsConfigDir } from './up/nats-config.js';
import type { CliTarget } from './target.js';
import { trace } from './commands/trace.js';
import { events } from './commands/events.js';
import { logs } from './commands/logs.js';
import { exec } from './commands/exec.js';
import { withProgress } from './up/progress.js';
import { ensureLocalRuntime, isRuntimeError, missingPrerequisites, runtimeCommand } from '@splitlet/node-setup';
import { KUBELET_CONFIG_FLAGS } from '@splitlet/service';
import { loadKubeletConfigFile } from './up/kubelet-config-file.js';

const USAGE = `splitlet: the kubelet's pod lifecycle as separate processes over NATS JetStream

Usage:
  splitlet up [--config FILE] [--node-name NAME] [--pod-workers N] [--manifest-url URL] [--runtime sim|containerd] [--cri-endpoint unix:///path] [--no-restart] [--no-apiserver] [--log-format console|json] [--nats-cluster N]
              [--kubeconfig FILE: register with that cluster instead of the embedded API server]
              [--max-pods N] [--pod-manifest-path DIR] [--cluster-dns IP,…] [--cluster-domain D] [--sync-frequency 1m] … (the kubelet's flags; README "Configuration")
  splitlet apply -f FILE|-
  splitlet delete pod NAME [-n NAMESPACE] [--wait=false]
  splitlet get pods [NAME] [-n NAMESPACE | -A] [-o wide|json|yaml|name]
  splitlet get partitions [-o wide|json] [-w]
  splitlet describe pod NAME [-n NAMESPACE]
  splitlet logs POD [-c CONTAINER] [-p|--previous] [-f] [--tail N] [--timestamps]
  splitlet exec POD [-c CONTAINER] [-n NAMESPACE] -- COMMAND [args...]
  splitlet runtime up|down|status [--purge] [-o json]
  splitlet provision --nats-url URL   create/update the streams and buckets (as the NATS admin user; compose/k8s)
  splitlet nats-config --out DIR [--node-name N] [--partitions N] [--listen 0.0.0.0:4222] [--store /data] [--monitor-port 8222]
                       [--server-name NAME] [--owner-uid UID] [--rotate]
                       a nats-server config with one user per process (DIR/nats.conf) and their passwords
                       (DIR/users/<identity>), all 0600; kept if present unless --rotate (compose)
  splitlet nats-config --helm-values FILE [--node-name N] [--partitions N]
                       the same users as NATS Helm chart values (passwords from the Secret splitlet-nats-users)
  splitlet trace [pod] NAME [-o json] [--jaeger URL] [--trace-id ID] [--episodes | --latest]
  splitlet events [-w] [-o json]

\`up\` flags:
  --nats-cluster N  run N (at least 3) clustered nats-servers instead of one: streams and buckets replicated
                    N times, every process given all N URLs; the node keeps working when any one server dies.

Global flags:
  --nats-url URL    the NATS of a running stack (compose, a cluster, another host): $SPLITLET_NATS_URL.
                    With it, apply sends pods over the bus and logs come from the node over the bus.
  --node-name NAME  the node to talk to ($SPLITLET_NODE_NAME; default: the one node on that NATS)
  --state-dir DIR   a local \`splitlet up\`'s state (default: $SPLITLET_STATE_DIR or ./.splitlet), used without --nats-url
  --request-timeout DURATION
                    how long to wait for NATS and for a command's answer (0, 5, 5s, 500ms, 1m; default 0 =
                    no limit on the answer, 5 s to connect). An unreachable NATS fails at once, naming the URL.

NATS identity: a local \`splitlet up\` gives the CLI its own user (read-mostly, plus apply/delete/logs/exec),
found in the state dir; with --nats-url, $SPLITLET_NATS_USER and $SPLITLET_NATS_PASSWORD (or nats://user:pass@host).
`;

/** A count option (`--pod-workers`, `--partitions`): a positive integer, or undefined when absent. */
function positiveIntegerOption(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

function resourceArg(positionals: string[], verb: string): { kind: string; name: string | undefined } {
  const [kindRaw, name] = positionals;
  if (!kindRaw) throw new CliError(`splitlet ${verb}: a resource type is required (pods)\n\n${USAGE}`);
  let kind = kindRaw;
  let n = name;
  if (kind.includes('/')) [kind, n] = kind.split('/', 2) as [string, string];
  if (['partition', 'partitions'].includes(kind) && verb === 'get') return { kind: 'partitions', name: n };
  if (!['pod', 'pods', 'po'].includes(kind))
    throw new CliError(`error: the server doesn't have a resource type "${kind}" (splitlet serves pods${verb === 'get' ? ' and partitions' : ''})`);
  return { kind: 'pods', name: n };
}

async function main(rawArgv: string[]): Promise<number> {
  // `exec POD -- CMD…`: everything after `--` is the command, never flags.
  const dashes = rawArgv[0] === 'exec' ? rawArgv.indexOf('--') : -1;
  const execCommand = dashes >= 0 ? rawArgv.slice(dashes + 1) : [];
  const ownArgv = dashes >= 0 ? rawArgv.slice(0, dashes) : rawArgv;
  // `logs -f` means follow (as in kubectl); everywhere else -f is --filename.
  const argv = ownArgv[0] === 'logs' ? ownArgv.map((a) => (a === '-f' ? '--follow' : a)) : ownArgv;
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'state-dir': { type: 'string' },
      'nats-url': { type: 'string' },
      'request-timeout': { type: 'string' },
      'log-format': { type: 'string' },
      tail: { type: 'string' },
      'node-name': { type: 'string' },
      'pod-workers': { type: 'string' },
      'manifest-url': { type: 'string' },
      'cri-endpoint': { type: 'string' },
      runtime: { type: 'string' },
      partitions: { type: 'string' },
      'no-restart': { type: 'boolean' },
      'no-apiserver': { type: 'boolean' },
      out: { type: 'string' },
      listen: { type: 'string' },
      store: { type: 'string' },
      'monitor-port': { type: 'string' },
      'server-name': { type: 'string' },
      'owner-uid': { type: 'string' },
      rotate: { type: 'boolean' },
      'helm-values': { type: 'string' },
      config: { type: 'string' },
      kubeconfig: { type: 'string' },
      'hostname-override': { type: 'string' },
      ...Object.fromEntries(
        Object.keys(KUBELET_CONFIG_FLAGS)
          .filter((f) => f !== 'manifest-url')
          .map((f) => [f, { type: 'string' as const }]),
      ),
      'nats-cluster': { type: 'string' },
      filename: { type: 'string', short: 'f' },
      output: { type: 'string', short: 'o' },
      namespace: { type: 'string', short: 'n' },
      'all-namespaces': { type: 'boolean', short: 'A' },
      wait: { type: 'string' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      jaeger: { type: 'string' },
      'trace-id': { type: 'string' },
      episodes: { type: 'boolean' },
      latest: { type: 'boolean' },
      watch: { type: 'boolean', short: 'w' },
      purge: { type: 'boolean' },
      container: { type: 'string', short: 'c' },
      previous: { type: 'boolean', short: 'p' },
      follow: { type: 'boolean' },
      timestamps: { type: 'boolean' },
    },
  });
  const [cmd, ...rest] = positionals;
  if (values.help || !cmd) {
    process.stdout.write(USAGE);
    return cmd || values.help ? 0 : 1;
  }
  const stateDir = resolveStateDir(values['state-dir'], process.env, process.cwd());
  const flags = targetFlags(values, process.env);
  /** Runs a command against the target node (remote or the local instance), then disconnects. */
  // Streaming commands (-w, -f) run until interrupted; every other one is bounded by --request-timeout.
  const streaming = values.watch === true || values.follow === true;
  const withTarget = async (fn: (t: CliTarget) => Promise<void>): Promise<number> => {
    const t = await openTarget(flags, stateDir);
    const limit = flags.requestTimeoutMs > 0 && !streaming ? flags.requestTimeoutMs : 0;
    let timer: NodeJS.Timeout | undefined;
    const deadline =
      limit === 0
        ? new Promise<never>(() => undefined)
        : new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new CliError(`the request to NATS at ${t.natsUrl.replace(/\/\/[^/@]*@/g, '//')} timed out after ${limit} ms (--request-timeout)`)),
              limit,
            );
          });
    try {
      await Promise.race([fn(t), deadline]);
    } finally {
      clearTimeout(timer);
      await Promise.race([t.close(), new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    return 0;
  };
  switch (cmd) {
    case 'up': {
      // The kubelet's configuration file, with the kubelet's flags over it (a flag wins), checked before anything starts.
      const configFile = values.config ?? (process.env['SPLITLET_CONFIG'] || undefined);
      const kubeletFlags: Record<string, string | undefined> = {};
      for (const flag of Object.keys(KUBELET_CONFIG_FLAGS)) kubeletFlags[flag] = (values as Record<string, unknown>)[flag] as string | undefined;
      kubeletFlags['container-runtime-endpoint'] ??= values['cri-endpoint'];
      const kubelet = loadKubeletConfigFile(configFile, kubeletFlags);
      if (values.kubeconfig !== undefined && !existsSync(values.kubeconfig)) throw new CliError(`--kubeconfig ${values.kubeconfig}: no such file`);
      for (const w of kubelet.warnings) process.stderr.write(`warning: ${configFile ?? 'flags'}: ${w}\n`);
      const workers = positiveIntegerOption('--pod-workers', values['pod-workers']) ?? 1;
      const partitions = positiveIntegerOption('--partitions', values.partitions);
      // The default: real containers when containerd and its tools are here (and we are root), else the simulator.
      const canRunContainerd = process.getuid?.() === 0 && missingPrerequisites().length === 0;
      const runtime = values.runtime ?? (kubelet.config.containerRuntimeEndpoint || canRunContainerd ? 'containerd' : 'sim');
      if (values.runtime === undefined && !kubelet.config.containerRuntimeEndpoint) {
        process.stdout.write(
          canRunContainerd ? 'runtime: containerd (found on this machine; --runtime sim for the simulator)\n' : 'runtime: sim-runtime (containerd not available here)\n',
        );
      }
      if (runtime !== 'sim' && runtime !== 'containerd') throw new CliError(`--runtime must be sim or containerd, got ${runtime}`);
      const natsCluster = values['nats-cluster'] === undefined ? undefined : Number(values['nats-cluster']);
      if (natsCluster !== undefined && (!Number.isInteger(natsCluster) || natsCluster < 3))
        throw new CliError(`--nats-cluster must be an integer of at least 3 (a JetStream quorum that survives one server), got ${values['nats-cluster']}`);
      const logFormat = values['log-format'] ?? 'console';
      if (logFormat !== 'console' && logFormat !== 'json') throw new CliError(`--log-format must be console or json, got ${logFormat}`);
      let criEndpoint = kubelet.config.containerRuntimeEndpoint;
      if (runtime === 'containerd' && !criEndpoint) {
        // The project's own containerd under the state dir, with its images imported (built from the
        // host's busybox on the first run: the long step).
        const { runtime: rt, images } = await withProgress(process.stdout, 'Starting containerd and importing its images', () => ensureLocalRuntime(stateDir.root));
        const imported = images.filter((i) => i.imported);
        if (imported.length > 0) process.stdout.write(`  images built and imported: ${imported.map((i) => i.names[0]).join(', ')}\n`);
        process.stdout.write(`containerd ${rt.version.runtimeVersion} at ${rt.socket} (pod network ${rt.network.subnet}); stop it with \`splitlet runtime down\`\n`);
        criEndpoint = rt.socket;
      }
      return up(
        stateDir,
        {
          // --hostname-override is the kubelet's name for it; --node-name wins when both are given.
          nodeName: values['node-name'] ?? values['hostname-override'] ?? process.env['NODE_NAME'] ?? defaultNodeName(),
          podWorkers: workers,
          runtime,
          criEndpoint,
          manifestUrl: kubelet.config.staticPodURL,
          kubeletConfig: kubelet.config,
          restart: !values['no-restart'],
          apiserver: !values['no-apiserver'],
          kubeconfig: values.kubeconfig === undefined ? undefined : resolve(values.kubeconfig),
          partitions,
          extraEnv: {},
          logFormat,
          ...(natsCluster !== undefined ? { natsCluster } : {}),
        },
        // --nats-url: run the node's processes against that NATS instead of spawning one.
        values['nats-url'] !== undefined ? { ...process.env, NATS_URL: values['nats-url'] } : process.env,
        process.stdout,
      );
    }
    case 'apply': {
      const f = values.filename;
      if (!f) throw new CliError('error: must specify -f FILE (or -f - for stdin)');
      const text = f === '-' ? readFileSync(0, 'utf8') : readFileSync(f, 'utf8');
      const origin = f === '-' ? 'stdin' : f;
      if (flags.natsUrl !== undefined) return withTarget((t) => applyRemote(t, text, origin, process.stdout));
      ensureStateDir(stateDir);
      apply(stateDir, text, origin, process.stdout);
      return 0;
    }
    case 'delete': {
      const { name } = resourceArg(rest, 'delete');
      if (!name) throw new CliError('error: resource name is required: splitlet delete pod NAME');
      const opts = { wait: values.wait !== 'false', timeoutMs: Number(values.timeout ?? 300) * 1000 };
      return withTarget((t) => deletePod(t, name, values.namespace ?? 'default', opts, process.stdout));
    }
    case 'get': {
      const { kind, name } = resourceArg(rest, 'get');
      if (kind === 'partitions') return withTarget((t) => getPartitions(t, { output: values.output, watch: values.watch ?? false }, process.stdout));
      return withTarget((t) => getPods(t, name, { namespace: values.namespace, allNamespaces: values['all-namespaces'] }, values.output, process.stdout));
    }
    case 'describe': {
      const { name } = resourceArg(rest, 'describe');
      if (!name) throw new CliError('error: resource name is required: splitlet describe pod NAME');
      return withTarget((t) => describe(t, name, values.namespace ?? 'default', process.stdout));
    }
    case 'logs': {
      const args = rest[0] === 'pod' || rest[0] === 'pods' || rest[0] === 'po' ? rest.slice(1) : rest;
      const [first] = args;
      if (!first) throw new CliError('error: a pod name is required: splitlet logs POD [-c CONTAINER]');
      const name = first.startsWith('pod/') ? first.slice(4) : first;
      const tail = values.tail === undefined ? undefined : Number(values.tail);
      if (tail !== undefined && (!Number.isInteger(tail) || tail < -1)) throw new CliError(`--tail must be an integer (-1 for all), got ${values.tail}`);
      const opts = {
        namespace: values.namespace ?? 'default',
        container: values.container,
        previous: values.previous ?? false,
        follow: values.follow ?? false,
        timestamps: values.timestamps ?? false,
        tail,
      };
      return withTarget((t) => logs(t, name, opts, process.stdout, process.stderr));
    }
    case 'exec': {
      const args = rest[0] === 'pod' || rest[0] === 'pods' || rest[0] === 'po' ? rest.slice(1) : rest;
      const [first, ...extra] = args;
      if (!first) throw new CliError('error: a pod name is required: splitlet exec POD [-c CONTAINER] -- COMMAND [args...]');
      if (dashes < 0) throw new CliError('error: the command goes after --: splitlet exec POD [-c CONTAINER] -- COMMAND [args...]');
      if (extra.length > 0) throw new CliError(`error: unexpected arguments before --: ${extra.join(' ')}`);
      const name = first.startsWith('pod/') ? first.slice(4) : first;
      const t = await openTarget(flags, stateDir);
      try {
        return await exec(t, name, execCommand, { namespace: values.namespace ?? 'default', container: values.container, timeoutSeconds: 0 }, process.stdout, process.stderr);
      } finally {
        await t.close();
      }
    }
    case 'nats-config': {
      // The pod-workers' partitions: they may take over (delete) only those durables, so a node run
      // with another PARTITIONS needs its config generated with the same number.
      const partitions = positiveIntegerOption('--partitions', values.partitions);
      if (values['helm-values'] !== undefined) {
        writeFileSync(values['helm-values'], renderHelmAuthValues(values['node-name'], partitions));
        process.stdout.write(`wrote ${values['helm-values']} (NATS Helm chart values: the users; passwords from the Secret splitlet-nats-users)\n`);
        if (values.out === undefined) return 0;
      }
      if (values.out === undefined) throw new CliError('splitlet nats-config: --out DIR (or --helm-values FILE) is required');
      const int = (flag: string, v: string | undefined): number | undefined => {
        if (v === undefined) return undefined;
        if (!/^\d+$/.test(v)) throw new CliError(`--${flag} must be a non-negative integer, got ${JSON.stringify(v)}`);
        return Number(v);
      };
      const done = writeNatsConfigDir({
        dir: values.out,
        node: values['node-name'],
        partitions,
        listen: values.listen ?? '0.0.0.0:4222',
        storeDir: values.store ?? '/data',
        monitorPort: int('monitor-port', values['monitor-port']),
        serverName: values['server-name'],
        ownerUid: int('owner-uid', values['owner-uid']),
        rotate: values.rotate === true,
      });
      process.stdout.write(`${done === 'kept' ? 'kept the existing' : 'wrote'} ${values.out}/nats.conf and ${values.out}/users/<identity>\n`);
      return 0;
    }
    case 'provision': {
      if (flags.natsUrl === undefined)
        throw new CliError('splitlet provision: --nats-url (or SPLITLET_NATS_URL) is required, with the admin identity in SPLITLET_NATS_USER / SPLITLET_NATS_PASSWORD');
      await provisionTopology(flags.natsUrl, flags.credential, flags.requestTimeoutMs > 0 ? flags.requestTimeoutMs : 30_000, streamMaxAgesOf(process.env));
      process.stdout.write(`streams and buckets provisioned on ${flags.natsUrl.replace(/\/\/[^/@]*@/g, '//')}\n`);
      return 0;
    }
    case 'runtime': {
      return runtimeCommand({ sub: rest[0], stateDir: stateDir.root, purge: values.purge ?? false, json: values.output === 'json' }, process.stdout);
    }
    case 'trace': {
      const args = rest[0] === 'pod' || rest[0] === 'pods' || rest[0] === 'po' ? rest.slice(1) : rest;
      const name = args[0];
      if (!name && !values['trace-id']) throw new CliError('error: a pod name is required: splitlet trace POD');
      if (values.episodes && values.latest) throw new CliError('error: --episodes and --latest cannot be used together');
      if ((values.episodes || values.latest) && values['trace-id'])
        throw new CliError(`error: --${values.episodes ? 'episodes' : 'latest'} picks from a pod's traces: give the pod, not --trace-id`);
      const opts = {
        output: values.output,
        jaeger: values.jaeger ?? process.env['JAEGER_QUERY_URL'],
        traceId: values['trace-id'],
        episodes: values.episodes ?? false,
        latest: values.latest ?? false,
      };
      return withTarget((t) => trace(t, name ?? '', values.namespace ?? 'default', opts, process.stdout));
    }
    case 'events': {
      return withTarget((t) => events(t, { watch: values.watch ?? false, output: values.output }, process.stdout));
    }
    default:
      throw new CliError(`unknown command "${cmd}"\n\n${USAGE}`);
  }
}

/** Exits once stdout and stderr are flushed (a pipe would otherwise lose the tail of large output). */
function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

main(process.argv.slice(2)).then(
  (code) => exitAfterFlush(code),
  (e: unknown) => {
    if (e instanceof CliError || isRuntimeError(e)) {
      process.stderr.write(`${e.message}\n`);
      exitAfterFlush(e.exitCode);
      return;
    }
    if (e instanceof TypeError && (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${e.message}\n\n${USAGE}`);
      exitAfterFlush(2);
      return;
    }
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    exitAfterFlush(1);
  },
);
