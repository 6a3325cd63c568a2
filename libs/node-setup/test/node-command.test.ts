/**
 * `splitlet-node` as a command: usage, bad options named in the error, and `images --out` building
 * the image archives the node image carries (from the host's static busybox; skipped without it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { IMAGE_RECIPES, isRuntimeError, isStaticBusybox, nodeCommand } from '../src/index.ts';

function output(): { out: PassThrough; text: () => string } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  return { out, text: () => text };
}

test('no subcommand prints the usage and exits 2; --help exits 0', async () => {
  const a = output();
  assert.equal(await nodeCommand([], a.out, {}), 2);
  assert.match(a.text(), /splitlet-node run \[--state-dir DIR\]/);
  const b = output();
  assert.equal(await nodeCommand(['--help'], b.out, {}), 0);
});

test('bad options are RuntimeErrors naming the option', async () => {
  const o = output();
  await assert.rejects(
    nodeCommand(['run', '--health-port', 'x'], o.out, {}),
    (e: unknown) => isRuntimeError(e, 'InvalidOption') && /--health-port must be a port number, got x/.test((e as Error).message),
  );
  await assert.rejects(nodeCommand(['images'], o.out, {}), (e: unknown) => isRuntimeError(e, 'InvalidOption') && /--out DIR is required/.test((e as Error).message));
  await assert.rejects(nodeCommand(['sideways'], o.out, {}), (e: unknown) => isRuntimeError(e, 'InvalidOption') && /got "sideways"/.test((e as Error).message));
});

test(
  'images --out builds every image archive once, then reuses them',
  { skip: isStaticBusybox('/bin/busybox') ? false : 'no static /bin/busybox (apt-get install busybox-static)' },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'splitlet-node-images-'));
    try {
      const first = output();
      assert.equal(await nodeCommand(['images', '--out', dir], first.out, {}), 0);
      const lines = first
        .text()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { names: string[]; path: string; built: boolean });
      assert.deepEqual(
        lines.map((l) => l.names),
        IMAGE_RECIPES.map((r) => [...r.names]),
      );
      assert.ok(lines.every((l) => l.built && existsSync(l.path)));
      assert.equal(readdirSync(dir).filter((f) => f.endsWith('.tar')).length, IMAGE_RECIPES.length);
      const again = output();
      await nodeCommand(['images', '--out', dir], again.out, {});
      assert.ok(
        again
          .text()
          .trim()
          .split('\n')
          .every((l) => (JSON.parse(l) as { built: boolean }).built === false),
        'cached archives are reused',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
