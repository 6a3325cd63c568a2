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

const USAGE = `splitlet: the kubelet's pod lifecycle as separate processes over NATS JetStream

Usage:
  splitlet up [--node-name NAME] [--pod-workers N] [--manifest-url URL] [--cri-endpoint unix:///path] [--no-restart]
  splitlet apply -f FILE|-
  splitlet delete pod NAME [-n NAMESPACE] [--wait=false]
  splitlet get pods [NAME] [-n NAMESPACE] [-o wide|json|yaml|name]
  splitlet describe pod NAME [-n NAMESPACE]

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

async function main(argv: string[]): Promise<number> {
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
      const runtime = values.runtime ?? (values['cri-endpoint'] ? 'containerd' : 'sim');
      if (runtime !== 'sim' && runtime !== 'containerd') throw new CliError(`--runtime must be sim or containerd, got ${runtime}`);
      if (runtime === 'containerd' && !values['cri-endpoint']) throw new CliError('--runtime containerd needs --cri-endpoint unix:///path/to/containerd.sock');
      return up(
        stateDir,
        {
          nodeName: values['node-name'] ?? process.env['NODE_NAME'] ?? defaultNodeName(),
          podWorkers: workers,
          runtime,
          criEndpoint: values['cri-endpoint'],
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
    default:
      throw new CliError(`unknown command "${cmd}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    if (e instanceof CliError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(e.exitCode);
    }
    if (e instanceof TypeError && (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${e.message}\n\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
