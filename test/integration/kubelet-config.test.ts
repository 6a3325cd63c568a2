/**
 * `splitlet up --config FILE` (and `SPLITLET_CONFIG`): the KubeletConfiguration reaches the real
 * processes through the supervisor's env contract, flags override the file, unknown and unsupported
 * fields are named in warnings, and an invalid value stops `up` before anything starts, naming the
 * field. Asserted through the embedded API server with kubectl (the Node's capacity, the Lease's
 * duration, a static pod from the configured staticPodPath as its mirror pod).
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import type { ILease } from 'kubernetes-models/coordination.k8s.io/v1/Lease';
import type { INode } from 'kubernetes-models/v1/Node';
import type { IPod } from 'kubernetes-models/v1/Pod';
import { repoRoot, startSplitlet, waitFor, type Instance } from './harness.ts';

const execFileP = promisify(execFile);
const cliBin = join(repoRoot, 'services', 'cli', 'bin', 'splitlet.js');
const kubectlMissing = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0 ? undefined : 'kubectl is not installed';

const work = mkdtempSync(join(tmpdir(), 'splitlet-kcfg-'));
after(() => rmSync(work, { recursive: true, force: true }));

describe('splitlet up --config (KubeletConfiguration)', { timeout: 300_000 }, () => {
  test('an invalid value is refused at start with the field path; nothing is started', () => {
    const stateDir = join(work, 'bad-state');
    const file = join(work, 'bad.yaml');
    writeFileSync(file, 'kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nmaxPods: -1\nsyncFrequency: soon\n');
    const r = spawnSync(process.execPath, [cliBin, 'up', '--runtime', 'sim', '--config', file], {
      env: { ...process.env, SPLITLET_STATE_DIR: stateDir, NATS_URL: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /invalid configuration: maxPods: must be >= 0; syncFrequency: must be a duration such as 20s, 1m0s or 500ms, got "soon"/);
    assert.doesNotMatch(r.stdout, /splitlet up: node/, 'no process was started');
    // A flag is checked the same way, by the field it sets.
    const f = spawnSync(process.execPath, [cliBin, 'up', '--runtime', 'sim', '--node-status-update-frequency', '10'], {
      env: { ...process.env, SPLITLET_STATE_DIR: stateDir, SPLITLET_CONFIG: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(f.status, 1, f.stderr);
    assert.match(f.stderr, /nodeStatusUpdateFrequency: must be a duration/);
    const missing = spawnSync(process.execPath, [cliBin, 'up', '--runtime', 'sim'], {
      env: { ...process.env, SPLITLET_STATE_DIR: stateDir, SPLITLET_CONFIG: join(work, 'nope.yaml') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /failed to load kubelet config file, path: .*nope\.yaml, error: no such file/);
  });

  test('the file (SPLITLET_CONFIG) reaches the processes; --max-pods overrides it; ignored fields are warned about', { skip: kubectlMissing }, async () => {
    const staticDir = join(work, 'static');
    mkdirSync(staticDir);
    writeFileSync(
      join(staticDir, 'web.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: cfg-static\n  namespace: default\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    command: ["sleep", "3600"]\n',
    );
    const file = join(work, 'kubelet.yaml');
    writeFileSync(
      file,
      [
        'kind: KubeletConfiguration',
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'maxPods: 20',
        `staticPodPath: ${staticDir}`,
        'fileCheckFrequency: 1s',
        'nodeLeaseDurationSeconds: 20',
        'nodeStatusUpdateFrequency: 2s',
        'evictionHard:',
        '  memory.available: 1Mi',
        'podPidsLimit: 300',
        'notAKubeletField: true',
      ].join('\n'),
    );
    let s: Instance | undefined;
    try {
      s = await startSplitlet({ nodeName: 'kcfg-node', env: { SPLITLET_CONFIG: file }, args: ['--runtime', 'sim', '--max-pods', '9'] });
      const out = s.output.join('\n');
      assert.match(out, /warning: .*kubelet\.yaml: podPidsLimit: not supported by splitlet, ignored/);
      assert.match(out, /warning: .*kubelet\.yaml: notAKubeletField: unknown field, ignored/);
      const kubeconfig = join(s.stateDir, 'kubeconfig');
      const kubectl = async (...args: string[]): Promise<unknown> => JSON.parse((await execFileP('kubectl', ['--kubeconfig', kubeconfig, ...args, '-o', 'json'])).stdout);
      const node = await waitFor(
        'the Node with its conditions',
        async () => {
          const n = (await kubectl('get', 'node', 'kcfg-node')) as INode;
          return n.status?.conditions?.length === 4 ? n : undefined;
        },
        90_000,
      );
      assert.equal(node.status?.capacity?.['pods'], '9', '--max-pods overrides maxPods: 20 of the file');
      assert.equal(node.status?.allocatable?.['pods'], '9');
      const byType = new Map((node.status?.conditions ?? []).map((c) => [c.type, c]));
      assert.deepEqual([byType.get('Ready')?.status, byType.get('Ready')?.reason], ['True', 'KubeletReady']);
      assert.deepEqual(
        [byType.get('MemoryPressure')?.status, byType.get('MemoryPressure')?.reason],
        ['False', 'KubeletHasSufficientMemory'],
        'memory.available<1Mi is not crossed on this machine',
      );
      const lease = (await kubectl('get', 'lease', '-n', 'kube-node-lease', 'kcfg-node')) as ILease;
      assert.equal(lease.spec?.leaseDurationSeconds, 20, 'nodeLeaseDurationSeconds from the file');
      const mirror = await waitFor(
        'the static pod from staticPodPath running, as a mirror pod',
        async () => {
          const p = (await kubectl('get', 'pod', 'cfg-static-kcfg-node', '-n', 'default').catch(() => undefined)) as IPod | undefined;
          return p?.status?.phase === 'Running' ? p : undefined;
        },
        120_000,
      );
      assert.ok(mirror.metadata?.annotations?.['kubernetes.io/config.mirror'], 'a mirror pod');
      assert.deepEqual(readdirSync(join(s.stateDir, 'manifests')), [], 'the state dir manifests are not the source');
    } finally {
      if (s !== undefined) assert.equal(await s.stop(), 0, `splitlet up exits 0:\n${s.output.slice(-40).join('\n')}`);
    }
  });
});
