import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { makeTempDir } from '@splitlet/testkit';
import { execMounter, parseMountPoints } from '../src/adapters/exec-mounter.js';

const MOUNTINFO = [
  '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw',
  '90 22 0:50 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/shm rw,relatime - tmpfs tmpfs rw,size=65536k',
  '91 22 0:51 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with\\040space rw - tmpfs tmpfs rw',
  '92 22 0:52 / /var/lib/kubelet/pods/u10/x rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('exec mounter', () => {
  it('parses mountinfo mount points, unescaping octal', () => {
    assert.deepEqual(parseMountPoints(MOUNTINFO), [
      '/',
      '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/shm',
      '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with space',
      '/var/lib/kubelet/pods/u10/x',
    ]);
  });

  it('lists mount points under a directory only (not a sibling with the same prefix), deepest first', async () => {
    const tmp = await makeTempDir('vm-mountinfo-');
    try {
      const file = join(tmp.path, 'mountinfo');
      await writeFile(file, MOUNTINFO);
      const m = execMounter({ mountinfoPath: file });
      assert.deepEqual(await m.mountPointsUnder('/var/lib/kubelet/pods/u1'), [
        '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/with space',
        '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/shm',
      ]);
      assert.deepEqual(await m.mountPointsUnder('/var/lib/kubelet/pods/u2'), []);
    } finally {
      await tmp.cleanup();
    }
  });
});
