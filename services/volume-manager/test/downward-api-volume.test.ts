import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, readFile, readdir, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { BoundPod, Volume } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { makeTempDir, type TempDir } from '@splitlet/testkit';
import { validatePayloadPath, writeAtomically } from '../src/volumes/atomic-writer.js';
import { downwardApiPayload } from '../src/volumes/downward-api-volume.js';
import { podPaths } from '../src/volumes/pod-dirs.js';
import { VolumeManager } from '../src/volumes/volume-manager.js';
import { setVolumeOwnership } from '../src/volumes/volume-ownership.js';
import { EventLog, FakeMounter, MemoryStore, memoryLogger } from './fakes.js';

const fence = { partition: 1, epoch: 1 };
const ctx = { podIP: '', podIPs: [], hostIPs: [], nodeAllocatable: { milliCpu: 2000, memoryBytes: 4 * 1024 ** 3 } };

function labelledPod(labels: Record<string, string>, volumes: Volume[], extra: Partial<BoundPod['spec']> = {}): BoundPod {
  return aPod({
    metadata: { uid: 'u-dw', name: 'kubernetes-downwardapi-volume-example', namespace: 'default', labels, annotations: { builder: 'john-doe' } },
    spec: {
      volumes,
      containers: [{ name: 'client-container', image: 'busybox', resources: { limits: { cpu: '250m', memory: '64Mi' }, requests: { cpu: '125m' } } }],
      ...extra,
    },
  });
}

