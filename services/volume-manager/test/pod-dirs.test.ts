import assert from 'node:assert/strict';
import { lstat, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '@splitlet/testkit';
import { listPodsFromDisk, makeEmptyDir, makePodDataDirs, podPaths, removeAllOneFilesystem } from '../src/volumes/pod-dirs.js';

describe('pod paths', () => {
  const p = podPaths('/var/lib/kubelet');
  it('lays pods out as the kubelet does', () => {
    assert.equal(p.podDir('u1'), '/var/lib/kubelet/pods/u1');
    assert.equal(p.podVolumesDir('u1'), '/var/lib/kubelet/pods/u1/volumes');
    assert.equal(p.podPluginsDir('u1'), '/var/lib/kubelet/pods/u1/plugins');
    assert.equal(p.podContainersDir('u1'), '/var/lib/kubelet/pods/u1/containers');
    assert.equal(p.podVolumeDir('u1', 'kubernetes.io/empty-dir', 'cache'), '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache');
  });
  it('refuses UIDs and volume names that would escape', () => {
    for (const bad of ['..', '.', '', 'a/b', '../x']) {
      assert.throws(() => p.podDir(bad), /invalid pod UID/);
      assert.throws(() => p.podVolumeDir('u1', 'kubernetes.io/empty-dir', bad), /invalid volume name/);
    }
  });
});

describe('pod dirs on disk', () => {
  let tmp: TempDir;
  before(async () => {
    tmp = await makeTempDir('vm-poddirs-');
  });
  after(async () => tmp.cleanup());

  it('makePodDataDirs creates pod, volumes, plugins, containers (0750), idempotently', async () => {
    const p = podPaths(tmp.path);
    await makePodDataDirs(p, 'u1');
    await makePodDataDirs(p, 'u1');
    for (const d of [p.podDir('u1'), p.podVolumesDir('u1'), p.podPluginsDir('u1'), p.podContainersDir('u1')]) {
      const st = await stat(d);
      assert.ok(st.isDirectory(), d);
      assert.equal(st.mode & 0o777, 0o750 & ~process.umask());
    }
    assert.deepEqual(await listPodsFromDisk(p), ['u1']);
  });

  it('makeEmptyDir makes a 0777 directory', async () => {
    const d = podPaths(tmp.path).podVolumeDir('u1', 'kubernetes.io/empty-dir', 'cache');
    await makeEmptyDir(d);
    assert.equal((await stat(d)).mode & 0o777, 0o777);
  });

  it('removeAllOneFilesystem removes a tree but never follows a symlink', async () => {
    const outside = join(tmp.path, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'precious'), 'keep me');
    const victim = join(tmp.path, 'victim');
    await mkdir(join(victim, 'a', 'b'), { recursive: true });
    await writeFile(join(victim, 'a', 'b', 'f'), 'x');
    await symlink(outside, join(victim, 'link'));
    await removeAllOneFilesystem(victim);
    await assert.rejects(lstat(victim), { code: 'ENOENT' });
    assert.equal(await readFile(join(outside, 'precious'), 'utf8'), 'keep me');
  });

  it('listPodsFromDisk is empty without a pods dir', async () => {
    assert.deepEqual(await listPodsFromDisk(podPaths(join(tmp.path, 'none'))), []);
  });
});
