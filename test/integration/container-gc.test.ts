/**
 * Container garbage collection through the real pipeline (`splitlet up`, every process its own OS
 * process, CONTAINER_GC_PERIOD_MS = 2 s), on the simulator and on containerd, checked with the
 * runtime's own CRI client and the node's files:
 *
 * 1. a crash-looping pod (restartPolicy Always, `exit 1`) keeps at most one dead container per
 *    container name besides the current one, the removed containers' log files go with them, and
 *    `splitlet logs --previous` still prints the previous run's output;
 * 2. a pod removed from the manifests ends with no sandbox, no container and no log directory.
 *
 * The containerd half is skipped, with the reason printed, when not root, when containerd, runc,
 * the CNI plugins, iproute2 or busybox-static are missing, or when RUN_CONTAINERD_TESTS=0
 * (CONTAINER_GC_ONLY=sim|containerd runs one half).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Buckets, Keys, PlegMessage, RuntimeCacheEntry, Streams, Subjects, plegEventsOf, type ContainerStatus as ApiContainerStatus } from '@splitlet/api';
import { GrpcRuntimeService } from '@splitlet/cri';
import { connectCliBus } from '../../services/cli/src/target.ts';
import { containerdSkipReason, criEndpointOf, podNamed, startSplitlet, stopSplitlet, waitFor, type Instance, type PodJson } from './harness.ts';

const NODE = 'gc-node';
const GC_PERIOD_MS = 2000;
const POD_UID_LABEL = 'io.kubernetes.pod.uid';

const only = process.env['CONTAINER_GC_ONLY'];
const skips: Record<'sim' | 'containerd', string | undefined> = {
  sim: only === 'containerd' ? 'CONTAINER_GC_ONLY=containerd' : undefined,
  containerd: only === 'sim' ? 'CONTAINER_GC_ONLY=sim' : containerdSkipReason(),
};
for (const [rt, why] of Object.entries(skips)) if (why !== undefined) console.log(`# container GC on ${rt} skipped: ${why}`);

/** The container id (`<runtime>://<id>`) of the first container's `lastState.terminated`. */
function lastTerminatedId(p: PodJson | undefined): string | undefined {
  const cs = p?.status?.containerStatuses?.[0] as ApiContainerStatus | undefined;
  return cs?.lastState?.terminated?.containerID;
}

function manifest(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: 1, ...spec } });
}

