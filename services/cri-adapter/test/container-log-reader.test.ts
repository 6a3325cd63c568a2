/** Container log chunks for `splitlet logs` over the bus: offsets, tails (with partial records), limits, path checks. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ContainerLogsRequest } from '@splitlet/api';
import { containerLogPath, readContainerLog } from '../src/logs/container-log-reader.js';

const base = { type: 'kubelet.logs.Read.v1', namespace: 'default', podName: 'web', podUid: 'u-1', container: 'app', attempt: 0 } as const;

describe('readContainerLog', () => {
  let dir: string;
  const lines = Array.from({ length: 3000 }, (_, i) => `2026-01-01T00:00:00.${String(i).padStart(9, '0')}Z stdout F line-${i}`);
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'log-reader-'));
    mkdirSync(join(dir, 'default_web_u-1', 'app'), { recursive: true });
    // A big file (> one 64 KiB block), and a run whose last line is split into P pieces.
    writeFileSync(join(dir, 'default_web_u-1', 'app', '0.log'), `${lines.join('\n')}\n`);
    writeFileSync(join(dir, 'default_web_u-1', 'app', '1.log'), 't stdout F one\nt stdout F two\nt stdout P thr\nt stdout P e\nt stdout F e\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const read = (r: Partial<ContainerLogsRequest>): ReturnType<typeof readContainerLog> => readContainerLog(dir, { ...base, ...r });
  const text = (data: string): string => Buffer.from(data, 'base64').toString('utf8');

  it('reads from an offset, at most limitBytes, and says where to go on', async () => {
    const first = await read({ offset: 0, limitBytes: 100 });
    assert.equal(first.offset, 0);
    assert.equal(first.nextOffset, 100);
    assert.ok(first.size > 100_000);
    const next = await read({ offset: first.nextOffset, limitBytes: 1000 });
    assert.equal(text(first.data) + text(next.data), `${lines.join('\n')}\n`.slice(0, 1100));
    const end = await read({ offset: first.size });
    assert.equal(end.data, '');
    assert.equal(end.nextOffset, first.size);
  });

  it('--tail starts where the last N lines start, also across blocks', async () => {
    for (const n of [1, 2, 1000, 2999]) {
      const r = await read({ tailLines: n, limitBytes: 512 * 1024 });
      assert.equal(text(r.data), `${lines.slice(-n).join('\n')}\n`, `tail ${n}`);
      assert.equal(r.nextOffset, r.size);
    }
    assert.equal(text((await read({ tailLines: 5000, limitBytes: 512 * 1024 })).data), `${lines.join('\n')}\n`);
    assert.equal((await read({ tailLines: 0 })).data, '');
  });

  it('a tail counts raw CRI lines, partial (P) pieces included, as the kubelet does', async () => {
    assert.equal(text((await read({ attempt: 1, tailLines: 1 })).data), 't stdout F e\n');
    assert.equal(text((await read({ attempt: 1, tailLines: 4 })).data), 't stdout F two\nt stdout P thr\nt stdout P e\nt stdout F e\n');
  });

  it('a missing run is NotFound; names that could leave the log dir are refused', async () => {
    await assert.rejects(read({ attempt: 7 }), (e: { code?: string; message: string }) => e.code === 'NotFound' && /run 7/.test(e.message));
    for (const bad of [{ podName: '../etc' }, { container: 'a/b' }, { namespace: '..' }, { podUid: 'x/../../y' }]) {
      assert.throws(
        () => containerLogPath(dir, { ...base, ...bad }),
        (e: { code?: string }) => e.code === 'Invalid',
        JSON.stringify(bad),
      );
    }
  });
});
