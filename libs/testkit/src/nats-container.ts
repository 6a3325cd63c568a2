/**
 * A NATS server in a container, through testcontainers (`@testcontainers/nats`), with the same
 * {@link NatsServer} surface as the local binary, so a suite runs unchanged against either
 * ({@link startTestNats} picks by `SPLITLET_TEST_NATS`).
 *
 * Needs a reachable Docker engine (`DOCKER_HOST`); {@link containerEngineSkipReason} says why not,
 * for a test to print and skip. The image is `NATS_TEST_IMAGE` (default `nats:2.10-alpine`; CI uses
 * its locally built `splitlet-base/nats:local`, as no registry is reachable there). Ryuk (the
 * reaper container) needs a pullable image too, so CI runs with `TESTCONTAINERS_RYUK_DISABLED=true`:
 * `stop()` removes the container itself.
 */
import { randomUUID } from 'node:crypto';
import type { StartedNatsContainer } from '@testcontainers/nats';
import { freePort } from './free-port.js';
import { startNatsServer } from './nats-server.js';
import type { NatsServer, NatsServerOptions } from './nats-server.js';
import { TestkitError } from './testkit-error.js';

/** The image when `NATS_TEST_IMAGE` is not set. */
export const DEFAULT_NATS_TEST_IMAGE = 'nats:2.10-alpine';

/**
 * Why no container engine can be used here, or undefined when one answers. Asks testcontainers
 * for a working runtime strategy (fails in well under a second where there is none).
 */
export async function containerEngineSkipReason(): Promise<string | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return undefined;
  } catch (e) {
    return `no container engine reachable (DOCKER_HOST=${process.env['DOCKER_HOST'] ?? 'unset'}): ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** Starts a JetStream NATS container with its client port on a fixed free host port. */
export async function startNatsContainer(options: { image?: string; startTimeoutMs?: number } = {}): Promise<NatsServer> {
  const { NatsContainer } = await import('@testcontainers/nats');
  const { getContainerRuntimeClient } = await import('testcontainers');
  const image = options.image ?? process.env['NATS_TEST_IMAGE'] ?? DEFAULT_NATS_TEST_IMAGE;
  /** Without the user/password the module sets by default: the suites connect as to the binary. */
  class OpenNatsContainer extends NatsContainer {
    // The constructor calls these to add `--user test --pass test`; the suites connect without credentials.
    override withUsername(): this {
      return this;
    }
    override withPass(): this {
      return this;
    }
  }
  const port = await freePort();
  const lines: string[] = [];
  const run = randomUUID();
  const client = await getContainerRuntimeClient();
  let container: StartedNatsContainer;
  try {
    container = await new OpenNatsContainer(image)
      .withJetStream()
      .withArg('-sd', '/tmp/nats-store')
      .withExposedPorts({ container: 4222, host: port })
      .withLabels({ 'io.splitlet.testkit.run': run })
      .withStartupTimeout(options.startTimeoutMs ?? 60_000)
      .withLogConsumer((stream) => {
        let rest = '';
        stream.on('data', (chunk: Buffer | string) => {
          const parts = (rest + chunk.toString()).split('\n');
          rest = parts.pop() ?? '';
          lines.push(...parts);
        });
      })
      .start();
  } catch (e) {
    // Without Ryuk nothing else removes a container that was created but did not get ready.
    const left = await client.container.dockerode.listContainers({ all: true, filters: { label: [`io.splitlet.testkit.run=${run}`] } }).catch(() => []);
    for (const c of left)
      await client.container.dockerode
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined);
    throw new TestkitError('ProcessExited', `the NATS container (${image}) did not start: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const pidOf = async (): Promise<number> => (await client.container.inspect(client.container.getById(container.getId()))).State.Pid;
  let pid = await pidOf();
  let stopped = false;
  process.stderr.write(`testkit: NATS container ${container.getId().slice(0, 12)} (${image}) on 127.0.0.1:${port}\n`);
  return {
    url: `nats://${container.getHost()}:${port}`,
    port,
    storeDir: '/tmp/nats-store (in the container)',
    get pid() {
      return pid;
    },
    logs: () => lines,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await container.stop({ timeout: 10_000, remove: true, removeVolumes: true });
    },
    kill: async () => {
      await container.stop({ timeout: 0, remove: false });
    },
    restart: async () => {
      await container.restart({ timeout: 10_000 });
      pid = await pidOf();
    },
  };
}

/**
 * The NATS server a test suite runs against: the local binary ({@link startNatsServer}), or a
 * container when `SPLITLET_TEST_NATS=testcontainers` ({@link startNatsContainer}; only `jetstream`
 * of the options applies there, and JetStream is always on).
 */
export function startTestNats(options: NatsServerOptions = {}): Promise<NatsServer> {
  return process.env['SPLITLET_TEST_NATS'] === 'testcontainers' ? startNatsContainer() : startNatsServer(options);
}
