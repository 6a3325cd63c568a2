/**
 * One docker-compose project of the repository's docker-compose.yml for the smoke test, with the
 * CI overrides (test/e2e/compose.ci*.yml), local base images and the host-built tree, on the engine
 * DOCKER_HOST names (.ci/docker-engine.sh). Its own project name, manifests dir and host ports, so
 * it touches nothing else; `down()` removes its containers, networks and volumes.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@splitlet/testkit';

const ROOT = join(import.meta.dirname, '..', '..');
/** Debian's docker CLI (20.10) first: it builds with BuildKit without the buildx plugin. */
const PATH = `/usr/bin:/usr/sbin:/bin:/sbin:${process.env['PATH'] ?? ''}`;

/** Runs a command; resolves with stdout, rejects with the command, its exit code and output. */
export function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 300_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env: { ...env, PATH }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${error.code ?? error.signal ?? ''}): ${(stderr || stdout || error.message).trim().split('\n').slice(-30).join('\n')}`));
    });
  });
}

/** Why the smoke test cannot run here, or undefined. */
export async function composeSkipReason(): Promise<string | undefined> {
  if (process.env['DOCKER_HOST'] === undefined && !existsSync('/var/run/docker.sock')) {
    return 'no Docker engine: DOCKER_HOST is not set (.ci/run starts one with .ci/docker-engine.sh)';
  }
  try {
    await run('docker-compose', ['version', '--short'], process.env, 10_000);
  } catch (e) {
    return `docker-compose is not installed (apt-get install docker-compose): ${e instanceof Error ? e.message : String(e)}`;
  }
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], process.env, 10_000);
  } catch (e) {
    return `the Docker engine at ${process.env['DOCKER_HOST'] ?? 'unix:///var/run/docker.sock'} does not answer: ${e instanceof Error ? e.message : String(e)}`;
  }
  for (const image of ['splitlet-base/node:local', 'splitlet-base/nats:local', 'splitlet-base/debian:local']) {
    try {
      await run('docker', ['image', 'inspect', '--format', '{{.Id}}', image], process.env, 10_000);
    } catch {
      return `no local base image ${image} (no registry is reachable here): build them with .ci/docker-engine.sh base-images`;
    }
  }
  return undefined;
}

/** A compose project. */
export interface ComposeStack {
  project: string;
  natsUrl: string;
  /** Jaeger's (or its stand-in's) query API, `http://127.0.0.1:<port>`. */
  jaegerUrl: string;
  /** The embedded apiserver's published port on 127.0.0.1. */
  apiPort: number;
  node: string;
  /** Runs `docker-compose <args>` for this project. */
  compose(args: readonly string[], timeoutMs?: number): Promise<string>;
  /** The host path of one of the project's volumes (`docker volume inspect`). */
  volumePath(volume: string): Promise<string>;
  /** Container id → [service, health or state] of the project's containers. */
  states(): Promise<Map<string, [string, string]>>;
  /** What of the project is left on the engine (containers, networks, volumes), as text. */
  leftovers(): Promise<string[]>;
  down(): Promise<void>;
}

/**
 * Sets up a project (no containers yet). `manifests` is the host dir bind-mounted into
 * config-source; `runtime` picks the containerd node (with CI's unprivileged workaround,
 * compose.ci-node.yml) or the simulated runtime (docker-compose.sim.yml, as a user runs it).
 */
export async function composeStack(manifests: string, runtime: 'containerd' | 'sim' = 'containerd', node = 'compose-node'): Promise<ComposeStack> {
  const project = `splitlet-e2e-${runtime}-${process.pid}`;
  const [natsPort, monitorPort, jaegerPort, apiPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    COMPOSE_DOCKER_CLI_BUILD: '1',
    DOCKER_BUILDKIT: '1',
    NODE_IMAGE: 'splitlet-base/node:local',
    DEBIAN_IMAGE: 'splitlet-base/debian:local',
    NATS_IMAGE: 'splitlet-base/nats:local',
    APP_FROM: 'app-context',
    SPLITLET_IMAGE: `${project}/splitlet:dev`,
    SPLITLET_NODE_IMAGE: `${project}/node:dev`,
    SPLITLET_SRC: ROOT,
    SPLITLET_MANIFESTS: manifests,
    SPLITLET_NODE_NAME: node,
    SPLITLET_NATS_PORT: String(natsPort),
    SPLITLET_NATS_MONITOR_PORT: String(monitorPort),
    SPLITLET_JAEGER_UI_PORT: String(jaegerPort),
    SPLITLET_API_PORT: String(apiPort),
  };
  const files = ['docker-compose.yml', ...(runtime === 'sim' ? ['docker-compose.sim.yml'] : ['test/e2e/compose.ci-node.yml']), 'test/e2e/compose.ci.yml'].flatMap((f) => ['-f', join(ROOT, f)]);
  const compose = (args: readonly string[], timeoutMs?: number): Promise<string> =>
    run('docker-compose', ['-p', project, '--project-directory', ROOT, ...files, ...args], env, timeoutMs);
  const label = `label=com.docker.compose.project=${project}`;
  return {
    project,
    natsUrl: `nats://127.0.0.1:${natsPort}`,
    jaegerUrl: `http://127.0.0.1:${jaegerPort}`,
    apiPort,
    node,
    compose,
    volumePath: async (volume) => (await run('docker', ['volume', 'inspect', '--format', '{{.Mountpoint}}', `${project}_${volume}`], env)).trim(),
    states: async () => {
      const ids = (await run('docker', ['ps', '-aq', '--filter', label], env)).split('\n').filter((l) => l !== '');
      const out = new Map<string, [string, string]>();
      if (ids.length === 0) return out;
      const fmt = '{{.Id}} {{index .Config.Labels "com.docker.compose.service"}} {{json .State}}';
      for (const line of (await run('docker', ['inspect', '--format', fmt, ...ids], env)).split('\n')) {
        const [id, service, ...rest] = line.split(' ');
        if (!id || !service || rest.length === 0) continue;
        const state = JSON.parse(rest.join(' ')) as { Status: string; Health?: { Status: string } };
        out.set(id, [service, state.Health?.Status ?? state.Status]);
      }
      return out;
    },
    leftovers: async () => {
      const left: string[] = [];
      for (const kind of ['container', 'network', 'volume'] as const) {
        const args = kind === 'container' ? ['ps', '-aq', '--filter', label] : [kind, 'ls', '-q', '--filter', label];
        for (const id of (await run('docker', args, env)).split('\n').filter((l) => l !== '')) left.push(`${kind} ${id}`);
      }
      // Volumes and container filesystems of the project still mounted on the host.
      for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
        const mountPoint = line.split(' ')[4];
        if (mountPoint?.includes(`/${project}_`) === true) left.push(`mount ${mountPoint}`);
      }
      return left;
    },
    down: async () => {
      await compose(['down', '-v', '--remove-orphans', '--timeout', '30'], 180_000);
      await run('docker', ['image', 'rm', '-f', `${project}/splitlet:dev`, `${project}/node:dev`], env).catch(() => '');
    },
  };
}
