/**
 * The `splitlet` command line.
 *
 *   splitlet up [--node-name N] [--pod-workers N] [--manifest-url URL] [--cri-endpoint unix://…] [--no-restart]
 *   splitlet apply -f FILE|-
 *   splitlet delete pod NAME [--wait=false]
 *   splitlet get pods [NAME] [-o wide|json|yaml|name]
 *   splitlet describe pod NAME
 *
 * Every command finds its instance through the state dir: --state-dir, SPLITLET_STATE_DIR, or
 * `.splitlet/` in the current directory.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CliError, readInstance, resolveStateDir, ensureStateDir } from './state-dir.js';
import { defaultNodeName, up } from './commands/up.js';
import { apply, deletePod, describe, getPods } from './commands/pods.js';
import { trace } from './commands/trace.js';
import { events } from './commands/events.js';
import { logs } from './commands/logs.js';
import { ensureLocalRuntime, isRuntimeError, missingPrerequisites, runtimeCommand } from '@splitlet/node-setup';
import { DEFAULT_PARTITIONS } from '@splitlet/api';

const USAGE = `splitlet: the kubelet's pod lifecycle as separate processes over NATS JetStream

Usage:
  splitlet up [--node-name NAME] [--pod-workers N] [--manifest-url URL] [--runtime sim|containerd] [--cri-endpoint unix:///path] [--no-restart]
  splitlet apply -f FILE|-
  splitlet delete pod NAME [-n NAMESPACE] [--wait=false]
  splitlet get pods [NAME] [-n NAMESPACE] [-o wide|json|yaml|name]
  splitlet describe pod NAME [-n NAMESPACE]
  splitlet logs POD [-c CONTAINER] [-p|--previous] [-f] [--timestamps]
  splitlet runtime up|down|status [--purge] [-o json]
  splitlet trace [pod] NAME [-o json] [--jaeger URL] [--trace-id ID] [--episodes | --latest]
  splitlet events [-w] [-o json]

Global flags:
  --state-dir DIR   where the running instance keeps its state (default: $SPLITLET_STATE_DIR or ./.splitlet)
`;

function resourceArg(positionals: string[], verb: string): { kind: string; name: string | undefined } {
  const [kindRaw, name] = positionals;
  if (!kindRaw) throw new CliError(`splitlet ${verb}: a resource type is required (pods)\n\n${USAGE}`);
  let kind = kindRaw;
  let n = name;
  if (kind.includes('/')) [kind, n] = kind.split('/', 2) as [string, string];
  if (!['pod', 'pods', 'po'].includes(kind)) throw new CliError(`error: the server doesn't have a resource type "${kind}" (splitlet serves pods)`);
  return { kind: 'pods', name: n };
}

async function main(rawArgv: string[]): Promise<number> {
  // `logs -f` means follow (as in kubectl); everywhere else -f is --filename.
  const argv = rawArgv[0] === 'logs' ? rawArgv.map((a) => (a === '-f' ? '--follow' : a)) : rawArgv;
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'state-dir': { type: 'string' },
      'node-name': { type: 'string' },
      'pod-workers': { type: 'string' },
      'manifest-url': { type: 'string' },
      'cri-endpoint': { type: 'string' },
      runtime: { type: 'string' },
      partitions: { type: 'string' },
      'no-restart': { type: 'boolean' },
      filename: { type: 'string', short: 'f' },
      output: { type: 'string', short: 'o' },
      namespace: { type: 'string', short: 'n' },
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
  switch (cmd) {
    case 'up': {
      const workers = Number(values['pod-workers'] ?? '1');
      if (!Number.isInteger(workers) || workers < 1) throw new CliError(`--pod-workers must be a positive integer, got ${values['pod-workers']}`);
      const partitions = values.partitions === undefined ? undefined : Number(values.partitions);
      if (partitions !== undefined && (!Number.isInteger(partitions) || partitions < 1)) throw new CliError(`--partitions must be a positive integer`);
      // The default: real containers when containerd and its tools are here (and we are root), else the simulator.
      const canRunContainerd = process.getuid?.() === 0 && missingPrerequisites().length === 0;
      const runtime = values.runtime ?? (values['cri-endpoint'] || canRunContainerd ? 'containerd' : 'sim');
      if (values.runtime === undefined && !values['cri-endpoint']) {
        process.stdout.write(canRunContainerd ? 'runtime: containerd (found on this machine; --runtime sim for the simulator)\n' : 'runtime: sim-runtime (containerd not available here)\n');
      }
      if (runtime !== 'sim' && runtime !== 'containerd') throw new CliError(`--runtime must be sim or containerd, got ${runtime}`);
      let criEndpoint = values['cri-endpoint'];
      if (runtime === 'containerd' && !criEndpoint) {
        // The project's own containerd under the state dir, with its images imported.
        const { runtime: rt } = await ensureLocalRuntime(stateDir.root);
        process.stdout.write(`containerd ${rt.version.runtimeVersion} at ${rt.socket} (pod network ${rt.network.subnet}); stop it with \`splitlet runtime down\`\n`);
        criEndpoint = rt.socket;
      }
      return up(
        stateDir,
        {
          nodeName: values['node-name'] ?? process.env['NODE_NAME'] ?? defaultNodeName(),
          podWorkers: workers,
          runtime,
          criEndpoint,
          manifestUrl: values['manifest-url'],
          restart: !values['no-restart'],
          partitions,
          extraEnv: {},
        },
        process.env,
        process.stdout,
      );
    }
    case 'apply': {
      const f = values.filename;
      if (!f) throw new CliError('error: must specify -f FILE (or -f - for stdin)');
      const text = f === '-' ? readFileSync(0, 'utf8') : readFileSync(f, 'utf8');
      ensureStateDir(stateDir);
      apply(stateDir, text, f === '-' ? 'stdin' : f, process.stdout);
      return 0;
    }
    case 'delete': {
      const { name } = resourceArg(rest, 'delete');
      if (!name) throw new CliError('error: resource name is required: splitlet delete pod NAME');
      const inst = readInstance(stateDir);
      await deletePod(stateDir, inst, name, values.namespace ?? 'default', { wait: values.wait !== 'false', timeoutMs: Number(values.timeout ?? 300) * 1000 }, process.stdout);
      return 0;
    }
    case 'get': {
      const { name } = resourceArg(rest, 'get');
      await getPods(readInstance(stateDir), name, values.namespace, values.output, process.stdout);
      return 0;
    }
    case 'describe': {
      const { name } = resourceArg(rest, 'describe');
      if (!name) throw new CliError('error: resource name is required: splitlet describe pod NAME');
      await describe(readInstance(stateDir), name, values.namespace ?? 'default', process.stdout);
      return 0;
    }
    case 'logs': {
      const args = rest[0] === 'pod' || rest[0] === 'pods' || rest[0] === 'po' ? rest.slice(1) : rest;
      const [first] = args;
      if (!first) throw new CliError('error: a pod name is required: splitlet logs POD [-c CONTAINER]');
      const name = first.startsWith('pod/') ? first.slice(4) : first;
      await logs(
        stateDir,
        readInstance(stateDir),
        name,
        { namespace: values.namespace ?? 'default', container: values.container, previous: values.previous ?? false, follow: values.follow ?? false, timestamps: values.timestamps ?? false },
        process.stdout,
        process.stderr,
      );
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
      if ((values.episodes || values.latest) && values['trace-id']) throw new CliError(`error: --${values.episodes ? 'episodes' : 'latest'} picks from a pod's traces: give the pod, not --trace-id`);
      const inst = readInstance(stateDir);
      await trace(
        inst,
        name ?? '',
        values.namespace ?? 'default',
        {
          output: values.output,
          jaeger: values.jaeger ?? process.env['JAEGER_QUERY_URL'],
          traceId: values['trace-id'],
          partitions: inst.partitions ?? DEFAULT_PARTITIONS,
          episodes: values.episodes ?? false,
          latest: values.latest ?? false,
        },
        process.stdout,
      );
      return 0;
    }
    case 'events': {
      await events(readInstance(stateDir), { watch: values.watch ?? false, output: values.output }, process.stdout);
      return 0;
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
