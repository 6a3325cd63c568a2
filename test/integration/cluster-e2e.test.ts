/**
 * The cluster-mode end-to-end run, the same scenario against two API servers: the embedded one of
 * `splitlet up` and, where a Docker engine that can pull images exists, a real k3s started with
 * `@testcontainers/k3s` (`splitlet up --kubeconfig` pointed at it). A real `splitlet up --runtime
 * sim` node; everything asserted through the API with kubectl: the Node registers Ready with the
 * kubelet's conditions and the node's capacity, its Lease renews, a pod bound to the node goes
 * Pending → Running with its IP, `delete` with grace removes it, a static pod shows as a mirror pod;
 * on the embedded one, the runtime then dies and the Node turns NotReady with the kubelet's error.
 * Where no Docker engine can pull, the k3s half skips and prints why (this file never starts one).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import type { ILease } from 'kubernetes-models/coordination.k8s.io/v1/Lease';
import type { INode } from 'kubernetes-models/v1/Node';
import type { IPod } from 'kubernetes-models/v1/Pod';
import { startSplitlet, waitFor, type Instance } from './harness.ts';

const run = promisify(execFile);
const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const K3S_IMAGE = process.env['K3S_IMAGE'] ?? 'rancher/k3s:v1.32.2-k3s1';

const kubectlSkip = await run(KUBECTL, ['version', '--client'], { timeout: 20_000 }).then(
  () => undefined,
  (e: unknown) => `kubectl not usable: ${e instanceof Error ? e.message : String(e)}`,
);

/** Why k3s cannot run here (no engine, or an engine that cannot pull the image), or undefined. */
async function k3sSkipReason(): Promise<string | undefined> {
  if (kubectlSkip !== undefined) return kubectlSkip;
  if (process.env['RUN_K3S_TESTS'] === '0') return 'RUN_K3S_TESTS=0';
  const { getContainerRuntimeClient, ImageName } = await import('testcontainers');
  let client: Awaited<ReturnType<typeof getContainerRuntimeClient>>;
  try {
    client = await getContainerRuntimeClient();
  } catch (e) {
    return `no Docker engine reachable (DOCKER_HOST=${process.env['DOCKER_HOST'] ?? 'unset'}): ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  }
  try {
    await client.image.pull(ImageName.fromString(K3S_IMAGE));
  } catch (e) {
    return `the Docker engine cannot pull ${K3S_IMAGE}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
  }
  return undefined;
}

const k3sSkip = await k3sSkipReason();
if (k3sSkip !== undefined) process.stdout.write(`# skipping the k3s cluster-mode e2e: ${k3sSkip}\n`);

