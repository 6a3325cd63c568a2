/**
 * One docker-compose project of the repository's docker-compose.yml for the smoke test, with the
 * CI overrides (test/e2e/compose.ci*.yml), local base images and the host-built tree, on the engine
 * DOCKER_HOST names (.ci/docker-engine.sh). Its own project name, manifests dir and host ports, so
 * it touches nothing else; `down()` removes its containers, networks and volumes. The images are
 * built once per test run ({@link buildImages}) and shared by every project of the run.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@splitlet/testkit';

const ROOT = join(import.meta.dirname, '..', '..');
/** Debian's docker CLI (20.10) first: it builds with BuildKit without the buildx plugin. */
const PATH = `/usr/bin:/usr/sbin:/bin:/sbin:${process.env['PATH'] ?? ''}`;

/** Runs a command; resolves with stdout, rejects with the command, its exit code and output. */
export async function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 300_000): Promise<string> {
  return (await runOutput(cmd, args, env, timeoutMs)).stdout;
}

/** {@link run}, resolving with stdout and stderr. */
export function runOutput(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 300_000): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env: { ...env, PATH }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error === null) resolve({ stdout, stderr });
      else
        reject(new Error(`${cmd} ${args.join(' ')} failed (${error.code ?? error.signal ?? ''}): ${(stderr || stdout || error.message).trim().split('\n').slice(-30).join('\n')}`));
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
    await run('docker', ['version', '--format', '{{.Server.Version}}'], process.env, 30_000);
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

/** The images of this test run: one splitlet image for every process, one node image. */
export const IMAGES = { splitlet: `splitlet-e2e-${process.pid}/splitlet:dev`, node: `splitlet-e2e-${process.pid}/node:dev` } as const;

/**
 * Stages the host-built tree (stage-app.sh) and builds both images once, in parallel (BuildKit
 * shares their common stages), through the compose file as a user's build does: one service per
 * image. Layers come from the engine's build cache when the dependencies did not change.
 */
export async function buildImages(): Promise<string> {
  const t0 = Date.now();
  await run('bash', [join(ROOT, 'test', 'e2e', 'stage-app.sh')]);
  const staged = Date.now() - t0;
  const stack = await composeStack(ROOT, 'containerd');
  const { stdout, stderr } = await stack.composeOutput(['build', '--parallel', 'node', 'pod-worker'], 600_000);
  // BuildKit's plain progress: a step's header `#N [stage k/m] INSTRUCTION …`, later `#N CACHED` when
  // it came from the cache. Both builds number their steps from 1, so a CACHED line belongs to the
  // last header seen with its number.
  const steps = new Set<string>();
  const cached = new Set<string>();
  const lastHeader = new Map<string, string>();
  for (const line of `${stdout}\n${stderr}`.split('\n')) {
    const header = /^#(\d+) (\[[^\]]+\] (?:FROM|COPY|RUN|WORKDIR|ENV|USER|ENTRYPOINT|CMD|VOLUME).*)$/.exec(line);
    if (header) {
      steps.add(header[2]!);
      lastHeader.set(header[1]!, header[2]!);
    }
    const hit = /^#(\d+) CACHED$/.exec(line);
    const key = hit ? lastHeader.get(hit[1]!) : undefined;
    if (key !== undefined) cached.add(key);
  }
  return `staged in ${(staged / 1000).toFixed(1)} s, built in ${((Date.now() - t0 - staged) / 1000).toFixed(1)} s: ${cached.size} of ${steps.size} build steps from the cache`;
}

/** Removes the run's images (their layers stay in the build cache for the next run). */
export async function removeImages(): Promise<void> {
  await run('docker', ['image', 'rm', '-f', IMAGES.splitlet, IMAGES.node]).catch(() => '');
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
  /** {@link ComposeStack.compose} with stdout and stderr. */
  composeOutput(args: readonly string[], timeoutMs?: number): Promise<{ stdout: string; stderr: string }>;
  /** The host path of one of the project's volumes (`docker volume inspect`). */
  volumePath(volume: string): Promise<string>;
  /** Container id → [service, health or state, restart count] of the project's containers. */
  states(): Promise<Map<string, [string, string, number]>>;
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
    // docker-compose's API calls give up after 60 s by default: too short for a loaded 2-core machine.
    COMPOSE_HTTP_TIMEOUT: '300',
    DOCKER_BUILDKIT: '1',
    NODE_IMAGE: 'splitlet-base/node:local',
    DEBIAN_IMAGE: 'splitlet-base/debian:local',
    NATS_IMAGE: 'splitlet-base/nats:local',
    APP_FROM: 'app-context',
    SPLITLET_IMAGE: IMAGES.splitlet,
    SPLITLET_NODE_IMAGE: IMAGES.node,
    SPLITLET_SRC: ROOT,
    SPLITLET_MANIFESTS: manifests,
    SPLITLET_NODE_NAME: node,
    SPLITLET_NATS_PORT: String(natsPort),
    SPLITLET_NATS_MONITOR_PORT: String(monitorPort),
    SPLITLET_JAEGER_UI_PORT: String(jaegerPort),
    SPLITLET_API_PORT: String(apiPort),
  };
  const files = ['docker-compose.yml', ...(runtime === 'sim' ? ['docker-compose.sim.yml'] : ['test/e2e/compose.ci-node.yml']), 'test/e2e/compose.ci.yml'].flatMap((f) => [
    '-f',
    join(ROOT, f),
  ]);
  const composeOutput = (args: readonly string[], timeoutMs?: number): Promise<{ stdout: string; stderr: string }> =>
    runOutput('docker-compose', ['-p', project, '--project-directory', ROOT, ...files, ...args], env, timeoutMs);
  const compose = async (args: readonly string[], timeoutMs?: number): Promise<string> => (await composeOutput(args, timeoutMs)).stdout;
  const label = `label=com.docker.compose.project=${project}`;
  return {
    project,
    natsUrl: `nats://127.0.0.1:${natsPort}`,
    jaegerUrl: `http://127.0.0.1:${jaegerPort}`,
    apiPort,
    node,
    compose,
    composeOutput,
    volumePath: async (volume) => (await run('docker', ['volume', 'inspect', '--format', '{{.Mountpoint}}', `${project}_${volume}`], env)).trim(),
    states: async () => {
      const ids = (await run('docker', ['ps', '-aq', '--filter', label], env)).split('\n').filter((l) => l !== '');
      const out = new Map<string, [string, string, number]>();
      if (ids.length === 0) return out;
      const fmt = '{{.Id}} {{index .Config.Labels "com.docker.compose.service"}} {{.RestartCount}} {{json .State}}';
      for (const line of (await run('docker', ['inspect', '--format', fmt, ...ids], env)).split('\n')) {
        const [id, service, restarts, ...rest] = line.split(' ');
        if (!id || !service || restarts === undefined || rest.length === 0) continue;
        const state = JSON.parse(rest.join(' ')) as { Status: string; Health?: { Status: string } };
        out.set(id, [service, state.Health?.Status ?? state.Status, Number(restarts)]);
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
      await compose(['down', '-v', '--remove-orphans', '--timeout', '30'], 300_000);
    },
  };
}
