import assert from 'node:assert/strict';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '@splitlet/testkit';
import { checkHostPathType, setUpHostPath, validateHostPath, type HostPathType, type HostPathTypeChecker } from '../src/volumes/host-path.js';

type Kind = 'missing' | 'dir' | 'file' | 'socket' | 'char' | 'block';

/** A state-based fake checker (hostpath's fakeHostPathTypeChecker). */
function fakeChecker(path: string, kind: Kind): HostPathTypeChecker & { made: string[] } {
  const made: string[] = [];
  let k = kind;
  return {
    made,
    exists: async () => k !== 'missing',
    isFile: async () => k === 'file',
    isDir: async () => k === 'dir',
    isSocket: async () => k === 'socket',
    isChar: async () => k === 'char',
    isBlock: async () => k === 'block',
    makeDir: async () => {
      made.push('dir');
      k = 'dir';
    },
    makeFile: async () => {
      made.push('file');
      k = 'file';
    },
    getPath: () => path,
  };
}

describe('checkHostPathType (table, models hostpath checkTypeInternal)', () => {
  const cases: { type: HostPathType | undefined; kind: Kind; error?: string; made?: string }[] = [
    { type: undefined, kind: 'missing' },
    { type: '', kind: 'missing' },
    { type: 'DirectoryOrCreate', kind: 'missing', made: 'dir' },
    { type: 'DirectoryOrCreate', kind: 'dir' },
    { type: 'DirectoryOrCreate', kind: 'file', error: 'hostPath type check failed: /p is not a directory' },
    { type: 'Directory', kind: 'dir' },
    { type: 'Directory', kind: 'missing', error: 'hostPath type check failed: /p is not a directory' },
    { type: 'Directory', kind: 'file', error: 'hostPath type check failed: /p is not a directory' },
    { type: 'FileOrCreate', kind: 'missing', made: 'file' },
    { type: 'FileOrCreate', kind: 'file' },
    { type: 'FileOrCreate', kind: 'dir', error: 'hostPath type check failed: /p is not a file' },
    { type: 'File', kind: 'file' },
    { type: 'File', kind: 'missing', error: 'hostPath type check failed: /p is not a file' },
    { type: 'Socket', kind: 'socket' },
    { type: 'Socket', kind: 'file', error: 'hostPath type check failed: /p is not a socket file' },
    { type: 'CharDevice', kind: 'char' },
    { type: 'CharDevice', kind: 'block', error: 'hostPath type check failed: /p is not a character device' },
    { type: 'BlockDevice', kind: 'block' },
    { type: 'BlockDevice', kind: 'char', error: 'hostPath type check failed: /p is not a block device' },
  ];
  for (const c of cases) {
    it(`${c.type ?? '(unset)'} on ${c.kind} → ${c.error ?? 'ok'}`, async () => {
      const ftc = fakeChecker('/p', c.kind);
      if (c.error !== undefined) await assert.rejects(checkHostPathType(ftc, c.type), { message: c.error });
      else await checkHostPathType(ftc, c.type);
      assert.deepEqual(ftc.made, c.made === undefined ? [] : [c.made]);
    });
  }
  it('rejects an unknown type', async () => {
    await assert.rejects(checkHostPathType(fakeChecker('/p', 'dir'), 'Bogus' as HostPathType), { message: 'Bogus is an invalid volume type' });
  });
});

describe('setUpHostPath on the real filesystem', () => {
  let tmp: TempDir;
  before(async () => {
    tmp = await makeTempDir('vm-hostpath-');
  });
  after(async () => tmp.cleanup());

  it('DirectoryOrCreate creates the directory with mode 0755', async () => {
    const p = join(tmp.path, 'made', 'deep');
    await setUpHostPath(p, 'DirectoryOrCreate');
    const st = await stat(p);
    assert.ok(st.isDirectory());
    assert.equal(st.mode & 0o777, 0o755 & ~process.umask());
  });

  it('FileOrCreate creates an empty file and accepts an existing one', async () => {
    const p = join(tmp.path, 'f.txt');
    await setUpHostPath(p, 'FileOrCreate');
    assert.ok((await stat(p)).isFile());
    await writeFile(p, 'x');
    await setUpHostPath(p, 'FileOrCreate');
    assert.equal((await stat(p)).size, 1);
  });

  it('Directory on a missing path fails with the kubelet message', async () => {
    const p = join(tmp.path, 'nope');
    await assert.rejects(setUpHostPath(p, 'Directory'), { message: `hostPath type check failed: ${p} is not a directory` });
  });

  it('File on a directory fails', async () => {
    const p = join(tmp.path, 'adir');
    await mkdir(p);
    await assert.rejects(setUpHostPath(p, 'File'), { message: `hostPath type check failed: ${p} is not a file` });
  });

  it('Socket accepts a unix socket', async () => {
    const p = join(tmp.path, 's.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(p, r));
    try {
      await setUpHostPath(p, 'Socket');
      await assert.rejects(setUpHostPath(join(tmp.path, 'f.txt'), 'Socket'), /is not a socket file/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('CharDevice accepts /dev/null', async () => {
    await setUpHostPath('/dev/null', 'CharDevice');
    await assert.rejects(setUpHostPath('/dev/null', 'BlockDevice'), { message: 'hostPath type check failed: /dev/null is not a block device' });
  });

  it('no type: no check, even for a missing path', async () => {
    await setUpHostPath(join(tmp.path, 'missing'), '');
  });

  it('rejects a path with ..', () => {
    assert.throws(() => validateHostPath('/var/../etc'), { message: "invalid HostPath `/var/../etc`: must not contain '..'" });
    validateHostPath('/var/..data');
  });
});
