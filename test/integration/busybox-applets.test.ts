/**
 * One busybox applet list for both runtimes (@splitlet/images BUSYBOX_APPLETS, the official
 * busybox image's): every applet the simulator runs is one of them, and the local containerd image
 * built from this machine's busybox-static has each of them (as the binary's applet or a shim) and
 * says in its labels which official applets it still lacks. The shims run under a real busybox.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { BUSYBOX_APPLETS, BUSYBOX_SHIMS } from '@splitlet/images';
import { SIMULATED_APPLETS } from '@splitlet/sim-runtime/simulator';
import { isStaticBusybox } from '../../libs/node-setup/src/containerd.ts';
import { buildBusyboxImage, busyboxContents, busyboxLayer, IMAGE_RECIPES } from '../../libs/node-setup/src/oci-image.ts';

const BUSYBOX = '/bin/busybox';
const noBusybox = isStaticBusybox(BUSYBOX) ? undefined : `${BUSYBOX} is not a static busybox (apt-get install busybox-static)`;

/** Paths and symlink targets in an uncompressed tar (ustar headers). */
function tarEntries(tar: Buffer): Map<string, { type: string; data: Buffer }> {
  const out = new Map<string, { type: string; data: Buffer }>();
  for (let off = 0; off + 512 <= tar.length;) {
    const name = tar
      .subarray(off, off + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    if (name === '') break;
    const prefix = tar
      .subarray(off + 345, off + 500)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    const size = parseInt(
      tar
        .subarray(off + 124, off + 136)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
    const type = String.fromCharCode(tar[off + 156] ?? 48);
    out.set(prefix === '' ? name : `${prefix}/${name}`, { type, data: tar.subarray(off + 512, off + 512 + size) });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe('busybox applets: simulator and local images agree', () => {
  it('the simulator runs only applets of the official busybox image', () => {
    const unknown = SIMULATED_APPLETS.filter((a) => !BUSYBOX_APPLETS.includes(a));
    assert.deepEqual(unknown, [], 'simulated programs that busybox does not have');
    for (const a of ['printenv', 'httpd', 'wget', 'id', 'nc', 'sh', 'sleep']) assert.ok(SIMULATED_APPLETS.includes(a), `the simulator runs ${a}`);
  });

  it('the local image has every applet the simulator runs, shims what the host binary lacks and labels what it still lacks', { skip: noBusybox ?? false }, () => {
    const contents = busyboxContents(BUSYBOX);
    const has = new Set([...contents.applets, ...contents.shims]);
    assert.deepEqual(
      SIMULATED_APPLETS.filter((a) => !has.has(a)),
      [],
      'applets the simulator runs but the local image lacks',
    );
    assert.deepEqual(
      [...has].filter((a) => BUSYBOX_APPLETS.includes(a)).length + contents.missing.length,
      BUSYBOX_APPLETS.length,
      'every official applet is present, shimmed or listed missing',
    );
    const layer = tarEntries(busyboxLayer(BUSYBOX));
    for (const a of contents.applets) assert.equal(layer.get(`bin/${a}`)?.type, '2', `bin/${a} is a symlink to busybox`);
    for (const a of contents.shims) assert.equal(layer.get(`bin/${a}`)?.data.toString('utf8'), BUSYBOX_SHIMS[a], `bin/${a} is the shim`);
    const dir = mkdtempSync(join(tmpdir(), 'busybox-image-'));
    try {
      const recipe = IMAGE_RECIPES[0]!;
      const built = buildBusyboxImage({ recipe, outDir: dir, busybox: BUSYBOX });
      const oci = tarEntries(readFileSync(built.path));
      const config = JSON.parse(oci.get(`blobs/sha256/${built.configDigest.slice(7)}`)?.data.toString('utf8') ?? '{}') as { config?: { Labels?: Record<string, string> } };
      assert.equal(config.config?.Labels?.['io.splitlet.busybox.missing'], contents.missing.join(','));
      assert.equal(config.config?.Labels?.['io.splitlet.busybox.shims'], contents.shims.join(','));
      // The layer in the archive is the one checked above.
      const layerBlob = [...oci].find(([p, e]) => p.startsWith('blobs/sha256/') && e.data[0] === 0x1f && e.data[1] === 0x8b);
      assert.ok(layerBlob !== undefined && tarEntries(gunzipSync(layerBlob[1].data)).has('bin/busybox'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the shims behave like the applets under a real busybox sh', { skip: noBusybox ?? false }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'busybox-shims-'));
    try {
      for (const [name, script] of Object.entries(BUSYBOX_SHIMS)) writeFileSync(join(dir, name), script, { mode: 0o755 });
      const run = (args: string[], env: Record<string, string> = {}) => spawnSync(BUSYBOX, ['sh', ...args], { encoding: 'utf8', env: { PATH: '/bin:/usr/bin', ...env } });
      const one = run([join(dir, 'printenv'), 'GREETING'], { GREETING: 'hello world' });
      assert.deepEqual([one.stdout, one.status], ['hello world\n', 0]);
      const none = run([join(dir, 'printenv'), 'NOPE']);
      assert.deepEqual([none.stdout, none.status], ['', 1]);
      assert.match(run([join(dir, 'printenv')], { A: '1' }).stdout, /^A=1$/m);
      assert.deepEqual(run([join(dir, 'nohup'), 'echo', 'hi']).stdout, 'hi\n');
      assert.deepEqual(run([join(dir, 'hush'), '-c', 'echo $((1+2))']).stdout, '3\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
