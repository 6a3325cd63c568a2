import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createFakeRuntime, type FakeRuntimeService } from '@splitlet/cri/testing';
import { eventually } from '@splitlet/testkit';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { testPrograms } from './programs.js';
import { MAX_LABEL_LISTED_PODS, nanosToMillis, RuntimeStatusReader } from '../src/kuberuntime/runtime-status-reader.js';

function counting(sim: FakeRuntimeService): { runtime: FakeRuntimeService; count: (method: string) => number } {
  const counts = new Map<string, number>();
  const runtime = new Proxy(sim, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        counts.set(String(prop), (counts.get(String(prop)) ?? 0) + 1);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { runtime, count: (m) => counts.get(m) ?? 0 };
}

const labels = (uid: string, name: string) => ({ 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'ns' });

describe('RuntimeStatusReader', () => {
  let sim: FakeRuntimeService;
  beforeEach(() => {
    sim = createFakeRuntime({ programs: testPrograms });
  });
  afterEach(async () => {
    await sim.close();
  });

  async function runPod(uid: string, command: string[]): Promise<{ sandboxId: string; containerId: string }> {
    const { podSandboxId } = await sim.RunPodSandbox({ config: { metadata: { name: `p-${uid}`, namespace: 'ns', uid, attempt: 0 }, labels: labels(uid, `p-${uid}`) } });
    const image = (await sim.PullImage({ image: { image: 'busybox:1.36' } })).imageRef;
    const { containerId } = await sim.CreateContainer({
      podSandboxId,
      config: {
        metadata: { name: 'main', attempt: 0 },
        image: { image, userSpecifiedImage: 'busybox:1.36' },
        command,
        labels: { ...labels(uid, `p-${uid}`), 'io.kubernetes.container.name': 'main' },
        annotations: { 'io.kubernetes.container.hash': 'abc', 'io.kubernetes.container.restartCount': '4' },
      },
    });
    await sim.StartContainer({ containerId });
    return { sandboxId: podSandboxId, containerId };
  }

  it('groups the runtime by pod uid and reads each container status once per state', async () => {
    const { runtime, count } = counting(sim);
    const reader = new RuntimeStatusReader(runtime, createNodeFiles(''));
    const a = await runPod('a', ['sh', '-c', 'sleep 0.2; exit 3']);
    await runPod('b', ['sleep', '3600']);

    const first = await reader.relist();
    assert.deepEqual(first.map((p) => p.uid).sort(), ['a', 'b']);
    const podA = first.find((p) => p.uid === 'a');
    assert.equal(podA?.name, 'p-a');
    assert.equal(podA?.namespace, 'ns');
    assert.equal(podA?.containers[0]?.state, 'CONTAINER_RUNNING');
    assert.equal(podA?.containers[0]?.hash, 'abc');
    assert.equal(podA?.containers[0]?.restartCount, 4);
    assert.equal(podA?.containers[0]?.sandboxId, a.sandboxId);
    assert.equal(podA?.containers[0]?.image, 'busybox:1.36');
    assert.match(podA?.ips[0] ?? '', /^10\.88\./);
    assert.equal(count('ContainerStatus'), 2);
    assert.equal(count('PodSandboxStatus'), 2);

    await reader.relist();
    assert.equal(count('ContainerStatus'), 2, 'unchanged containers are not re-read');
    assert.equal(count('PodSandboxStatus'), 2, 'sandbox networks are read once');

    const exited = await eventually(async () => {
      const pods = await reader.relist();
      const c = pods.find((p) => p.uid === 'a')?.containers[0];
      return c?.state === 'CONTAINER_EXITED' ? c : undefined;
    });
    assert.ok(exited);
    assert.equal(exited.exitCode, 3);
    assert.equal(exited.reason, 'Error');
    assert.ok(exited.finishedAt !== undefined && exited.startedAt !== undefined && exited.finishedAt >= exited.startedAt);
    const afterExit = count('ContainerStatus');
    await reader.relist();
    assert.equal(count('ContainerStatus'), afterExit, 'an exited container is read once');

    await sim.RemoveContainer({ containerId: a.containerId });
    await sim.StopPodSandbox({ podSandboxId: a.sandboxId });
    await sim.RemovePodSandbox({ podSandboxId: a.sandboxId });
    const gone = await reader.relist();
    assert.deepEqual(
      gone.map((p) => p.uid),
      ['b'],
    );
    assert.equal(reader.cachedContainers, 1);
  });

  it('a targeted relist lists only the named pods (by the pod-uid label) and prunes no cache', async () => {
    const { runtime, count } = counting(sim);
    const reader = new RuntimeStatusReader(runtime, createNodeFiles(''));
    await runPod('a', ['sleep', '3600']);
    await runPod('b', ['sleep', '3600']);
    await reader.relist();
    const lists = count('ListContainers');
    const only = await reader.relist(['b', 'gone']);
    assert.deepEqual(
      only.map((p) => p.uid),
      ['b'],
    );
    assert.equal(only[0]?.name, 'p-b');
    assert.equal(only[0]?.containers[0]?.state, 'CONTAINER_RUNNING');
    assert.equal(count('ListContainers') - lists, 2, 'one filtered list per named pod');
    assert.equal(reader.cachedContainers, 2, "a targeted relist keeps the other pods' cache");
    assert.deepEqual(await reader.relist([]), []);
  });

  it(`a relist targeted at more than ${MAX_LABEL_LISTED_PODS} pods lists once, unfiltered, and keeps only theirs`, async () => {
    const { runtime, count } = counting(sim);
    const reader = new RuntimeStatusReader(runtime, createNodeFiles(''));
    const uids = Array.from({ length: MAX_LABEL_LISTED_PODS + 2 }, (_, i) => `t${i}`);
    for (const uid of [...uids, 'other']) await runPod(uid, ['sleep', '3600']);
    await reader.relist();
    const [sandboxLists, containerLists, statuses] = [count('ListPodSandbox'), count('ListContainers'), count('ContainerStatus') + count('PodSandboxStatus')];
    const many = await reader.relist([...uids, 'gone']);
    assert.deepEqual(many.map((p) => p.uid).sort(), uids);
    assert.ok(many.every((p) => p.sandboxes.length === 1 && p.containers.length === 1 && p.containers[0]?.state === 'CONTAINER_RUNNING' && p.ips.length === 1));
    assert.equal(count('ListPodSandbox') - sandboxLists, 1, 'one sandbox listing');
    assert.equal(count('ListContainers') - containerLists, 1, 'one container listing');
    assert.equal(count('ContainerStatus') + count('PodSandboxStatus'), statuses, 'nothing changed: no status read');
    // A few pods are still listed by label, one pair of calls each.
    await reader.relist(uids.slice(0, MAX_LABEL_LISTED_PODS));
    assert.equal(count('ListPodSandbox') - sandboxLists, 1 + MAX_LABEL_LISTED_PODS);
  });

  it('getPodStatus reads a sandbox status until it saw the sandbox ready, and a container status once per state', async () => {
    const { runtime, count } = counting(sim);
    const reader = new RuntimeStatusReader(runtime, createNodeFiles(''));
    const a = await runPod('a', ['sleep', '3600']);
    const first = await reader.getPodStatus('a', 'p-a', 'ns');
    assert.equal(count('PodSandboxStatus'), 1);
    assert.equal(count('ContainerStatus'), 1);
    assert.deepEqual(await reader.getPodStatus('a', 'p-a', 'ns'), first, 'the same status, from the lists alone');
    assert.equal(count('PodSandboxStatus'), 1);
    assert.equal(count('ContainerStatus'), 1);
    await sim.StopPodSandbox({ podSandboxId: a.sandboxId });
    const stopped = await reader.getPodStatus('a', 'p-a', 'ns');
    assert.equal(count('PodSandboxStatus'), 2, 'a sandbox no longer ready is read afresh');
    assert.equal(count('ContainerStatus'), 2, 'the container changed state');
    assert.equal(stopped.sandboxes[0]?.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(stopped.ips, []);
    await reader.getPodStatus('a', 'p-a', 'ns');
    assert.equal(count('PodSandboxStatus'), 3, 'and every time after');
  });

  it("getPodStatus drops the cached entries of the pod's objects the runtime no longer lists, and only that pod's", async () => {
    const { runtime, count } = counting(sim);
    const reader = new RuntimeStatusReader(runtime, createNodeFiles(''));
    const a = await runPod('a', ['sleep', '3600']);
    await runPod('b', ['sleep', '3600']);
    await reader.getPodStatus('a', 'p-a', 'ns');
    await reader.getPodStatus('b', 'p-b', 'ns');
    assert.equal(reader.cachedContainers, 2);
    await sim.StopPodSandbox({ podSandboxId: a.sandboxId });
    await sim.RemoveContainer({ containerId: a.containerId });
    await sim.RemovePodSandbox({ podSandboxId: a.sandboxId });
    const gone = await reader.getPodStatus('a', 'p-a', 'ns');
    assert.deepEqual(gone.containers, []);
    assert.equal(reader.cachedContainers, 1, "pod a's container is forgotten");
    const statuses = count('ContainerStatus') + count('PodSandboxStatus');
    assert.equal((await reader.getPodStatus('b', 'p-b', 'ns')).containers[0]?.state, 'CONTAINER_RUNNING');
    assert.equal(count('ContainerStatus') + count('PodSandboxStatus'), statuses, "pod b's cached statuses are kept");
    // A new container of pod a is cached again under it.
    await runPod('a', ['sleep', '3600']);
    await reader.getPodStatus('a', 'p-a', 'ns');
    assert.equal(reader.cachedContainers, 2);
  });

  it('getPodStatus reads the containers the caller just changed alongside the lists, one round trip', async () => {
    const a = await runPod('a', ['sleep', '3600']);
    const expected = await new RuntimeStatusReader(sim, createNodeFiles('')).getPodStatus('a', 'p-a', 'ns');
    const reader = new RuntimeStatusReader(sim, createNodeFiles(''));
    const from = sim.calls().length;
    assert.deepEqual(await reader.getPodStatus('a', 'p-a', 'ns', [a.containerId]), expected);
    const calls = sim
      .calls()
      .slice(from)
      .map((c) => c.method)
      .filter((m) => m !== 'PodSandboxStatus');
    assert.deepEqual(calls, ['ContainerStatus', 'ListPodSandbox', 'ListContainers'], 'the status read before the lists answered, and not again');
  });

  it('getPodStatus reads a just-changed container again when the listing shows another state than the early read', async () => {
    const a = await runPod('a', ['sleep', '3600']);
    await sim.StopContainer({ containerId: a.containerId, timeout: '0' });
    const read = sim.ContainerStatus.bind(sim);
    let first = true;
    // The early read was answered before the container exited; the listing sees it exited.
    const containerStatus = async (req: Parameters<FakeRuntimeService['ContainerStatus']>[0]): ReturnType<FakeRuntimeService['ContainerStatus']> => {
      const r = await read(req);
      if (!first || r.status === null) return r;
      first = false;
      return { ...r, status: { ...r.status, state: 'CONTAINER_RUNNING' } };
    };
    const stale = new Proxy(sim, {
      get(target, prop) {
        if (prop === 'ContainerStatus') return containerStatus;
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const reader = new RuntimeStatusReader(stale, createNodeFiles(''));
    const from = sim.calls().length;
    const st = await reader.getPodStatus('a', 'p-a', 'ns', [a.containerId]);
    assert.equal(st.containers[0]?.state, 'CONTAINER_EXITED');
    assert.equal(
      sim
        .calls()
        .slice(from)
        .filter((c) => c.method === 'ContainerStatus').length,
      2,
      'read again after the listing',
    );
  });

  it('getPodStatus reads one pod afresh: sandbox state, IP and hostNetwork', async () => {
    const reader = new RuntimeStatusReader(sim, createNodeFiles(''));
    const a = await runPod('a', ['sleep', '3600']);
    const st = await reader.getPodStatus('a', 'p-a', 'ns');
    assert.equal(st.sandboxes[0]?.id, a.sandboxId);
    assert.equal(st.sandboxes[0]?.state, 'SANDBOX_READY');
    assert.equal(st.sandboxes[0]?.hostNetwork, false);
    assert.equal(st.ips.length, 1);
    await sim.StopPodSandbox({ podSandboxId: a.sandboxId });
    const stopped = await reader.getPodStatus('a', 'p-a', 'ns');
    assert.equal(stopped.sandboxes[0]?.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(stopped.ips, []);
    assert.equal(stopped.containers[0]?.state, 'CONTAINER_EXITED');
    assert.deepEqual(await reader.getPodStatus('nope', 'x', 'ns'), { uid: 'nope', name: 'x', namespace: 'ns', ips: [], sandboxes: [], containers: [] });
  });

  it('converts CRI nanosecond strings to milliseconds', () => {
    assert.equal(nanosToMillis('0'), undefined);
    assert.equal(nanosToMillis(''), undefined);
    assert.equal(nanosToMillis('1700000000123000000'), 1_700_000_000_123);
  });
});