const work = mkdtempSync(join(tmpdir(), 'splitlet-cluster-e2e-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** The scenario, against the API server of `kubeconfig`, for node `s.nodeName`. */
async function clusterScenario(s: Instance, kubeconfig: string): Promise<void> {
  const k = async (...args: string[]): Promise<string> => (await run(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
  const json = async (...args: string[]): Promise<unknown> => JSON.parse(await k(...args, '-o', 'json'));
  const getNode = async (name: string): Promise<INode> => (await json('get', 'node', name)) as INode;
  const getLease = async (name: string): Promise<ILease> => (await json('get', 'lease', '-n', 'kube-node-lease', name)) as ILease;
  const getPod = async (name: string): Promise<IPod> => (await json('get', 'pod', name, '-n', 'default')) as IPod;
  const node = s.nodeName;

  // The Node: Ready, the kubelet's conditions, the node's own capacity.
  const n = await waitFor(
    'the Node Ready',
    async () => {
      const got = await getNode(node).catch(() => undefined);
      return got?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? got : undefined;
    },
    180_000,
  );
  const conditions = new Map((n.status?.conditions ?? []).map((c) => [c.type, c]));
  const condition = (type: string) => conditions.get(type) ?? assert.fail(`the Node has no ${type} condition`);
  assert.deepEqual([condition('Ready').reason, condition('Ready').message], ['KubeletReady', 'kubelet is posting ready status']);
  assert.deepEqual([condition('MemoryPressure').status, condition('MemoryPressure').reason], ['False', 'KubeletHasSufficientMemory']);
  assert.deepEqual(
    [condition('DiskPressure').reason, condition('PIDPressure').reason],
    [condition('DiskPressure').status === 'True' ? 'KubeletHasDiskPressure' : 'KubeletHasNoDiskPressure', 'KubeletHasSufficientPID'],
  );
  assert.equal(n.status?.capacity?.['pods'], '110');
  assert.match(n.status?.nodeInfo?.kubeletVersion ?? '', /^v1\./);

  // The Lease renews.
  const lease = await waitFor('the node Lease', () => getLease(node).catch(() => undefined), 60_000);
  assert.equal(lease.spec?.holderIdentity, node);
  assert.equal(lease.spec?.leaseDurationSeconds, 40);
  const renewed = Date.parse(lease.spec?.renewTime ?? assert.fail('the Lease has no renewTime'));
  await waitFor('the Lease renewed', async () => Date.parse((await getLease(node)).spec?.renewTime ?? '') > renewed, 60_000);

  // A pod bound to the node: Pending → Running, then a graceful delete.
  const manifest = join(work, `${node}-web.yaml`);
  writeFileSync(
    manifest,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 5,
        containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }],
      },
    }),
  );
  await k('apply', '-f', manifest);
  const running = await waitFor(
    'web Running',
    async () => {
      const p = await getPod('web');
      return p.status?.phase === 'Running' && p.status?.containerStatuses?.[0]?.ready === true ? p : undefined;
    },
    180_000,
  );
  assert.ok(running.status?.podIP, 'the pod has its IP');
  assert.equal(running.status?.containerStatuses?.[0]?.name, 'app');
  await k('delete', 'pod', 'web', '-n', 'default', '--grace-period=5', '--wait=true', '--timeout=120s');
  await assert.rejects(getPod('web'), /NotFound|not found/);

  // A static pod (the state dir's manifests) shows as its mirror pod.
  await s.cli(
    ['apply', '-f', '-'],
    'apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    command: ["sleep", "3600"]\n',
  );
  const mirror = await waitFor(
    'the mirror pod Running',
    async () => {
      const p = await getPod(`static-web-${node}`).catch(() => undefined);
      return p?.status?.phase === 'Running' ? p : undefined;
    },
    180_000,
  );
  assert.ok(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']);
  assert.equal(mirror.spec?.nodeName, node);
}

describe('cluster mode end to end', { timeout: 900_000 }, () => {
  test('against the embedded API server of splitlet up', { skip: kubectlSkip }, async () => {
    let s: Instance | undefined;
    try {
      s = await startSplitlet({ nodeName: 'e2e-embedded', args: ['--runtime', 'sim', '--no-restart'] });
      const kubeconfig = join(s.stateDir, 'kubeconfig');
      await clusterScenario(s, kubeconfig);
      // The container runtime dies (not restarted here): cri-adapter reports it down, the Node turns NotReady with the kubelet's error.
      const sim = s.info().processes.find((p) => p.name === 'sim-runtime')?.pid ?? assert.fail('no sim-runtime');
      process.kill(sim, 'SIGKILL');
      const t0 = Date.now();
      const ready = await waitFor(
        'the Node NotReady',
        async () => {
          const n = JSON.parse((await run(KUBECTL, ['--kubeconfig', kubeconfig, 'get', 'node', s!.nodeName, '-o', 'json'])).stdout) as INode;
          const c = n.status?.conditions?.find((x) => x.type === 'Ready');
          return c?.status === 'False' ? c : undefined;
        },
        180_000,
        1000,
      );
      console.log(`sim-runtime killed; Node NotReady after ${Date.now() - t0} ms: ${ready.message}`);
      assert.equal(ready.reason, 'KubeletNotReady');
      assert.match(ready.message ?? '', /^container runtime is down: /);
    } finally {
      if (s !== undefined) assert.equal(await s.stop(), 0, s.output.slice(-40).join('\n'));
    }
  });

  test(`against a real k3s (${K3S_IMAGE}) through --kubeconfig`, { skip: k3sSkip }, async () => {
    const { K3sContainer } = await import('@testcontainers/k3s');
    const k3s = await new K3sContainer(K3S_IMAGE).start();
    let s: Instance | undefined;
    try {
      const kubeconfig = join(work, 'k3s.kubeconfig');
      writeFileSync(kubeconfig, k3s.getKubeConfig());
      s = await startSplitlet({ nodeName: 'e2e-k3s', args: ['--runtime', 'sim', '--kubeconfig', kubeconfig] });
      await clusterScenario(s, kubeconfig);
    } finally {
      if (s !== undefined) assert.equal(await s.stop(), 0, s.output.slice(-40).join('\n'));
      await k3s.stop();
    }
  });
});
