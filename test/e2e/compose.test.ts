/**
 * The compose smoke test: the README's "docker compose" steps, for real, on the Docker engine
 * DOCKER_HOST names (.ci/run starts one with .ci/docker-engine.sh; without one the test prints why
 * and skips). The repository's docker-compose.yml with the CI override (test/e2e/compose.ci.yml:
 * the unprivileged node workaround, the Jaeger stand-in, local base images):
 *
 *   build the images → up with 3 pod-workers → every container healthy → a busybox pod Running
 *   on the containerd node → its log read from the host → its creation trace in "Jaeger" with spans
 *   from every process → 50 pods created while pod-worker scales to 4 and back to 2, each Running
 *   with exactly one sandbox and one container → delete → down -v → nothing of the project left.
 *
 * Then the same compose file with the simulated runtime (docker-compose.sim.yml, no privileges):
 * up, healthy, a pod Running with its log, down -v, nothing left.
 *
 * Pods are created as the README says: a manifest file in the manifests dir (config-source's
 * static pod dir, bind-mounted). Status is read from the bus through the published NATS port (the
 * buckets `splitlet get pods` reads); the log through `docker-compose exec node`, the file the
 * kubelet layout puts in the pod-logs volume.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectBus } from '@splitlet/bus';
import type { NatsBus } from '@splitlet/bus';
import { GrpcRuntimeService } from '@splitlet/cri';
import { eventually } from '@splitlet/testkit';
import type { EventuallyOptions } from '@splitlet/testkit';
import { listPods } from '../../services/cli/src/node-view.ts';
import type { PodView } from '../../services/cli/src/node-view.ts';
import { composeSkipReason, composeStack, run } from './compose-stack.ts';
import type { ComposeStack } from './compose-stack.ts';

/** The processes whose spans a pod creation trace must hold (each its own service.name). */
const PROCESSES = ['config-source', 'sync-loop', 'pod-worker', 'volume-manager', 'cri-adapter', 'pleg', 'status-manager'];
const SCALE_PODS = 50;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** {@link eventually} for a probe that returns undefined until the awaited value is there. */
async function until<T>(fn: () => Promise<T | undefined>, options: EventuallyOptions): Promise<T> {
  return (await eventually(fn, options)) as T;
}

const skip = await composeSkipReason();
if (skip !== undefined) process.stdout.write(`# compose smoke test skipped: ${skip}\n`);

