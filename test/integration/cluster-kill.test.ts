/**
 * kill -9 of the embedded API server and of config-source during a 100-pod run: a real `splitlet up
 * --runtime sim` (2 pod-workers); 100 pods created through the API server with kubectl in batches of
 * 10; the API server SIGKILLed after the 3rd batch and again after the last (while statuses are being
 * patched), config-source after the 6th (the supervisor restarts each; kubectl retries a batch until
 * the API answers again). Then: every pod Running and
 * ready in the API, no pod started twice (the runtime holds exactly one sandbox and one container,
 * attempt 0, per pod; restartCount 0), and no status lost (the API's status of every pod is the
 * node's own: the same container ID and start time).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import type { IPodList } from 'kubernetes-models/v1/PodList';
import { stringify } from 'yaml';
import { GrpcRuntimeService } from '@splitlet/cri';
import { startSplitlet, waitFor, type Instance } from './harness.ts';

const run = promisify(execFile);
const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const PODS = 100;
const BATCH = 10;

const skip = await run(KUBECTL, ['version', '--client'], { timeout: 20_000 }).then(
  () => undefined,
  (e: unknown) => `kubectl not usable: ${e instanceof Error ? e.message : String(e)}`,
);
if (skip !== undefined) process.stdout.write(`# skipping: ${skip}\n`);

describe('kill -9 of the API server and config-source during a 100-pod run', { skip, timeout: 900_000 }, () => {
  test('every pod converges, none is started twice, no status is lost', async () => {
    const node = 'kill-node';
    let s: Instance | undefined;
    try {
      s = await startSplitlet({ nodeName: node, podWorkers: 2 });
      const inst = s;
      const kubeconfig = join(s.stateDir, 'kubeconfig');
      const k = async (...args: string[]): Promise<string> =>
        (await run(KUBECTL, ['--kubeconfig', kubeconfig, '--request-timeout=20s', ...args], { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 })).stdout;
      const pid = (name: string): number => inst.info().processes.find((p) => p.name === name)?.pid ?? assert.fail(`no ${name} in instance.json`);
      const kill = (name: string): number => {
        const p = pid(name);
        process.kill(p, 'SIGKILL');
        console.log(`kill -9 ${name} (pid ${p})`);
        return p;
      };
      const t0 = Date.now();
      const killed = new Map<string, number>();
      for (let b = 0; b < PODS / BATCH; b++) {
        const items = Array.from({ length: BATCH }, (_, i) => ({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `p-${String(b * BATCH + i).padStart(3, '0')}`, namespace: 'default' },
          spec: { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
        }));
        const file = join(s.stateDir, `batch-${b}.yaml`);
        writeFileSync(file, items.map((p) => stringify(p)).join('---\n'));
        // While the API server is down (or restarting), kubectl cannot connect: apply again until it answers (apply is
        // idempotent). Any other error fails the test at once.
        const deadline = Date.now() + 120_000;
        for (;;) {
          const err = await k('apply', '-f', file).then(
            () => undefined,
            (e: unknown) => String(e),
          );
          if (err === undefined) break;
          assert.match(
            err,
            /connection refused|Unable to connect|EOF|timeout|unavailable|connection reset/i,
            `batch ${b}: kubectl failed for another reason than the API server being down`,
          );
          assert.ok(Date.now() < deadline, `batch ${b}: the API server did not answer again within 120 s: ${err}`);
          await new Promise((r) => setTimeout(r, 500));
        }
        if (b === 2) killed.set('apiserver', kill('apiserver'));
        if (b === 5) killed.set('config-source', kill('config-source'));
      }
      console.log(`${PODS} pods applied in ${Date.now() - t0} ms`);
      // Again while the last pods start and their statuses are being patched: status-manager must re-send what the API missed.
      killed.set('apiserver', kill('apiserver'));

      const pods = await waitFor(
        `all ${PODS} pods Running and ready`,
        async () => {
          const list = JSON.parse(await k('get', 'pods', '-n', 'default', '-o', 'json')) as IPodList;
          const ready = list.items.filter((p) => p.status?.phase === 'Running' && p.status?.containerStatuses?.[0]?.ready === true);
          return list.items.length === PODS && ready.length === PODS ? list.items : undefined;
        },
        600_000,
        2000,
      );
      console.log(`all ${PODS} pods Running ${Date.now() - t0} ms after the first apply`);

      // Both processes were really killed and restarted by the supervisor.
      for (const [name, old] of killed) assert.notEqual(pid(name), old, `${name} was restarted`);

      // None started twice: one sandbox and one container (attempt 0) per pod in the runtime.
      const rt = await GrpcRuntimeService.connect({ endpoint: `unix://${join(s.stateDir, 'run', 'sim-runtime.sock')}`, timeoutMs: 30_000 });
      let containerByUid: Map<string, string>;
      try {
        const sandboxes = (await rt.ListPodSandbox({})).items ?? [];
        const containers = (await rt.ListContainers({})).containers ?? [];
        const sandboxesPerUid = new Map<string, number>();
        for (const b of sandboxes) sandboxesPerUid.set(b.metadata?.uid ?? '', (sandboxesPerUid.get(b.metadata?.uid ?? '') ?? 0) + 1);
        containerByUid = new Map();
        for (const c of containers) {
          const uid = c.labels?.['io.kubernetes.pod.uid'] ?? '';
          assert.ok(!containerByUid.has(uid), `pod ${uid} has more than one container: started twice`);
          assert.equal(c.metadata?.attempt ?? 0, 0, `pod ${uid}: container attempt ${c.metadata?.attempt}`);
          containerByUid.set(uid, c.id);
        }
        for (const p of pods) assert.equal(sandboxesPerUid.get(p.metadata?.uid ?? ''), 1, `${p.metadata?.name}: one sandbox`);
        assert.equal(sandboxes.length, PODS, 'no sandbox beyond one per pod');
        assert.equal(containers.length, PODS, 'no container beyond one per pod');
      } finally {
        rt.close();
      }

      // No status lost: the API's status of every pod is the node's, with the runtime's container.
      const nodeView = new Map((await inst.pods()).map((p) => [p.metadata.uid, p]));
      for (const p of pods) {
        const name = p.metadata?.name;
        const uid = p.metadata?.uid ?? assert.fail(`${name} has no uid`);
        const cs = p.status?.containerStatuses?.[0] ?? assert.fail(`${name} has no container status`);
        assert.equal(cs.restartCount, 0, `${name} restartCount`);
        assert.equal(cs.containerID, `containerd://${containerByUid.get(uid)}`, `${name}: the API has the running container`);
        const own = nodeView.get(uid)?.status?.containerStatuses?.[0];
        assert.equal(own?.containerID, cs.containerID, `${name}: API and node agree on the container`);
        assert.equal(own?.state?.running?.startedAt, cs.state?.running?.startedAt, `${name}: API and node agree on startedAt`);
        assert.ok(p.status?.podIP, `${name} has its IP`);
      }
    } finally {
      if (s !== undefined) assert.equal(await s.stop(), 0, s.output.slice(-40).join('\n'));
    }
  });
});
