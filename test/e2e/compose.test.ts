/**
 * The compose smoke test: the README's "docker compose" steps, for real, on the Docker engine
 * DOCKER_HOST names (.ci/run starts one with .ci/docker-engine.sh; without one the test prints why
 * and skips). The repository's docker-compose.yml with the CI override (test/e2e/compose.ci.yml:
 * the unprivileged node workaround, the Jaeger stand-in, local base images):
 *
 *   build the images → up with 3 pod-workers → every container healthy → kubectl on the host
 *   against the embedded apiserver (its kubeconfig copied out of the container) → a busybox pod
 *   with an exec readiness probe applied, Running and Ready on the containerd node → its log read
 *   from the host → its creation trace in "Jaeger" with spans from every process (the prober's
 *   readiness result included) → 50 pods applied while pod-worker scales to 4 and back to 2, each
 *   Running with exactly one sandbox and one container → delete → down -v → nothing left.
 *
 * Then the same compose file with the simulated runtime (docker-compose.sim.yml, no privileges):
 * up, healthy, a pod Running with its log, down -v, nothing left.
 *
 * Every pod step is the README's `splitlet` command on the host, against the published NATS port:
 * `splitlet apply -f FILE --nats-url …` (the api source over the bus), `splitlet get pods`,
 * `splitlet logs` (served by cri-adapter over the bus), `splitlet delete pod`. The exactly-once
 * check reads containerd itself through its socket in the node-state volume.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import type { Pod } from '@splitlet/api';
import { GrpcRuntimeService } from '@splitlet/cri';
import { eventually } from '@splitlet/testkit';
import type { EventuallyOptions } from '@splitlet/testkit';
import { deletePod } from '../../services/cli/src/commands/pods.ts';
import { resolveStateDir } from '../../services/cli/src/state-dir.ts';
import { openTarget, targetFlags } from '../../services/cli/src/target.ts';
import { composeSkipReason, composeStack, run } from './compose-stack.ts';
import type { ComposeStack } from './compose-stack.ts';

/** The processes whose spans a pod creation trace must hold (each its own service.name). */
const PROCESSES = ['config-source', 'sync-loop', 'pod-worker', 'volume-manager', 'cri-adapter', 'pleg', 'prober', 'status-manager'];
const SCALE_PODS = 50;
/** The services of the stack but pod-worker: nats, jaeger, node, cri-adapter, pleg, volume-manager, prober, apiserver, config-source, sync-loop, status-manager. */
const FIXED_SERVICES = 11;
const CLI = join(import.meta.dirname, '..', '..', 'services', 'cli', 'bin', 'splitlet.js');

/** `splitlet <args> --nats-url <url>` on the host, as the README runs it. */
function splitlet(natsUrl: string, args: readonly string[], timeoutMs = 120_000): Promise<string> {
  return run(process.execPath, [CLI, ...args, '--nats-url', natsUrl], process.env, timeoutMs);
}

/** The pods `splitlet get pods -o json` prints (a v1 List). */
async function getPods(natsUrl: string): Promise<Pod[]> {
  return ((JSON.parse(await splitlet(natsUrl, ['get', 'pods', '-o', 'json'])) as { items?: Pod[] }).items ?? []);
}

/** {@link eventually} for a probe that returns undefined until the awaited value is there. */
async function until<T>(fn: () => Promise<T | undefined>, options: EventuallyOptions): Promise<T> {
  return (await eventually(fn, options)) as T;
}

const skip = await composeSkipReason();
if (skip !== undefined) process.stdout.write(`# compose smoke test skipped: ${skip}\n`);

