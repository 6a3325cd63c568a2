/**
 * The compose smoke test: the README's "docker compose" steps, for real, on the Docker engine
 * DOCKER_HOST names (.ci/run starts one with .ci/docker-engine.sh; without one the test prints why
 * and skips). The repository's docker-compose.yml with the CI overrides (test/e2e/compose.ci*.yml:
 * the unprivileged node workaround, the Jaeger stand-in, local base images):
 *
 *   build both images once (for every service and both stacks) → up with 3 pod-workers → every
 *   container healthy → kubectl on the host against the embedded apiserver (its kubeconfig copied
 *   out of the container) → a busybox pod with an exec readiness probe applied, Running and Ready
 *   on the containerd node → its log read from the host → its creation trace in "Jaeger" with
 *   spans from every process (the prober's readiness result included) → 50 pods applied while
 *   pod-worker scales to 4 and back to 2, each Running with exactly one sandbox and one container
 *   → delete → containerd killed in the node: the node container restarts, the node-local
 *   processes that share its network namespace restart into the new one, all healthy again → a
 *   pod resolves a compose service name (the node's pod DNS) → down -v → nothing left.
 *
 * Then the same compose file with the simulated runtime (docker-compose.sim.yml, no privileges):
 * up, healthy, a pod Running with its log, down -v, nothing left.
 *
 * Every pod step is the README's `splitlet` command on the host, against the published NATS port:
 * `splitlet apply -f FILE --nats-url …` (the api source over the bus), `splitlet get pods`,
 * `splitlet logs` (served by cri-adapter over the bus), `splitlet delete pod`; polling and the
 * 50 deletes run the same commands' code in this process (a CLI start per poll costs seconds on a
 * loaded machine). The exactly-once check reads containerd itself through its socket in the
 * node-state volume. Each phase's duration is printed (`# phase …`) and summed up at the end.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PassThrough, Writable } from 'node:stream';
import { join } from 'node:path';
import type { Pod } from '@splitlet/api';
import { GrpcRuntimeService } from '@splitlet/cri';
import { eventually } from '@splitlet/testkit';
import { deletePod, getPods as cliGetPods } from '../../services/cli/src/commands/pods.ts';
import { resolveStateDir } from '../../services/cli/src/state-dir.ts';
import { openTarget, targetFlags } from '../../services/cli/src/target.ts';
import type { CliTarget } from '../../services/cli/src/target.ts';
import { buildImages, composeSkipReason, composeStack, removeImages, run } from './compose-stack.ts';
import type { ComposeStack } from './compose-stack.ts';

/** The processes whose spans a pod creation trace must hold (each its own service.name). */
const PROCESSES = ['config-source', 'sync-loop', 'pod-worker', 'volume-manager', 'cri-adapter', 'pleg', 'prober', 'status-manager'];
/** The processes that share the node container's network namespace (and follow it when it restarts). */
const NODE_LOCAL = ['cri-adapter', 'pleg', 'volume-manager', 'prober'];
const SCALE_PODS = 50;
/** The services of the stack but pod-worker: nats, jaeger, node, cri-adapter, pleg, volume-manager, prober, apiserver, config-source, sync-loop, status-manager. */
const FIXED_SERVICES = 11;
const CLI = join(import.meta.dirname, '..', '..', 'services', 'cli', 'bin', 'splitlet.js');

/** The one-shot services (NATS identities, provisioning): they exit 0 once done. */
const ONE_SHOT = new Set(['nats-auth', 'provision']);
/** The CLI's NATS identity of the stack under test (the README: its password from the nats container). */
let cliPassword = '';
async function readCliPassword(stack: ComposeStack): Promise<void> {
  cliPassword = (await stack.compose(['exec', '-T', 'nats', 'cat', '/auth/users/cli'])).trim();
}
/** The environment the README exports for the CLI: the `cli` user and its password. */
const cliEnv = (): NodeJS.ProcessEnv => ({ SPLITLET_NATS_USER: 'cli', SPLITLET_NATS_PASSWORD: cliPassword });