function manifest(name: string, text: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox:1.37
    command: ["sh", "-c", "echo '${text}'; exec sleep 3600"]
`;
}

interface JaegerTrace {
  traceID: string;
  spans: { spanID: string; operationName: string; processID: string; tags: { key: string; value: unknown }[] }[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

describe('docker compose: splitlet as containers', { skip: skip ?? false, timeout: 480_000 }, () => {
  let stack: ComposeStack;
  let manifests: string;
  let bus: NatsBus | undefined;
  let t0 = Date.now();
  const took = (): string => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

  /** Writes a manifest atomically (a dotfile, then rename), as `splitlet apply` does. */
  const apply = (name: string, text: string): void => {
    writeFileSync(join(manifests, `.${name}.yaml`), manifest(name, text));
    renameSync(join(manifests, `.${name}.yaml`), join(manifests, `${name}.yaml`));
  };
  const pods = async (): Promise<PodView[]> => listPods(bus!, stack.node);
  const podNamed = (all: PodView[], name: string): PodView | undefined => all.find((p) => p.pod.metadata.name === `${name}-${stack.node}`);
  const waitHealthy = async (what: string, workers: number): Promise<void> => {
    await eventually(
      async () => {
        const states = [...(await stack.states()).values()];
        const bad = states.filter(([, s]) => s !== 'healthy' && s !== 'running');
        const count = states.filter(([svc]) => svc === 'pod-worker').length;
        return bad.length === 0 && count === workers && states.length >= 9 + workers ? true : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 2000, message: what },
    ).catch(async (e: unknown) => {
      throw new Error(`${String(e)}; states: ${JSON.stringify([...(await stack.states()).values()])}`);
    });
  };

  before(async () => {
    t0 = Date.now();
    manifests = mkdtempSync(join(tmpdir(), 'splitlet-e2e-manifests-'));
    chmodSync(manifests, 0o755); // config-source runs as uid 1000 (the image's `node` user)
    stack = await composeStack(manifests, 'containerd');
    await run('bash', [join(import.meta.dirname, 'stage-app.sh')]);
  });

  after(async () => {
    await bus?.close().catch(() => undefined);
    if (stack !== undefined) {
      try {
        await stack.down();
        const left = await stack.leftovers();
        assert.deepEqual(left, [], 'down -v leaves no container, network or volume of the project');
      } finally {
        rmSync(manifests, { recursive: true, force: true });
        process.stdout.write(`# compose smoke test (containerd node): ${took()} in all\n`);
      }
    }
  });

  test('build, up --scale pod-worker=3, every container healthy', async (t) => {
    await stack.compose(['build'], 300_000);
    t.diagnostic(`images built at ${took()}`);
    await stack.compose(['up', '-d', '--no-build', '--scale', 'pod-worker=3'], 300_000);
    await waitHealthy('every container healthy with 3 pod-workers', 3);
    t.diagnostic(`healthy at ${took()}`);
    bus = await connectBus({ servers: stack.natsUrl, process: 'e2e', node: stack.node, logger: quiet, provision: false });
  });

  test('a busybox pod on the containerd node: Running, its log, its creation trace from every process', async (t) => {
    assert.ok(bus, 'the stack came up (the step before)');
    apply('hello', 'hello from compose');
    const pod = await until(async () => {
      const p = podNamed(await pods(), 'hello');
      return p?.pod.status?.phase === 'Running' ? p : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500, message: 'hello Running' });
    const uid = pod.pod.metadata.uid;
    t.diagnostic(`hello Running at ${took()}`);

    const log = await until(async () => {
      const out = await stack.compose(['exec', '-T', 'node', 'sh', '-c', `cat /var/log/pods/default_hello-${stack.node}_${uid}/main/0.log`]).catch(() => '');
      return out.includes('hello from compose') ? out : undefined;
    }, { timeoutMs: 30_000, intervalMs: 1000, message: 'the pod log in the pod-logs volume' });
    assert.match(log, /^\S+ stdout F hello from compose$/m, 'the CRI log line of the container');

    const trace = await until(async () => {
      const q = new URLSearchParams({ service: 'config-source', operation: 'config.add', tags: JSON.stringify({ 'k8s.pod.uid': uid }) });
      const found = (await (await fetch(`${stack.jaegerUrl}/api/traces?${q.toString()}`)).json()) as { data: JaegerTrace[] };
      const id = found.data[0]?.traceID;
      if (id === undefined) return undefined;
      const tr = ((await (await fetch(`${stack.jaegerUrl}/api/traces/${id}`)).json()) as { data: JaegerTrace[] }).data[0];
      const services = new Set(tr?.spans.map((s) => tr.processes[s.processID]?.serviceName));
      return tr !== undefined && PROCESSES.every((p) => services.has(p)) && tr.spans.some((s) => s.operationName === 'runtime.v1.RuntimeService/StartContainer') ? tr : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000, message: 'the creation trace with spans from every process' });
    for (const p of Object.values(trace.processes)) {
      assert.ok(p.tags.some((x) => x.key === 'service.instance.id' && typeof x.value === 'string' && x.value !== ''), `${p.serviceName} has a service.instance.id`);
    }
    const perService = PROCESSES.map((p) => `${p} ${trace.spans.filter((s) => trace.processes[s.processID]?.serviceName === p).length}`);
    t.diagnostic(`creation trace ${trace.traceID}: ${trace.spans.length} spans (${perService.join(', ')})`);
  });

  test(`${SCALE_PODS} pods while pod-worker scales 3 → 4 → 2: each Running, exactly once`, async (t) => {
    assert.ok(bus, 'the stack came up');
    const names = Array.from({ length: SCALE_PODS }, (_, i) => `load-${i}`);
    const creating = (async () => {
      for (const [i, name] of names.entries()) {
        apply(name, `pod ${name}`);
        if (i % 10 === 9) await new Promise((r) => setTimeout(r, 500));
      }
    })();
    await stack.compose(['up', '-d', '--no-build', '--no-recreate', '--scale', 'pod-worker=4'], 300_000);
    t.diagnostic(`scaled to 4 at ${took()}`);
    await creating;
    await stack.compose(['up', '-d', '--no-build', '--no-recreate', '--scale', 'pod-worker=2'], 300_000);
    t.diagnostic(`scaled to 2 at ${took()}`);
    const all = await until(async () => {
      const ps = await pods();
      const running = names.filter((n) => podNamed(ps, n)?.pod.status?.phase === 'Running');
      return running.length === names.length ? ps : undefined;
    }, { timeoutMs: 240_000, intervalMs: 1000, message: `${SCALE_PODS} pods Running` });
    t.diagnostic(`${SCALE_PODS} Running at ${took()}`);
    await waitHealthy('healthy with 2 pod-workers', 2);

    // Exactly once: per pod one sandbox and one container, never restarted, in containerd itself.
    const socket = join(await stack.volumePath('node-state'), 'containerd', 'containerd.sock');
    const cri = await GrpcRuntimeService.connect({ endpoint: `unix://${socket}`, timeoutMs: 30_000 });
    try {
      const sandboxes = (await cri.ListPodSandbox({})).items;
      const containers = (await cri.ListContainers({})).containers;
      for (const name of names) {
        const uid = podNamed(all, name)!.pod.metadata.uid;
        const sbs = sandboxes.filter((s) => s.metadata?.uid === uid);
        assert.equal(sbs.length, 1, `${name}: one sandbox, got ${sbs.length}`);
        const cs = containers.filter((c) => c.podSandboxId === sbs[0]!.id);
        assert.deepEqual(cs.map((c) => [c.metadata?.name, c.metadata?.attempt, c.state]), [['main', 0, 'CONTAINER_RUNNING']], `${name}: one container, first attempt, running`);
        assert.equal(podNamed(all, name)!.pod.status?.containerStatuses?.[0]?.restartCount, 0, `${name}: no restart`);
      }
    } finally {
      cri.close();
    }
  });

  test('delete every pod: nothing left in containerd', async () => {
    assert.ok(bus, 'the stack came up');
    for (const f of readdirSync(manifests)) rmSync(join(manifests, f));
    await eventually(async () => ((await pods()).length === 0 ? true : undefined), { timeoutMs: 180_000, intervalMs: 1000, message: 'every pod gone from the bus' });
    const socket = join(await stack.volumePath('node-state'), 'containerd', 'containerd.sock');
    const cri = await GrpcRuntimeService.connect({ endpoint: `unix://${socket}`, timeoutMs: 30_000 });
    try {
      await eventually(async () => ((await cri.ListPodSandbox({})).items.length === 0 ? true : undefined), { timeoutMs: 120_000, intervalMs: 1000, message: 'no sandbox left' });
    } finally {
      cri.close();
    }
  });
});