function manifest(name: string, text: string, probe = false): string {
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
    command: ["sh", "-c", "echo '${text}'; exec sleep 3600"]
${readiness}`;
}

interface JaegerTrace {
  traceID: string;
  spans: { spanID: string; operationName: string; processID: string; tags: { key: string; value: unknown }[] }[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

describe('docker compose: splitlet as containers', { skip: skip ?? false, timeout: 480_000 }, () => {
  let stack: ComposeStack;
  let manifests: string;
  let work: string;
  let up = false;
  let t0 = Date.now();
  const took = (): string => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

  /** `splitlet apply -f FILE` of one or more pods (a multi-document file). */
  const apply = async (file: string, pods: readonly [string, string][], probe = false): Promise<string> => {
    const path = join(work, file);
    writeFileSync(path, pods.map(([name, text]) => manifest(name, text, probe)).join('---\n'));
    return splitlet(stack.natsUrl, ['apply', '-f', path]);
  };
  const podNamed = (all: Pod[], name: string): Pod | undefined => all.find((p) => p.metadata.name === name && p.metadata.namespace === 'default');
  const waitHealthy = async (what: string, workers: number): Promise<void> => {
    await eventually(
      async () => {
        const states = [...(await stack.states()).values()];
        const bad = states.filter(([, s]) => s !== 'healthy' && s !== 'running');
        const count = states.filter(([svc]) => svc === 'pod-worker').length;
        return bad.length === 0 && count === workers && states.length >= FIXED_SERVICES + workers ? true : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 2000, message: what },
    ).catch(async (e: unknown) => {
      throw new Error(`${String(e)}; states: ${JSON.stringify([...(await stack.states()).values()])}`);
    });
  };

  before(async () => {
    t0 = Date.now();
    manifests = mkdtempSync(join(tmpdir(), 'splitlet-e2e-manifests-'));
    work = mkdtempSync(join(tmpdir(), 'splitlet-e2e-work-'));
    chmodSync(manifests, 0o755); // config-source runs as uid 1000 (the image's `node` user)
    stack = await composeStack(manifests, 'containerd');
    await run('bash', [join(import.meta.dirname, 'stage-app.sh')]);
  });

  after(async () => {
    if (stack !== undefined) {
      try {
        await stack.down();
        const left = await stack.leftovers();
        assert.deepEqual(left, [], 'down -v leaves no container, network or volume of the project');
      } finally {
        rmSync(manifests, { recursive: true, force: true });
        rmSync(work, { recursive: true, force: true });
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
    up = true;
  });

  test('kubectl on the host against the embedded apiserver, with the kubeconfig copied out of its container', async () => {
    assert.ok(up, 'the stack came up (the step before)');
    // The README: `docker compose cp apiserver:/var/lib/splitlet-api/kubeconfig ./kubeconfig` (Compose v2);
    // docker-compose 1.29 has no `cp`, so the container's id and `docker cp`, as the README says for 1.29.
    const id = (await stack.compose(['ps', '-q', 'apiserver'])).trim();
    const kubeconfig = join(work, 'kubeconfig');
    await until(async () => ((await run('docker', ['cp', `${id}:/var/lib/splitlet-api/kubeconfig`, kubeconfig]).then(() => true, () => false)) ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 1000,
      message: 'the apiserver wrote its kubeconfig',
    });
    const kubeconfigText = await run('cat', [kubeconfig]);
    assert.match(kubeconfigText, new RegExp(`server: https://127\\.0\\.0\\.1:${stack.apiPort}`), 'the kubeconfig names the published port');
    const kubectl = (args: readonly string[]): Promise<string> => run('kubectl', ['--kubeconfig', kubeconfig, ...args]);
    await kubectl(['create', 'configmap', 'e2e-kubectl', '--from-literal=from=host']);
    assert.equal(await kubectl(['get', 'configmap', 'e2e-kubectl', '-o', 'jsonpath={.data.from}']), 'host');
    assert.match(await kubectl(['get', 'namespaces', '-o', 'name']), /^namespace\/default$/m);
  });

  test('a busybox pod on the containerd node: applied, Running and Ready, its log, its creation trace from every process', async (t) => {
    assert.ok(up, 'the stack came up');
    assert.match(await apply('hello.yaml', [['hello', 'hello from compose']], true), /^pod\/hello created$/m);
    const pod = await until(async () => {
      const p = podNamed(await getPods(stack.natsUrl), 'hello');
      return p?.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1000, message: 'hello Running and Ready (its exec readiness probe passed)' });
    const uid = pod.metadata.uid!;
    t.diagnostic(`hello Running and Ready at ${took()}`);
    assert.match(await splitlet(stack.natsUrl, ['get', 'pods']), /^hello\s+1\/1\s+Running\s+0\s/m, '`splitlet get pods` shows it');

    const log = await until(async () => {
      const out = await splitlet(stack.natsUrl, ['logs', 'hello']).catch(() => '');
      return out.includes('hello from compose') ? out : undefined;
    }, { timeoutMs: 30_000, intervalMs: 1000, message: '`splitlet logs hello` from the host' });
    assert.equal(log, 'hello from compose\n', 'the container log, as kubectl logs prints it');

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
    assert.ok(trace.spans.some((s) => s.operationName === 'probe Readiness' && trace.processes[s.processID]?.serviceName === 'prober'), 'the prober span of the readiness result');
    const perService = PROCESSES.map((p) => `${p} ${trace.spans.filter((s) => trace.processes[s.processID]?.serviceName === p).length}`);
    t.diagnostic(`creation trace ${trace.traceID}: ${trace.spans.length} spans (${perService.join(', ')})`);
  });

  test(`${SCALE_PODS} pods applied while pod-worker scales 3 → 4 → 2: each Running, exactly once`, async (t) => {
    assert.ok(up, 'the stack came up');
    const names = Array.from({ length: SCALE_PODS }, (_, i) => `load-${i}`);
    const creating = (async () => {
      for (let i = 0; i < names.length; i += 10) {
        const batch = names.slice(i, i + 10);
        const out = await apply(`load-${i}.yaml`, batch.map((n) => [n, `pod ${n}`]));
        for (const n of batch) assert.match(out, new RegExp(`^pod/${n} created$`, 'm'));
      }
    })();
    await stack.compose(['up', '-d', '--no-build', '--no-recreate', '--scale', 'pod-worker=4'], 300_000);
    t.diagnostic(`scaled to 4 at ${took()}`);
    await creating;
    await stack.compose(['up', '-d', '--no-build', '--no-recreate', '--scale', 'pod-worker=2'], 300_000);
    t.diagnostic(`scaled to 2 at ${took()}`);
    const all = await until(async () => {
      const ps = await getPods(stack.natsUrl);
      const running = names.filter((n) => podNamed(ps, n)?.status?.phase === 'Running');
      return running.length === names.length ? ps : undefined;
    }, { timeoutMs: 240_000, intervalMs: 2000, message: `${SCALE_PODS} pods Running` });
    t.diagnostic(`${SCALE_PODS} Running at ${took()}`);
    await waitHealthy('healthy with 2 pod-workers', 2);

    // Exactly once: per pod one sandbox and one container, never restarted, in containerd itself.
    const socket = join(await stack.volumePath('node-state'), 'containerd', 'containerd.sock');
    const cri = await GrpcRuntimeService.connect({ endpoint: `unix://${socket}`, timeoutMs: 30_000 });
    try {
      const sandboxes = (await cri.ListPodSandbox({})).items;
      const containers = (await cri.ListContainers({})).containers;
      for (const name of names) {
        const uid = podNamed(all, name)!.metadata.uid;
        const sbs = sandboxes.filter((s) => s.metadata?.uid === uid);
        assert.equal(sbs.length, 1, `${name}: one sandbox, got ${sbs.length}`);
        const cs = containers.filter((c) => c.podSandboxId === sbs[0]!.id);
        assert.deepEqual(cs.map((c) => [c.metadata?.name, c.metadata?.attempt, c.state]), [['main', 0, 'CONTAINER_RUNNING']], `${name}: one container, first attempt, running`);
        assert.equal(podNamed(all, name)!.status?.containerStatuses?.[0]?.restartCount, 0, `${name}: no restart`);
      }
    } finally {
      cri.close();
    }
  });

  test('splitlet delete pod, for every pod: nothing left in containerd', async (t) => {
    assert.ok(up, 'the stack came up');
    // The README's step, as a user runs it (waits until the pod is gone) …
    assert.match(await splitlet(stack.natsUrl, ['delete', 'pod', 'hello']), /^pod "hello" deleted$/m);
    t.diagnostic(`hello deleted at ${took()}`);
    // … and the 50 others through the same command's code in this process: 50 CLI starts would
    // take minutes on a loaded 2-core machine and test nothing more.
    const target = await openTarget(targetFlags({ 'nats-url': stack.natsUrl }, {}), resolveStateDir(undefined, {}, work));
    const sink = new PassThrough();
    try {
      for (let i = 0; i < SCALE_PODS; i++) await deletePod(target, `load-${i}`, 'default', { wait: false, timeoutMs: 0 }, sink);
    } finally {
      await target.close();
    }
    await eventually(async () => ((await getPods(stack.natsUrl)).length === 0 ? true : undefined), { timeoutMs: 180_000, intervalMs: 2000, message: 'every pod gone (`splitlet get pods`)' });
    t.diagnostic(`every pod gone at ${took()}`);
    const socket = join(await stack.volumePath('node-state'), 'containerd', 'containerd.sock');
    const cri = await GrpcRuntimeService.connect({ endpoint: `unix://${socket}`, timeoutMs: 30_000 });
    try {
      await eventually(async () => ((await cri.ListPodSandbox({})).items.length === 0 ? true : undefined), { timeoutMs: 120_000, intervalMs: 1000, message: 'no sandbox left' });
    } finally {
      cri.close();
    }
    t.diagnostic(`no sandbox left at ${took()}`);
  });
});

