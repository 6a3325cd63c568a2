/**
 * The state directory: how every `splitlet` command finds the running instance.
 *
 * Layout (all under one folder, so several instances can run side by side):
 *
 *   instance.json      what `up` started: NATS URL, node name, processes, dirs
 *   manifests/         the file source's static pod manifests (`apply` writes here)
 *   kubelet/           the kubelet root dir (pods/<uid>/volumes …)
 *   logs/pods/         container logs (/var/log/pods layout)
 *   nats/              the JetStream store of a spawned nats-server
 *   run/               sockets and port files
 *   kubeconfig         the embedded API server's kubeconfig (`kubectl --kubeconfig .splitlet/kubeconfig`)
 *   apiserver/         its CA, serving certificate and token
 *   logs/*.log         each process's output
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';

export const InstanceProcess = z.object({
  name: z.string(),
  pid: z.number().int(),
  healthPort: z.number().int().optional(),
});

export const InstanceInfo = z.object({
  version: z.literal(1),
  nodeName: z.string(),
  natsUrl: z.string(),
  /** True when `up` spawned the nats-server itself. */
  natsSpawned: z.boolean(),
  supervisorPid: z.number().int(),
  runtime: z.enum(['sim', 'containerd']),
  /** Pod-worker partitions, when not the default. */
  partitions: z.number().int().optional(),
  startedAt: z.string(),
  processes: z.array(InstanceProcess),
});
export type InstanceInfo = z.infer<typeof InstanceInfo>;

/** Paths inside a state dir. */
export interface StateDir {
  root: string;
  instanceFile: string;
  manifests: string;
  kubeletRoot: string;
  podLogs: string;
  natsStore: string;
  run: string;
  logs: string;
  /** The embedded API server's kubeconfig (written by the apiserver once it listens). */
  kubeconfig: string;
  /** The embedded API server's CA, serving certificate and token. */
  apiCerts: string;
}

/** Resolves the state dir: `--state-dir`, else SPLITLET_STATE_DIR, else `.splitlet/` in the current directory. */
export function resolveStateDir(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): StateDir {
  const root = resolve(cwd, flag ?? env['SPLITLET_STATE_DIR'] ?? '.splitlet');
  return {
    root,
    instanceFile: join(root, 'instance.json'),
    manifests: join(root, 'manifests'),
    kubeletRoot: join(root, 'kubelet'),
    podLogs: join(root, 'logs', 'pods'),
    natsStore: join(root, 'nats'),
    run: join(root, 'run'),
    logs: join(root, 'logs'),
    kubeconfig: join(root, 'kubeconfig'),
    apiCerts: join(root, 'apiserver'),
  };
}

/** Creates every folder of the layout. */
export function ensureStateDir(s: StateDir): void {
  for (const d of [s.root, s.manifests, s.kubeletRoot, s.podLogs, s.natsStore, s.run, s.logs, s.apiCerts]) mkdirSync(d, { recursive: true });
}

/** Writes instance.json atomically. */
export function writeInstance(s: StateDir, info: InstanceInfo): void {
  const tmp = `${s.instanceFile}.tmp`;
  writeFileSync(tmp, JSON.stringify(InstanceInfo.parse(info), null, 2));
  renameSync(tmp, s.instanceFile);
}

export function removeInstance(s: StateDir): void {
  rmSync(s.instanceFile, { force: true });
}

/** Reads instance.json, or throws an error telling the user to run `splitlet up`. */
export function readInstance(s: StateDir): InstanceInfo {
  let raw: string;
  try {
    raw = readFileSync(s.instanceFile, 'utf8');
  } catch {
    throw new CliError(`no running splitlet found in ${s.root} (missing instance.json): start one with \`splitlet up\`, or pass --state-dir`);
  }
  const parsed = InstanceInfo.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new CliError(`${s.instanceFile} is not a valid instance file: ${parsed.error.message}`);
  if (!isAlive(parsed.data.supervisorPid)) {
    throw new CliError(`the splitlet instance in ${s.root} is not running (pid ${parsed.data.supervisorPid} is gone): start it with \`splitlet up\``);
  }
  return parsed.data;
}

/** True if a process with that pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** An error whose message is meant for the user as is (no stack trace). */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}