/** Each run appends a line to a file in an emptyDir and prints the file: run n prints n lines. */
const CRASHER = manifest('crasher', {
  restartPolicy: 'Always',
  volumes: [{ name: 'data', emptyDir: {} }],
  containers: [
    { name: 'main', image: 'busybox:1.36', command: ['sh', '-c', 'echo run >> /data/runs; cat /data/runs; exit 1'], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
  ],
});

/** An init container and two containers, so the deleted pod has dead and running containers. */
const DOOMED = manifest('doomed', {
  initContainers: [{ name: 'setup', image: 'busybox:1.36', command: ['sh', '-c', 'echo setup done'] }],
  containers: [
    { name: 'app', image: 'busybox:1.36', command: ['sh', '-c', 'echo app up; sleep 3600'] },
    { name: 'side', image: 'busybox:1.36', command: ['sleep', '3600'] },
  ],
});

function gcSuite(runtime: 'sim' | 'containerd'): void {
  describe(`container GC on ${runtime}`, { skip: skips[runtime] ?? false, timeout: 300_000 }, () => {
    let stateDir: string | undefined;
    let s: Instance;
    let cri: GrpcRuntimeService;
    let manifests: string;
    let podLogs: string;

    const pod = async (name: string): Promise<PodJson | undefined> => podNamed(await s.pods(), `${name}-${NODE}`);
    const runtimeContainers = async (uid: string): Promise<Array<{ id: string; name: string; attempt: number; state: string }>> =>
      (await cri.ListContainers({ filter: { labelSelector: { [POD_UID_LABEL]: uid } } })).containers.map((c) => ({
        id: c.id,
        name: c.metadata?.name ?? '',
        attempt: c.metadata?.attempt ?? 0,
        state: c.state,
      }));
    const logDirOf = (p: PodJson): string => join(podLogs, `${p.metadata.namespace}_${p.metadata.name}_${p.metadata.uid}`);

    before(async () => {
      stateDir = mkdtempSync(join(tmpdir(), `splitlet-gc-${runtime}-`));
      s = await startSplitlet({ nodeName: NODE, args: ['--runtime', runtime], stateDir, env: { CONTAINER_GC_PERIOD_MS: String(GC_PERIOD_MS) } });
      manifests = join(s.stateDir, 'manifests');
      podLogs = join(s.stateDir, 'logs', 'pods');
      cri = await GrpcRuntimeService.connect({ endpoint: criEndpointOf(runtime, s.stateDir), timeoutMs: 30_000 });
      // The crash loop takes longest (back-offs of 10 s, then 20 s): start it first.
      writeFileSync(join(manifests, 'crasher.json'), CRASHER);
    });

    after(async () => {
      cri?.close();
      await stopSplitlet(s, stateDir, { containerd: runtime === 'containerd' });
    });

    it('a pod removed from the manifests leaves no sandbox, no container and no log directory', async () => {
      writeFileSync(join(manifests, 'doomed.json'), DOOMED);
      const running = await waitFor(
        'doomed Running',
        async () => {
          const p = await pod('doomed');
          return p?.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.state?.running) === true ? p : undefined;
        },
        60_000,
        500,
      );
      const uid = running.metadata.uid;
      const logDir = logDirOf(running);
      assert.ok(existsSync(join(logDir, 'setup', '0.log')), 'the init container wrote its log');
      const objects = [
        ...(await runtimeContainers(uid)).map((c) => c.id),
        ...(await cri.ListPodSandbox({ filter: { labelSelector: { [POD_UID_LABEL]: uid } } })).items.map((sb) => sb.id),
      ];
      assert.equal(objects.length, 4, 'setup (exited), app, side and the sandbox in the runtime');

      rmSync(join(manifests, 'doomed.json'));
      await waitFor('doomed gone from the node', async () => (await pod('doomed')) === undefined, 60_000, 500);
      const left = await waitFor(
        'no sandbox, container or log directory of doomed',
        async () => {
          const sandboxes = (await cri.ListPodSandbox({ filter: { labelSelector: { [POD_UID_LABEL]: uid } } })).items;
          const containers = await runtimeContainers(uid);
          const dir = existsSync(logDir);
          if (sandboxes.length === 0 && containers.length === 0 && !dir) return { sandboxes, containers, dir };
          throw new Error(`left: ${sandboxes.length} sandbox(es), containers ${JSON.stringify(containers)}, log dir ${dir}`);
        },
        30_000,
        500,
      );
      assert.deepEqual(left, { sandboxes: [], containers: [], dir: false });

      // pleg saw them go: ContainerRemoved for each, and the pod's runtime cache entry deleted.
      const bus = await connectCliBus(s.info().natsUrl, s.info().nodeName, undefined, s.natsCredential('admin'));
      try {
        const kv = await bus.kv(Buckets.runtime, RuntimeCacheEntry);
        await waitFor('the runtime cache entry of doomed deleted', async () => (await kv.get(Keys.pod(NODE, uid))) === null, 10_000, 250);
        const removed = await waitFor(
          'ContainerRemoved for every container and the sandbox',
          async () => {
            const seen = new Set<string>();
            await bus.readStream(PlegMessage, Streams.pleg, Subjects.pleg(NODE, uid), (m) => {
              for (const e of plegEventsOf(m)) if (e.event === 'ContainerRemoved' && e.data !== undefined) seen.add(e.data);
            });
            return objects.every((id) => seen.has(id)) ? seen : undefined;
          },
          10_000,
          500,
        );
        assert.deepEqual([...removed].sort(), [...objects].sort());
      } finally {
        await bus.close();
      }
      // The other pod on the node kept its log directory.
      const crasher = await pod('crasher');
      assert.ok(crasher !== undefined && existsSync(logDirOf(crasher)), "the crash-looping pod's log directory stays");
    });

    it('a crash-looping pod keeps one dead container per name besides the current one, and logs --previous still works', async () => {
      const p = await waitFor(
        'crasher restarted 3 times',
        async () => {
          const c = await pod('crasher');
          return (c?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 3 ? c : undefined;
        },
        120_000,
        1000,
      );
      const uid = p.metadata.uid;

      // Without GC there would be restartCount + 1 containers by now.
      const containers = await waitFor(
        'at most one dead container besides the newest',
        async () => {
          const cs = (await runtimeContainers(uid)).sort((a, b) => b.attempt - a.attempt);
          const [, ...older] = cs;
          if (cs.every((c) => c.name === 'main') && older.length <= 1 && older.every((c) => c.state === 'CONTAINER_EXITED')) return cs;
          throw new Error(`containers: ${JSON.stringify(cs)}`);
        },
        4 * GC_PERIOD_MS + 5000,
        250,
      );
      const newest = containers[0]!.attempt;
      assert.ok(newest >= 3, `the newest container is attempt ${newest}`);

      // The removed containers' log files went with them; the kept ones' stayed.
      await waitFor(
        'only the kept containers have log files',
        async () => {
          const attempts = (await runtimeContainers(uid)).map((c) => c.attempt);
          const files = readdirSync(join(logDirOf(p), 'main')).sort();
          const want = attempts.map((a) => `${a}.log`).sort();
          if (JSON.stringify(files) === JSON.stringify(want)) return true;
          throw new Error(`log files ${JSON.stringify(files)}, containers' ${JSON.stringify(want)}`);
        },
        4 * GC_PERIOD_MS + 5000,
        250,
      );

      // `logs --previous` prints the container the status names as the last terminated one
      // (kubectl's view): GC kept it, and its run (attempt n) printed n + 1 lines.
      let last = '';
      await waitFor(
        'logs --previous prints the last terminated run',
        async () => {
          const before = lastTerminatedId(await pod('crasher'));
          const id = before?.replace(/^[a-z]+:\/\//, '');
          assert.ok(id !== undefined && id !== '', 'the status names a last terminated container');
          const kept = (await runtimeContainers(uid)).find((c) => c.id === id);
          assert.ok(kept !== undefined, `GC kept the last terminated container ${id}`);
          last = await s.cli(['logs', `crasher-${NODE}`, '--previous']);
          if (lastTerminatedId(await pod('crasher')) !== before) return false; // it restarted meanwhile
          assert.deepEqual(
            last.trimEnd().split('\n'),
            Array.from({ length: kept.attempt + 1 }, () => 'run'),
            `previous log of attempt ${kept.attempt}`,
          );
          return true;
        },
        30_000,
        500,
      );
    });

    it('no process crashed and every one is still healthy', async () => {
      assert.deepEqual(
        s.output.filter((l) => /process exited with|exited with code|uncaught|unhandled/i.test(l)),
        [],
      );
      assert.deepEqual(
        s.output.filter((l) => l.includes('Container garbage collection failed')),
        [],
        'every GC run succeeded',
      );
      assert.ok(
        s.output.some((l) => l.includes('Container garbage collection succeeded')),
        'GC ran',
      );
      for (const proc of s.info().processes) {
        if (proc.healthPort === undefined) continue;
        const r = await fetch(`http://127.0.0.1:${proc.healthPort}/healthz`);
        assert.ok(r.ok, `${proc.name} /healthz ${r.status}`);
      }
    });
  });
}

gcSuite('sim');
gcSuite('containerd');