describe('docker compose with the simulated runtime (docker-compose.sim.yml)', { skip: skip ?? false, timeout: 300_000 }, () => {
  let stack: ComposeStack;
  let manifests: string;
  let t0 = Date.now();

  before(async () => {
    t0 = Date.now();
    manifests = mkdtempSync(join(tmpdir(), 'splitlet-e2e-manifests-'));
    chmodSync(manifests, 0o755);
    stack = await composeStack(manifests, 'sim');
    await run('bash', [join(import.meta.dirname, 'stage-app.sh')]);
  });

  after(async () => {
    try {
      await stack.down();
      assert.deepEqual(await stack.leftovers(), [], 'down -v leaves no container, network or volume of the project');
    } finally {
      rmSync(manifests, { recursive: true, force: true });
      rmSync(join(import.meta.dirname, '..', '..', '.build'), { recursive: true, force: true });
      process.stdout.write(`# compose smoke test (sim-runtime): ${((Date.now() - t0) / 1000).toFixed(0)} s in all\n`);
    }
  });

  test('up without privileges, healthy, a pod applied, Running, with its log', async (t) => {
    await stack.compose(['up', '-d', '--build', '--scale', 'pod-worker=2'], 300_000);
    await until(
      async () => {
        const states = [...(await stack.states()).values()];
        return states.length === FIXED_SERVICES + 2 && states.every(([, s]) => s === 'healthy' || s === 'running') ? true : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 2000, message: 'every container healthy' },
    );
    const nodeId = (await stack.compose(['ps', '-q', 'node'])).trim();
    const privileged = (await run('docker', ['inspect', '--format', '{{.HostConfig.Privileged}} {{.HostConfig.CapAdd}}', nodeId])).trim();
    assert.equal(privileged, 'false []', 'the simulated node runs without privileges');
    const file = join(manifests, '..', `${stack.project}-sim.yaml`);
    writeFileSync(file, manifest('sim', 'hello from the simulator'));
    try {
      assert.match(await splitlet(stack.natsUrl, ['apply', '-f', file]), /^pod\/sim created$/m);
    } finally {
      rmSync(file, { force: true });
    }
    await until(async () => (podRunning(await getPods(stack.natsUrl), 'sim') ? true : undefined), { timeoutMs: 120_000, intervalMs: 1000, message: 'the sim pod Running' });
    const log = await until(async () => {
      const out = await splitlet(stack.natsUrl, ['logs', 'sim']).catch(() => '');
      return out.includes('hello from the simulator') ? out : undefined;
    }, { timeoutMs: 30_000, intervalMs: 1000, message: '`splitlet logs sim` from the host' });
    assert.equal(log, 'hello from the simulator\n');
    t.diagnostic(`sim pod Running with its log at ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  });
});

function podRunning(pods: readonly Pod[], name: string): boolean {
  return pods.some((p) => p.metadata.name === name && p.status?.phase === 'Running');
}