/** `splitlet <args> --nats-url <url>` on the host, as the README runs it, as the stack's `cli` user. */
function splitlet(natsUrl: string, args: readonly string[], timeoutMs = 120_000): Promise<string> {
  return run(process.execPath, [CLI, ...args, '--nats-url', natsUrl], { ...process.env, ...cliEnv() }, timeoutMs);
}

/** The duration of every phase of this run, in order. */
const phases: [string, number][] = [];
const runStart = Date.now();

/** Runs one phase and records (and prints) how long it took. */
async function phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t = Date.now();
  try {
    return await fn();
  } finally {
    const ms = Date.now() - t;
    phases.push([name, ms]);
    process.stdout.write(`# phase ${name}: ${(ms / 1000).toFixed(1)} s (at ${((Date.now() - runStart) / 1000).toFixed(0)} s)\n`);
  }
}

const skip = await composeSkipReason();
if (skip !== undefined) process.stdout.write(`# compose smoke test skipped: ${skip}\n`);

/** Both stacks run from the same two images, built once. */
let built: Promise<void> | undefined;
const ensureImages = (): Promise<void> =>
  (built ??= phase('build images (stage the host tree, build node + splitlet)', async () => {
    process.stdout.write(`# images: ${await buildImages()}\n`);
  }));

after(async () => {
  if (skip !== undefined) return;
  if (built !== undefined) await removeImages();
  const total = phases.reduce((sum, [, ms]) => sum + ms, 0);
  const table = phases.map(([name, ms]) => `#   ${(ms / 1000).toFixed(1).padStart(6)} s  ${name}`).join('\n');
  process.stdout.write(
    `# compose smoke test phases:\n${table}\n#   ${(total / 1000).toFixed(1).padStart(6)} s  in phases; ${((Date.now() - runStart) / 1000).toFixed(0)} s in all\n`,
  );
});

