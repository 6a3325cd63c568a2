/**
 * The whole pipeline, end to end, with every process as its own OS process on the simulated runtime:
 * `splitlet up`, manifests in the manifest dir, and the CLI reading what the processes report.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { logRecords } from '@splitlet/testkit';
import { PROCESS_NODE_FLAGS } from '../../services/cli/src/commands/up.ts';
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
    assert.deepEqual(names, [
      'apiserver',
      'config-source',
      'cri-adapter',
      'pleg',
      'pod-worker-1',
      'pod-worker-2',
      'prober',
      'sim-runtime',
      'status-manager',
      'sync-loop',
      'volume-manager',
    ]);
    const pids = new Set(info.processes.map((p) => p.pid));
    assert.equal(pids.size, info.processes.length);
    assert.ok(!pids.has(process.pid));
    // Every process runs with the supervisor's V8 heap bounds (the young generation's cap keeps a burst's RSS down).
    assert.ok(PROCESS_NODE_FLAGS.length > 0);
    for (const p of info.processes) {
      const argv = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0');
      const nodeArgs = argv.slice(
        0,
        argv.findIndex((a) => a.endsWith('main.js')),
      );
      for (const flag of PROCESS_NODE_FLAGS) assert.ok(nodeArgs.includes(flag), `${p.name} runs with ${flag}: ${argv.join(' ')}`);
    }
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

  test('get pods shows the current namespace like kubectl; -A lists all with a NAMESPACE column', async () => {
    const inTeam = JSON.parse(onePod('teampod', 'Always', 'sleep 3600')) as { metadata: Record<string, string> };
    inTeam.metadata.namespace = 'team-a';
    writeFileSync(join(manifests, 'teampod.json'), JSON.stringify(inTeam));
    writeFileSync(join(manifests, 'homepod.json'), onePod('homepod', 'Always', 'sleep 3600'));
    await waitFor('both Running', async () => {
      const pods = await s.pods();
      return [`teampod-${NODE}`, `homepod-${NODE}`].every((n) => podNamed(pods, n)?.status?.phase === 'Running');
    });
    const current = await s.cli(['get', 'pods']);
    assert.match(current, new RegExp(`^NAME\\s+READY\\s+STATUS\\s+RESTARTS\\s+AGE\n`));
    assert.match(current, new RegExp(`^homepod-${NODE}\\s+1/1\\s+Running`, 'm'));
    assert.doesNotMatch(current, /teampod/, 'a pod of another namespace is not in the default listing');
    assert.match(await s.cli(['get', 'pods', '-n', 'team-a']), new RegExp(`^teampod-${NODE}\\s+1/1\\s+Running`, 'm'));
    assert.equal(await s.cli(['get', 'pods', '-n', 'nothing-here']), 'No resources found in nothing-here namespace.\n');
    for (const flag of ['-A', '--all-namespaces']) {
      const all = await s.cli(['get', 'pods', flag]);
      assert.match(all, /^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
      assert.match(all, new RegExp(`^team-a\\s+teampod-${NODE}\\s+1/1\\s+Running`, 'm'));
      assert.match(all, new RegExp(`^default\\s+homepod-${NODE}\\s+1/1\\s+Running`, 'm'));
    }
    await assert.rejects(s.cli(['get', 'pods', '-A', `teampod-${NODE}`]), /a resource cannot be retrieved by name across all namespaces/);
    rmSync(join(manifests, 'teampod.json'));
    rmSync(join(manifests, 'homepod.json'));
    await waitFor('teampod and homepod gone', async () => {
      const pods = await s.pods();
      return !podNamed(pods, `teampod-${NODE}`) && !podNamed(pods, `homepod-${NODE}`);
    });
  });

  // The exact 10 s / 20 s / 40 s delays are measured from the runtime's timestamps in pod-contract.test.ts,
  // on the simulator and on containerd; here: the loop, its waiting reason and the RESTARTS column.
  test('restartPolicy Always: CrashLoopBackOff and a growing RESTARTS column', { timeout: 120_000 }, async () => {
    writeFileSync(join(manifests, 'crash.json'), onePod('crash', 'Always', 'echo crashing; exit 1'));
    const name = `crash-${NODE}`;
    let sawBackOff = false;
    const restartsSeen: number[] = [];
    await waitFor(
      'three restarts',
      async () => {
        const table = await s.cli(['get', 'pods', name]);
        const m = new RegExp(`${name}\\s+0/1\\s+(\\S+)\\s+(\\d+)`).exec(table);
        if (!m) return undefined;
        if (m[1] === 'CrashLoopBackOff') sawBackOff = true;
        const restarts = Number(m[2]);
        if (restartsSeen.at(-1) !== restarts) restartsSeen.push(restarts);
        return restarts >= 3 && sawBackOff;
      },
      100_000,
      300,
    );
    assert.ok(
      restartsSeen.every((r, i) => i === 0 || r > restartsSeen[i - 1]!),
      `RESTARTS only grew: ${restartsSeen.join(' → ')}`,
    );
    const describeOut = await s.cli(['describe', 'pod', name]);
    assert.match(describeOut, /Warning\s+BackOff\s.*Back-off restarting failed container main in pod crash-e2e-node_default/);
    assert.match(describeOut, /Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+1/);
    rmSync(join(manifests, 'crash.json'));
    await waitFor('crash gone', async () => !podNamed(await s.pods(), name));
  });

  test('bad manifests get a clear error naming the file and what is wrong in it, and nothing else is affected', async () => {
    // Each file is written beside the others as a dotfile (the file source skips those) and renamed
    // in, so config-source never reads one half-written: it would log that state too.
    const put = (name: string, content: string | Buffer): void => {
      const tmp = join(manifests, `.${name}.tmp`);
      writeFileSync(tmp, content);
      renameSync(tmp, join(manifests, name));
    };
    put('good.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec: {containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]}\n');
    put('broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n');
    put('noname.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c, image: busybox}]}\n');
    put('kind.yaml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n');
    put('policy.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: policy}\nspec:\n  restartPolicy: Sometimes\n  containers: [{name: c, image: busybox}]\n');
    const big = join(manifests, 'huge.yaml');
    // 20 MiB: above the 10 MiB cap.
    put('huge.yaml', Buffer.alloc(20 * 1024 * 1024, 0x20));
    const expected: Record<string, string> = {
      'broken.yaml': 'error converting YAML to JSON: yaml: line 3: Flow sequence in block collection must be sufficiently indented and end with a ]',
      'noname.yaml': 'invalid pod: name is needed for the pod',
      'kind.yaml': 'unsupported kind "Deployment" (apiVersion "apps/v1"): a manifest must be a v1 Pod or a v1 PodList',
      'policy.yaml': 'couldn\'t parse as pod: spec.restartPolicy: Invalid option: expected one of "Always"|"OnFailure"|"Never"',
      'huge.yaml': `manifest file ${JSON.stringify(big)} is 20971520 bytes, larger than the limit of 10485760 bytes (maxConfigLength)`,
    };
    await waitFor('good Running', async () => podNamed(await s.pods(), `good-${NODE}`)?.status?.phase === 'Running');
    const errors = await waitFor('an error logged for every bad manifest', async () => {
      const logged = logRecords(readFileSync(join(s.stateDir, 'logs', 'config-source.log'), 'utf8').split('\n'), 'could not process manifest');
      return Object.keys(expected).every((f) => logged.some((r) => r['file'] === join(manifests, f))) ? logged : undefined;
    });
    for (const [f, message] of Object.entries(expected)) {
      const file = join(manifests, f);
      const logged = new Set(errors.filter((r) => r['file'] === file).map((r) => r['err']));
      assert.deepEqual([...logged], [message], `the error logged for ${f}`);
    }
    assert.equal(errors.filter((r) => r['file'] === join(manifests, 'good.yaml')).length, 0, 'no error for the good manifest');
    const names = (await s.pods()).map((p) => p.metadata.name);
    for (const n of ['good', 'noname', 'd', 'policy']) assert.equal(names.includes(`${n}-${NODE}`), n === 'good', `pods: ${names.join(', ')}`);
    for (const f of ['broken.yaml', 'noname.yaml', 'kind.yaml', 'policy.yaml', 'huge.yaml', 'good.yaml']) rmSync(join(manifests, f));
    // No process exited.
    assert.ok(!s.output.some((l) => /process exited with/.test(l)), 'no process exited');
  });
});
