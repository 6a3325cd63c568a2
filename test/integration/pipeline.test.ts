/**
 * The whole pipeline, end to end, with every process as its own OS process on the simulated runtime:
 * `splitlet up`, manifests in the manifest dir, and the CLI reading what the processes report.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { podNamed, startSplitlet, waitFor } from './harness.ts';
import type { Instance, PodJson } from './harness.ts';

const NODE = 'e2e-node';

function twoContainerPod(image: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: web
  uid: 0b9d3a52-6a4e-4c51-9d7e-2f1a00000001
  labels:
    app: web
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: ${image}
    command: ["sleep", "3600"]
  - name: sidecar
    image: busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`;
}

function onePod(name: string, restartPolicy: string, script: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { restartPolicy, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'busybox:1.36', command: ['sh', '-c', script] }] },
  });
}

function containerIds(p: PodJson): Record<string, string | undefined> {
  return Object.fromEntries((p.status?.containerStatuses ?? []).map((c) => [c.name, c.containerID]));
}

describe('pipeline on the simulated runtime', () => {
  let s: Instance;
  let manifests: string;

  before(async () => {
    s = await startSplitlet({ nodeName: NODE, podWorkers: 2 });
    manifests = join(s.stateDir, 'manifests');
  });

  after(async () => {
    const code = await s.stop();
    assert.equal(code, 0, 'splitlet up exits 0 on SIGTERM');
  });

  test('each process is its own OS process', () => {
    const info = s.info();
    const names = info.processes.map((p) => p.name).sort();
    assert.deepEqual(names, ['config-source', 'cri-adapter', 'pleg', 'pod-worker-1', 'pod-worker-2', 'sim-runtime', 'status-manager', 'sync-loop', 'volume-manager']);
    const pids = new Set(info.processes.map((p) => p.pid));
    assert.equal(pids.size, info.processes.length);
    assert.ok(!pids.has(process.pid));
  });

  test('a 2-container manifest runs, an image edit restarts only that container, deleting the file terminates it', async () => {
    const file = join(manifests, 'web.yaml');
    writeFileSync(file, twoContainerPod('busybox:1.36'));
    const name = `web-${NODE}`;
    const running = await waitFor('web Running 2/2', async () => {
      const out = await s.cli(['get', 'pods']);
      const line = out.split('\n').find((l) => l.startsWith(`${name} `));
      return line && /\s2\/2\s+Running\s/.test(line) ? line : undefined;
    });
    assert.match(running, /^web-e2e-node\s+2\/2\s+Running\s+0\s+\d+s$/);
    const before = podNamed(await s.pods(), name)!;
    const idsBefore = containerIds(before);
    assert.ok(idsBefore['app'] && idsBefore['sidecar']);
    assert.deepEqual(
      before.status?.conditions?.map((c) => `${c.type}=${c.status}`),
      ['PodReadyToStartContainers=True', 'Initialized=True', 'Ready=True', 'ContainersReady=True', 'PodScheduled=True'],
    );

    // Edit the image of `app`: the same UID gets an UPDATE; only `app` is restarted.
    writeFileSync(file, twoContainerPod('busybox:1.37'));
    const updated = await waitFor('app restarted with the new image', async () => {
      const p = podNamed(await s.pods(), name);
      const app = p?.status?.containerStatuses?.find((c) => c.name === 'app');
      return app && app.image.includes('busybox:1.37') && app.state?.running && app.containerID !== idsBefore['app'] ? p : undefined;
    });
    const idsAfter = containerIds(updated);
    assert.equal(idsAfter['sidecar'], idsBefore['sidecar'], 'the unchanged container keeps running');
    const describeOut = await s.cli(['describe', 'pod', name]);
    assert.match(describeOut, /Killing\s.*Container app definition changed, will be restarted|Killing\s.*Stopping container app/);

    // Delete the file: Killing events, the grace period is honoured (`sleep` as PID 1 ignores SIGTERM).
    const t0 = Date.now();
    rmSync(file);
    await waitFor('web is gone', async () => !podNamed(await s.pods(), name), 30_000);
    const took = Date.now() - t0;
    assert.ok(took >= 2500, `termination took ${took} ms; the 3 s grace must be honoured for a container that ignores SIGTERM`);
    assert.ok(took < 15_000, `termination took ${took} ms`);
  });

  test('restartPolicy Never: exit 0 → Succeeded, exit 1 → Failed (reason Error)', async () => {
    writeFileSync(join(manifests, 'ok.json'), onePod('ok', 'Never', 'echo done; exit 0'));
    writeFileSync(join(manifests, 'bad.json'), onePod('bad', 'Never', 'echo failing; exit 1'));
    const ok = await waitFor('ok Succeeded', async () => {
      const p = podNamed(await s.pods(), `ok-${NODE}`);
      return p?.status?.phase === 'Succeeded' ? p : undefined;
    });
    assert.equal(ok.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
    const bad = await waitFor('bad Failed', async () => {
      const p = podNamed(await s.pods(), `bad-${NODE}`);
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(bad.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Error');
    assert.equal(bad.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    const table = await s.cli(['get', 'pods']);
    assert.match(table, new RegExp(`ok-${NODE}\\s+0/1\\s+Completed\\s+0`));
    assert.match(table, new RegExp(`bad-${NODE}\\s+0/1\\s+Error\\s+0`));
    rmSync(join(manifests, 'ok.json'));
    rmSync(join(manifests, 'bad.json'));
    await waitFor('ok and bad gone', async () => {
      const pods = await s.pods();
      return !podNamed(pods, `ok-${NODE}`) && !podNamed(pods, `bad-${NODE}`);
    });
  });

  test('restartPolicy Always: CrashLoopBackOff with delays 10 s, 20 s, 40 s and a growing RESTARTS column', { timeout: 180_000 }, async (t) => {
    writeFileSync(join(manifests, 'crash.json'), onePod('crash', 'Always', 'echo crashing; exit 1'));
    const name = `crash-${NODE}`;
    // Record every container instance's start and finish as reported.
    const starts = new Map<number, number>();
    const finishes = new Map<number, number>();
    let sawBackOff = false;
    const restartsSeen: number[] = [];
    await waitFor(
      'four restarts',
      async () => {
        const p = podNamed(await s.pods(), name);
        const c = p?.status?.containerStatuses?.[0];
        if (!c) return undefined;
        if (c.state?.waiting?.reason === 'CrashLoopBackOff') sawBackOff = true;
        const last = c.lastState?.terminated;
        if (last?.startedAt && last.finishedAt) {
          starts.set(c.restartCount - 1, Date.parse(last.startedAt));
          finishes.set(c.restartCount - 1, Date.parse(last.finishedAt));
        }
        const cur = c.state?.terminated ?? c.state?.running;
        if (cur?.startedAt) starts.set(c.restartCount, Date.parse(cur.startedAt));
        if (restartsSeen.at(-1) !== c.restartCount) restartsSeen.push(c.restartCount);
        return c.restartCount >= 4 && starts.has(4) ? c : undefined;
      },
      150_000,
      200,
    );
    assert.ok(sawBackOff, 'the container was reported Waiting with reason CrashLoopBackOff');
    // The delay before restart n is start(n) - finish(n-1).
    const delays: number[] = [];
    for (let n = 1; n <= 4; n++) {
      const f = finishes.get(n - 1);
      const st = starts.get(n);
      if (f !== undefined && st !== undefined) delays.push((st - f) / 1000);
    }
    // The kubelet restarts the first crash at once (kubernetes issue 133472), then backs off 10 s, 20 s, 40 s.
    t.diagnostic(`restart delays (s): ${delays.map((d) => d.toFixed(1)).join(', ')}`);
    const backoffs = delays.filter((d) => d >= 5);
    assert.ok(backoffs.length >= 2, `delays ${JSON.stringify(delays)}`);
    const expected = [10, 20, 40];
    backoffs.forEach((d, i) => {
      const want = expected[i]!;
      assert.ok(d >= want - 0.5 && d <= want + 3, `restart delay ${i + 1} was ${d.toFixed(1)} s, want ${want} s (tolerance -0.5/+3 s); all delays ${JSON.stringify(delays)}`);
    });
    assert.ok(restartsSeen.length >= 3 && restartsSeen.every((r, i) => i === 0 || r > restartsSeen[i - 1]!), `RESTARTS grew: ${restartsSeen.join(' → ')}`);
    const table = await s.cli(['get', 'pods', name]);
    assert.match(table, /crash-e2e-node\s+0\/1\s+(CrashLoopBackOff|Error|Running)\s+[4-9] \(\d+s ago\)/);
    rmSync(join(manifests, 'crash.json'));
    await waitFor('crash gone', async () => !podNamed(await s.pods(), name));
  });

  test('bad manifests get a clear error and nothing else is affected', async () => {
    writeFileSync(join(manifests, 'good.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec: {containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]}\n');
    writeFileSync(join(manifests, 'broken.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n');
    writeFileSync(join(manifests, 'noname.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c, image: busybox}]}\n');
    writeFileSync(join(manifests, 'kind.yaml'), 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n');
    const big = join(manifests, 'huge.yaml');
    writeFileSync(big, '');
    // 20 MiB: above the 10 MiB cap.
    writeFileSync(big, Buffer.alloc(20 * 1024 * 1024, 0x20));
    await waitFor('good Running', async () => podNamed(await s.pods(), `good-${NODE}`)?.status?.phase === 'Running');
    const logs = readFileSync(join(s.stateDir, 'logs', 'config-source.log'), 'utf8');
    for (const f of ['broken.yaml', 'noname.yaml', 'kind.yaml', 'huge.yaml']) {
      assert.ok(logs.includes(f), `config-source logged an error naming ${f}`);
    }
    assert.match(logs, /name is needed for the pod/);
    for (const f of ['broken.yaml', 'noname.yaml', 'kind.yaml', 'huge.yaml', 'good.yaml']) rmSync(join(manifests, f));
    // No process exited.
    assert.ok(!s.output.some((l) => /process exited with/.test(l)), 'no process exited');
  });
});