function manifest(name: string, command: string, probe = false): string {
  const readiness = probe ? `    readinessProbe:\n      exec: {command: ["sh", "-c", "true"]}\n      periodSeconds: 2\n` : '';
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox:1.37
    command: ["sh", "-c", ${JSON.stringify(command)}]
${readiness}`;
}
const echoing = (text: string): string => `echo '${text}'; exec sleep 3600`;

interface JaegerTrace {
  traceID: string;
  spans: { spanID: string; operationName: string; processID: string; tags: { key: string; value: unknown }[] }[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

/** What `splitlet get pods -o json` prints, through the command's code in this process. */
async function listPods(target: CliTarget): Promise<Pod[]> {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  await cliGetPods(target, undefined, {}, 'json', sink);
  return (JSON.parse(text) as { items?: Pod[] }).items ?? [];
}
const podNamed = (all: readonly Pod[], name: string): Pod | undefined => all.find((p) => p.metadata.name === name && p.metadata.namespace === 'default');

/** Waits until the project's containers are all healthy (or running, without a healthcheck), `workers` pod-workers among them. */
async function waitHealthy(stack: ComposeStack, what: string, workers: number, extra: (states: [string, string, number][]) => boolean = () => true): Promise<void> {
  await eventually(
    async () => {
      const states = [...(await stack.states()).values()].filter(([svc]) => !ONE_SHOT.has(svc));
      const bad = states.filter(([, s]) => s !== 'healthy' && s !== 'running');
      const count = states.filter(([svc]) => svc === 'pod-worker').length;
      return bad.length === 0 && count === workers && states.length >= FIXED_SERVICES + workers && extra(states) ? true : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 2000, message: what },
  ).catch(async (e: unknown) => {
    throw new Error(`${String(e)}; states: ${JSON.stringify([...(await stack.states()).values()])}`);
  });
}

describe('docker compose: splitlet as containers', { skip: skip ?? false, timeout: 900_000 }, () => {
  let stack: ComposeStack;
  let target: CliTarget | undefined;
  let manifests: string;
  let work: string;
  let up = false;

  /** `splitlet apply -f FILE` of one or more pods (a multi-document file). */
  const apply = async (file: string, pods: readonly [string, string][], probe = false): Promise<string> => {
    const path = join(work, file);
    writeFileSync(path, pods.map(([name, command]) => manifest(name, command, probe)).join('---\n'));
    return splitlet(stack.natsUrl, ['apply', '-f', path]);
  };
  const pods = async (): Promise<Pod[]> => {
    target ??= await openTarget(targetFlags({ 'nats-url': stack.natsUrl }, cliEnv()), resolveStateDir(undefined, {}, work));
    return listPods(target);
  };
  const criClient = async (): Promise<GrpcRuntimeService> => {
    const socket = join(await stack.volumePath('node-state'), 'containerd', 'containerd.sock');
    return GrpcRuntimeService.connect({ endpoint: `unix://${socket}`, timeoutMs: 30_000 });
  };

  before(async () => {
    manifests = mkdtempSync(join(tmpdir(), 'splitlet-e2e-manifests-'));
    work = mkdtempSync(join(tmpdir(), 'splitlet-e2e-work-'));
    chmodSync(manifests, 0o755); // config-source runs as uid 1000 (the image's `node` user)
    stack = await composeStack(manifests, 'containerd');
    await ensureImages();
  });

  after(async () => {
    try {
      await target?.close();
    } finally {
      try {
        if (stack !== undefined) {
          await phase('down -v, nothing left (containerd stack)', async () => {
            await stack.down();
            assert.deepEqual(await stack.leftovers(), [], 'down -v leaves no container, network, volume or mount of the project');
          });
        }
      } finally {
        rmSync(manifests, { recursive: true, force: true });
        rmSync(work, { recursive: true, force: true });
      }
    }
  });

  test('up --scale pod-worker=3, every container healthy', async () => {
    await phase('up -d --scale pod-worker=3', () => stack.compose(['up', '-d', '--no-build', '--scale', 'pod-worker=3'], 600_000));
    await phase('every container healthy', () => waitHealthy(stack, 'every container healthy with 3 pod-workers', 3));
    await readCliPassword(stack);
    up = true;
  });

  test('kubectl on the host against the embedded apiserver, with the kubeconfig copied out of its container', async () => {
    assert.ok(up, 'the stack came up (the step before)');
    await phase('kubectl', async () => {
      // The README: `docker compose cp apiserver:/var/lib/splitlet-api/kubeconfig ./kubeconfig` (Compose v2);
      // docker-compose 1.29 has no `cp`, so the container's id and `docker cp`, as the README says for 1.29.
      const id = (await stack.compose(['ps', '-q', 'apiserver'])).trim();
      const kubeconfig = join(work, 'kubeconfig');
      await eventually(
        async () =>
          (await run('docker', ['cp', `${id}:/var/lib/splitlet-api/kubeconfig`, kubeconfig]).then(
            () => true,
            () => false,
          ))
            ? true
            : undefined,
        {
          timeoutMs: 60_000,
          intervalMs: 1000,
          message: 'the apiserver wrote its kubeconfig',
        },
      );
      const kubeconfigText = await run('cat', [kubeconfig]);
      assert.match(kubeconfigText, new RegExp(`server: https://127\\.0\\.0\\.1:${stack.apiPort}`), 'the kubeconfig names the published port');
      const kubectl = (args: readonly string[]): Promise<string> => run('kubectl', ['--kubeconfig', kubeconfig, ...args]);
      await kubectl(['create', 'configmap', 'e2e-kubectl', '--from-literal=from=host']);
      assert.equal(await kubectl(['get', 'configmap', 'e2e-kubectl', '-o', 'jsonpath={.data.from}']), 'host');
      assert.match(await kubectl(['get', 'namespaces', '-o', 'name']), /^namespace\/default$/m);
    });
  });

  test('a busybox pod on the containerd node: applied, Running and Ready, its log, its creation trace from every process', async (t) => {
    assert.ok(up, 'the stack came up');
    const pod = await phase('hello: apply, Running and Ready', async () => {
      assert.match(await apply('hello.yaml', [['hello', echoing('hello from compose')]], true), /^pod\/hello created$/m);
      return eventually(
        async () => {
          const p = podNamed(await pods(), 'hello');
          return p?.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 1000, message: 'hello Running and Ready (its exec readiness probe passed)' },
      );
    });
    const uid = pod.metadata.uid!;
    await phase('hello: get pods, logs from the host', async () => {
      assert.match(await splitlet(stack.natsUrl, ['get', 'pods']), /^hello\s+1\/1\s+Running\s+0\s/m, '`splitlet get pods` shows it');
      const log = await eventually(
        async () => {
          const out = await splitlet(stack.natsUrl, ['logs', 'hello']).catch(() => '');
          return out.includes('hello from compose') ? out : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2000, message: '`splitlet logs hello` from the host' },
      );
      assert.equal(log, 'hello from compose\n', 'the container log, as kubectl logs prints it');
    });

    const trace = await phase('hello: creation trace at the OTLP endpoint', () =>
      eventually(
        async () => {
          const q = new URLSearchParams({ service: 'config-source', operation: 'config.add', tags: JSON.stringify({ 'k8s.pod.uid': uid }) });
          const found = (await (await fetch(`${stack.jaegerUrl}/api/traces?${q.toString()}`)).json()) as { data: JaegerTrace[] };
          const id = found.data[0]?.traceID;
          if (id === undefined) return undefined;
          const tr = ((await (await fetch(`${stack.jaegerUrl}/api/traces/${id}`)).json()) as { data: JaegerTrace[] }).data[0];
          const services = new Set(tr?.spans.map((s) => tr.processes[s.processID]?.serviceName));
          return tr !== undefined && PROCESSES.every((p) => services.has(p)) && tr.spans.some((s) => s.operationName === 'runtime.v1.RuntimeService/StartContainer')
            ? tr
            : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 1000, message: 'the creation trace with spans from every process' },
      ),
    );
    for (const p of Object.values(trace.processes)) {
      assert.ok(
        p.tags.some((x) => x.key === 'service.instance.id' && typeof x.value === 'string' && x.value !== ''),
        `${p.serviceName} has a service.instance.id`,
      );
    }
    assert.ok(
      trace.spans.some((s) => s.operationName === 'probe Readiness' && trace.processes[s.processID]?.serviceName === 'prober'),
      'the prober span of the readiness result',
    );
    const perService = PROCESSES.map((p) => `${p} ${trace.spans.filter((s) => trace.processes[s.processID]?.serviceName === p).length}`);
    t.diagnostic(`creation trace ${trace.traceID}: ${trace.spans.length} spans (${perService.join(', ')})`);
  });

  test(`${SCALE_PODS} pods applied while pod-worker scales 3 → 4 → 2: each Running, exactly once`, async () => {
    assert.ok(up, 'the stack came up');
    const names = Array.from({ length: SCALE_PODS }, (_, i) => `load-${i}`);
    await phase(`${SCALE_PODS} pods applied while scaling 3 → 4 → 2`, async () => {
      const creating = (async () => {
        for (let i = 0; i < names.length; i += 10) {
          const batch = names.slice(i, i + 10);
          const out = await apply(
            `load-${i}.yaml`,
            batch.map((n) => [n, echoing(`pod ${n}`)]),
          );
          for (const n of batch) assert.match(out, new RegExp(`^pod/${n} created$`, 'm'));
        }
      })();
      try {
        await stack.compose(['up', '-d', '--no-build', '--no-recreate', '--scale', 'pod-worker=4'], 300_000);
      } finally {
        await creating;
      }
      await stack.compose(['up', '-d', '--no-build', '--no-recreate', '--scale', 'pod-worker=2'], 300_000);
    });
    const all = await phase(`${SCALE_PODS} pods Running`, () =>
      eventually(
        async () => {
          const ps = await pods();
          return names.every((n) => podNamed(ps, n)?.status?.phase === 'Running') ? ps : undefined;
        },
        { timeoutMs: 300_000, intervalMs: 2000, message: `${SCALE_PODS} pods Running` },
      ),
    );
    await phase('healthy with 2 pod-workers', () => waitHealthy(stack, 'healthy with 2 pod-workers', 2));

    // Exactly once: per pod one sandbox and one container, never restarted, in containerd itself.
    await phase('exactly once, in containerd', async () => {
      const cri = await criClient();
      try {
        const sandboxes = (await cri.ListPodSandbox({})).items;
        const containers = (await cri.ListContainers({})).containers;
        for (const name of names) {
          const uid = podNamed(all, name)!.metadata.uid;
          const sbs = sandboxes.filter((s) => s.metadata?.uid === uid);
          assert.equal(sbs.length, 1, `${name}: one sandbox, got ${sbs.length}`);
          const cs = containers.filter((c) => c.podSandboxId === sbs[0]!.id);
          assert.deepEqual(
            cs.map((c) => [c.metadata?.name, c.metadata?.attempt, c.state]),
            [['main', 0, 'CONTAINER_RUNNING']],
            `${name}: one container, first attempt, running`,
          );
          assert.equal(podNamed(all, name)!.status?.containerStatuses?.[0]?.restartCount, 0, `${name}: no restart`);
        }
      } finally {
        cri.close();
      }
    });
  });

  test('splitlet delete pod, for every pod: nothing left in containerd', async () => {
    assert.ok(up, 'the stack came up');
    await phase('delete: hello by the CLI, 50 by its code, all gone', async () => {
      // The README's step, as a user runs it (waits until the pod is gone) …
      const cli = splitlet(stack.natsUrl, ['delete', 'pod', 'hello']);
      try {
        // … and, meanwhile, the 50 others through the same command's code in this process.
        const sink = new PassThrough();
        for (let i = 0; i < SCALE_PODS; i++) await deletePod(target!, `load-${i}`, 'default', { wait: false, timeoutMs: 0 }, sink);
      } finally {
        assert.match(await cli, /^pod "hello" deleted$/m);
      }
      await eventually(async () => ((await pods()).length === 0 ? true : undefined), { timeoutMs: 300_000, intervalMs: 2000, message: 'every pod gone (`splitlet get pods`)' });
    });
    await phase('no sandbox left in containerd', async () => {
      const cri = await criClient();
      try {
        await eventually(async () => ((await cri.ListPodSandbox({})).items.length === 0 ? true : undefined), { timeoutMs: 120_000, intervalMs: 1000, message: 'no sandbox left' });
      } finally {
        cri.close();
      }
    });
  });

  test('containerd dies in the node: the node container restarts, the processes in its network follow it, pods resolve names again', async (t) => {
    assert.ok(up, 'the stack came up');
    const before = await stack.states();
    const restartsOf = (states: Map<string, [string, string, number]> | [string, string, number][], service: string): number =>
      [...(states instanceof Map ? states.values() : states)].filter(([svc]) => svc === service).reduce((n, [, , r]) => n + r, 0);
    const nodeId = (await stack.compose(['ps', '-q', 'node'])).trim();
    const netnsOf = async (service: string): Promise<string> => {
      const id = (await stack.compose(['ps', '-q', service])).trim();
      return (await run('docker', ['exec', id, '/usr/local/bin/busybox', 'readlink', '/proc/self/ns/net'])).trim();
    };
    const nodeNetns = async (): Promise<string> => (await run('docker', ['exec', nodeId, 'readlink', '/proc/1/ns/net'])).trim();
    const oldNetns = await nodeNetns();
    await phase('node restart: containerd killed, node and its network followers back, healthy', async () => {
      await run('docker', ['exec', nodeId, 'sh', '-c', 'kill -9 "$(cat /var/lib/splitlet/containerd/containerd.pid)"']);
      await waitHealthy(stack, 'the node and every node-local process restarted and healthy', 2, (states) =>
        ['node', ...NODE_LOCAL].every((svc) => restartsOf(states, svc) > restartsOf(before, svc)),
      );
      const netns = await nodeNetns();
      assert.notEqual(netns, oldNetns, 'the restarted node container has a new network namespace');
      for (const svc of NODE_LOCAL) assert.equal(await netnsOf(svc), netns, `${svc} runs in the node's new network namespace`);
    });
    const afterRestart = await stack.states();
    t.diagnostic(`restarts: ${['node', ...NODE_LOCAL].map((svc) => `${svc} ${restartsOf(before, svc)} → ${restartsOf(afterRestart, svc)}`).join(', ')}`);

    const log = await phase('a pod on the restarted node resolves a compose service name (pod DNS)', async () => {
      assert.match(await apply('dns.yaml', [['dns', 'nslookup nats; echo nslookup-exit=$?; exec sleep 3600']]), /^pod\/dns created$/m);
      await eventually(async () => (podNamed(await pods(), 'dns')?.status?.phase === 'Running' ? true : undefined), {
        timeoutMs: 180_000,
        intervalMs: 1000,
        message: 'dns Running',
      });
      return eventually(
        async () => {
          const out = await splitlet(stack.natsUrl, ['logs', 'dns']).catch(() => '');
          return out.includes('nslookup-exit=') ? out : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2000, message: '`splitlet logs dns`' },
      );
    });
    assert.match(log, /Name:\s+nats(\.\S*)?\s+Address:\s+\d+\.\d+\.\d+\.\d+/, `the pod resolved "nats" through the node's DNS forwarder; its log:\n${log}`);
    await phase('dns pod deleted', async () => {
      await deletePod(target!, 'dns', 'default', { wait: true, timeoutMs: 120_000 }, new PassThrough());
    });
  });
});