describe('docker compose with the simulated runtime (docker-compose.sim.yml)', { skip: skip ?? false, timeout: 300_000 }, () => {
  let stack: ComposeStack;
  let manifests: string;
  let bus: NatsBus | undefined;
  let t0 = Date.now();

  before(async () => {
    t0 = Date.now();
    manifests = mkdtempSync(join(tmpdir(), 'splitlet-e2e-manifests-'));
    chmodSync(manifests, 0o755);
    stack = await composeStack(manifests, 'sim');
    await run('bash', [join(import.meta.dirname, 'stage-app.sh')]);
  });

  after(async () => {
    await bus?.close().catch(() => undefined);
    try {
      await stack.down();
      assert.deepEqual(await stack.leftovers(), [], 'down -v leaves no container, network or volume of the project');
    } finally {
      rmSync(manifests, { recursive: true, force: true });
      rmSync(join(import.meta.dirname, '..', '..', '.build'), { recursive: true, force: true });
      process.stdout.write(`# compose smoke test (sim-runtime): ${((Date.now() - t0) / 1000).toFixed(0)} s in all\n`);
    }
  });

  test('up without privileges, healthy, a pod Running with its log', async (t) => {
    await stack.compose(['up', '-d', '--build', '--scale', 'pod-worker=2'], 300_000);
    await until(
      async () => {
        const states = [...(await stack.states()).values()];
        return states.length === 11 && states.every(([, s]) => s === 'healthy' || s === 'running') ? true : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 2000, message: 'every container healthy' },
    );
    const nodeId = (await stack.compose(['ps', '-q', 'node'])).trim();
    const privileged = (await run('docker', ['inspect', '--format', '{{.HostConfig.Privileged}} {{.HostConfig.CapAdd}}', nodeId])).trim();
    assert.equal(privileged, 'false []', 'the simulated node runs without privileges');
    bus = await connectBus({ servers: stack.natsUrl, process: 'e2e', node: stack.node, logger: quiet, provision: false });
    writeFileSync(join(manifests, 'sim.yaml'), manifest('sim', 'hello from the simulator'));
    const pod = await until(async () => {
      const p = (await listPods(bus!, stack.node)).find((x) => x.pod.metadata.name === `sim-${stack.node}`);
      return p?.pod.status?.phase === 'Running' ? p : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500, message: 'the sim pod Running' });
    const file = `/var/log/pods/default_sim-${stack.node}_${pod.pod.metadata.uid}/main/0.log`;
    const log = await until(async () => {
      const out = await stack.compose(['exec', '-T', 'cri-adapter', 'busybox', 'cat', file]).catch(() => '');
      return out.includes('hello from the simulator') ? out : undefined;
    }, { timeoutMs: 30_000, intervalMs: 1000, message: 'the sim pod log' });
    assert.match(log, /^\S+ stdout F hello from the simulator$/m);
    t.diagnostic(`sim pod Running with its log at ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  });
});