const podinfo: Volume = {
  name: 'podinfo',
  downwardAPI: {
    items: [
      { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
      { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
      { path: 'cpu_limit', resourceFieldRef: { containerName: 'client-container', resource: 'limits.cpu', divisor: '1m' } },
      { path: 'mem_request', resourceFieldRef: { containerName: 'client-container', resource: 'requests.memory', divisor: '1Mi' } },
      { path: 'sub/name', fieldRef: { fieldPath: 'metadata.name' }, mode: 0o600 },
    ],
  },
};

describe('downwardAPI payload', () => {
  it('projects labels and annotations as the documentation shows, resources with divisors, modes', () => {
    const p = downwardApiPayload(labelledPod({ zone: 'us-est-coast', cluster: 'test-cluster1', rack: 'rack-22' }, [podinfo]), podinfo.downwardAPI, ctx);
    assert.equal(p.get('labels')?.data, 'cluster="test-cluster1"\nrack="rack-22"\nzone="us-est-coast"');
    assert.equal(p.get('annotations')?.data, 'builder="john-doe"');
    assert.equal(p.get('cpu_limit')?.data, '250');
    assert.equal(p.get('mem_request')?.data, '0');
    assert.equal(p.get('labels')?.mode, 0o644);
    assert.equal(p.get('sub/name')?.mode, 0o600);
  });

  it('names every item that cannot be projected (status fields are for env only)', () => {
    const bad = {
      items: [
        { path: 'ip', fieldRef: { fieldPath: 'status.podIP' } },
        { path: 'x', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } },
      ],
    };
    assert.throws(
      () => downwardApiPayload(labelledPod({}, []), bad, ctx),
      (e: Error) =>
        e.message ===
        '[Unable to extract field "ip": unsupported fieldPath: status.podIP, Unable to extract field "x": container "nope" not found in pod default/kubernetes-downwardapi-volume-example]',
    );
  });

  it('refuses payload paths that would escape the volume', () => {
    assert.throws(() => validatePayloadPath('/etc/x'), /must be relative path/);
    assert.throws(() => validatePayloadPath('a/../../x'), /must not contain '..'/);
    assert.throws(() => validatePayloadPath('..data'), /must not start with '..'/);
  });
});

describe('atomic writer', () => {
  let tmp: TempDir;
  beforeEach(async () => {
    tmp = await makeTempDir('aw-');
  });
  afterEach(() => tmp.cleanup());

  it('swaps ..data, keeps user paths as symlinks, skips identical content, drops removed paths', async () => {
    const dir = tmp.path;
    assert.equal(
      await writeAtomically(
        dir,
        new Map([
          ['a', { data: 'one', mode: 0o644 }],
          ['b/c', { data: 'x', mode: 0o644 }],
        ]),
      ),
      true,
    );
    const first = await readlink(join(dir, '..data'));
    assert.match(first, /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$/);
    assert.equal(await readlink(join(dir, 'a')), '..data/a');
    assert.equal(await readFile(join(dir, 'b', 'c'), 'utf8'), 'x');

    assert.equal(
      await writeAtomically(
        dir,
        new Map([
          ['a', { data: 'one', mode: 0o644 }],
          ['b/c', { data: 'x', mode: 0o644 }],
        ]),
      ),
      false,
    );
    assert.equal(await readlink(join(dir, '..data')), first);

    assert.equal(await writeAtomically(dir, new Map([['a', { data: 'two', mode: 0o644 }]])), true);
    const second = await readlink(join(dir, '..data'));
    assert.notEqual(second, first);
    assert.equal(await readFile(join(dir, 'a'), 'utf8'), 'two');
    const entries = (await readdir(dir)).sort();
    assert.deepEqual(entries, ['..data', 'a', second].sort());
  });
});

describe('VolumeManager downwardAPI and fsGroup', () => {
  let tmp: TempDir;
  let tracing: TestTracing;
  let clock: FakeClock;
  let vm: VolumeManager;
  beforeEach(async () => {
    tmp = await makeTempDir('vm-dw-');
    tracing = createTestTracing();
    clock = new FakeClock(1_700_000_000_000);
    vm = new VolumeManager({
      nodeName: 'node-a',
      paths: podPaths(tmp.path),
      mounter: new FakeMounter(),
      store: new MemoryStore(),
      events: new EventLog(),
      clock,
      logger: memoryLogger().logger,
      tracer: tracing.tracer,
      allowTmpfs: false,
    });
  });
  afterEach(async () => {
    await tracing.shutdown();
    await tmp.cleanup();
  });

  it('mounts a downwardAPI volume and re-projects it when the labels change', async () => {
    const reply = await vm.mount(labelledPod({ zone: 'a' }, [podinfo]), fence);
    const dir = reply.volumes['podinfo']?.hostPath ?? '';
    assert.equal(dir, join(tmp.path, 'pods', 'u-dw', 'volumes', 'kubernetes.io~downward-api', 'podinfo'));
    assert.equal(await readFile(join(dir, 'labels'), 'utf8'), 'zone="a"');
    assert.equal((await stat(join(dir, 'labels'))).mode & 0o777, 0o644);
    clock.advance(1000);
    await vm.mount(labelledPod({ zone: 'b' }, [podinfo]), fence);
    assert.equal(await readFile(join(dir, 'labels'), 'utf8'), 'zone="b"');
    await vm.unmount('u-dw', false, fence);
    await assert.rejects(lstat(dir), { code: 'ENOENT' });
  });

  it('a bad item fails the mount with the kubelet shape and names the item', async () => {
    const bad = { name: 'info', downwardAPI: { items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] } } as Volume;
    await assert.rejects(vm.mount(labelledPod({}, [bad]), fence), {
      message: 'unmounted volumes=[info], unattached volumes=[]: MountVolume.SetUp failed for volume "info" : Unable to extract field "ip": unsupported fieldPath: status.podIP',
    });
  });

  it('gives a new emptyDir the fsGroup with the setgid bit, and downwardAPI files group read', async () => {
    const gid = 2000;
    const pod = labelledPod({ a: 'b' }, [{ name: 'data', emptyDir: {} }, podinfo], { securityContext: { fsGroup: gid } });
    const reply = await vm.mount(pod, fence);
    const data = await stat(reply.volumes['data']?.hostPath ?? '');
    assert.equal(data.gid, gid);
    assert.equal(data.mode & 0o7777, 0o2777);
    const labels = await stat(join(reply.volumes['podinfo']?.hostPath ?? '', 'labels'));
    assert.equal(labels.gid, gid);
    assert.equal(labels.mode & 0o7777, 0o644);
  });

  it('OnRootMismatch skips a volume whose root already matches; Always walks it', async () => {
    const dir = join(tmp.path, 'vol');
    await mkdir(dir, { mode: 0o777 });
    await writeFile(join(dir, 'f'), 'x', { mode: 0o600 });
    assert.equal(await setVolumeOwnership(dir, 3000, 'OnRootMismatch'), true);
    assert.equal((await stat(join(dir, 'f'))).mode & 0o777, 0o660);
    await chmod(join(dir, 'f'), 0o600);
    assert.equal(await setVolumeOwnership(dir, 3000, 'OnRootMismatch'), false);
    assert.equal((await stat(join(dir, 'f'))).mode & 0o777, 0o600);
    assert.equal(await setVolumeOwnership(dir, 3000, 'Always'), true);
    assert.equal((await stat(join(dir, 'f'))).mode & 0o777, 0o660);
  });
});