describe('docker compose with the simulated runtime (docker-compose.sim.yml)', { skip: skip ?? false, timeout: 600_000 }, () => {
  let stack: ComposeStack;
  let manifests: string;

  before(async () => {
    manifests = mkdtempSync(join(tmpdir(), 'splitlet-e2e-manifests-'));
    chmodSync(manifests, 0o755);
    stack = await composeStack(manifests, 'sim');
    await ensureImages();
  });

  after(async () => {
    try {
      if (stack !== undefined) {
        await phase('sim: down -v, nothing left', async () => {
          await stack.down();
          assert.deepEqual(await stack.leftovers(), [], 'down -v leaves no container, network, volume or mount of the project');
        });
      }
    } finally {
      rmSync(manifests, { recursive: true, force: true });
    }
  });

  test('up without privileges, healthy, a pod applied, Running, with its log', async () => {
    await phase('sim: up -d --scale pod-worker=2', () => stack.compose(['up', '-d', '--no-build', '--scale', 'pod-worker=2'], 600_000));
    await phase('sim: every container healthy', () => waitHealthy(stack, 'every container healthy', 2));
    await readCliPassword(stack);
    const nodeId = (await stack.compose(['ps', '-q', 'node'])).trim();
    const privileged = (await run('docker', ['inspect', '--format', '{{.HostConfig.Privileged}} {{.HostConfig.CapAdd}}', nodeId])).trim();
    assert.equal(privileged, 'false []', 'the simulated node runs without privileges');
    await phase('sim: a pod Running, its log', async () => {
      const file = join(manifests, '..', `${stack.project}-sim.yaml`);
      writeFileSync(file, manifest('sim', echoing('hello from the simulator')));
      try {
        assert.match(await splitlet(stack.natsUrl, ['apply', '-f', file]), /^pod\/sim created$/m);
      } finally {
        rmSync(file, { force: true });
      }
      const target = await openTarget(targetFlags({ 'nats-url': stack.natsUrl }, cliEnv()), resolveStateDir(undefined, {}, manifests));
      try {
        await eventually(async () => (podNamed(await listPods(target), 'sim')?.status?.phase === 'Running' ? true : undefined), {
          timeoutMs: 180_000,
          intervalMs: 1000,
          message: 'the sim pod Running',
        });
      } finally {
        await target.close();
      }
      const log = await eventually(
        async () => {
          const out = await splitlet(stack.natsUrl, ['logs', 'sim']).catch(() => '');
          return out.includes('hello from the simulator') ? out : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2000, message: '`splitlet logs sim` from the host' },
      );
      assert.equal(log, 'hello from the simulator\n');
    });
  });
});
