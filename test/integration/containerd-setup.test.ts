/**
 * The parts of the local containerd setup that need no root and no daemon: the tar writer (checked
 * by extracting with the system `tar`), the OCI image archives (deterministic digests, layout,
 * annotations), the pod network choice, and the generated containerd config.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { writeTar } from '../../libs/node-setup/src/tar-writer.ts';
import { IMAGE_RECIPES, IMAGES, buildBusyboxImage, containerdPaths, isRuntimeError } from '../../libs/node-setup/src/index.ts';
import { choosePodNetwork, podNetworkConflist } from '../../libs/node-setup/src/cni-network.ts';
import { containerdConfigToml } from '../../libs/node-setup/src/containerd-config.ts';
import { isStaticBusybox } from '../../libs/node-setup/src/containerd.ts';

const hasTar = spawnSync('tar', ['--version']).status === 0;
const hasIp = spawnSync('ip', ['-V']).status === 0;
const hasBusybox = isStaticBusybox('/bin/busybox');

function tmp(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

const sha256 = (b: Uint8Array): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('tar writer', () => {
  test('is deterministic and ends with two zero blocks', () => {
    const entries = [{ path: 'a.txt', type: 'file' as const, data: Buffer.from('hi\n') }];
    const a = writeTar(entries);
    assert.deepEqual(a, writeTar(entries));
    assert.equal(a.length % 512, 0);
    assert.ok(a.subarray(a.length - 1024).every((b) => b === 0));
  });

  test('round-trips through the system tar: dirs, modes, symlinks, long names (ustar prefix and pax)', { skip: hasTar ? false : 'no tar binary' }, () => {
    const dir = tmp('spl-tar-');
    try {
      const deep = `${'d'.repeat(60)}/${'e'.repeat(60)}/${'f'.repeat(90)}.txt`; // > 100: ustar prefix
      const huge = `${'g'.repeat(120)}/${'h'.repeat(200)}.txt`; // name part > 100: pax path
      const longTarget = `/${'t'.repeat(150)}`; // > 100: pax linkpath
      // a pax record whose length crosses from 3 to 4 digits (body 998 bytes → record 1002)
      const boundary = `${['i', 'j', 'k', 'l'].map((c) => c.repeat(200)).join('/')}/${'m'.repeat(991 - 4 * 201)}`;
      assert.equal(boundary.length, 991);
      const archive = writeTar([
        { path: 'bin', type: 'directory' },
        { path: 'bin/tool', type: 'file', mode: 0o755, data: Buffer.from('#!/bin/sh\n') },
        { path: 'bin/alias', type: 'symlink', linkTarget: 'tool' },
        { path: 'bin/far', type: 'symlink', linkTarget: longTarget },
        { path: 'tmp', type: 'directory', mode: 0o1777 },
        { path: `${'d'.repeat(60)}/${'e'.repeat(60)}`, type: 'directory' },
        { path: deep, type: 'file', data: Buffer.from('deep') },
        { path: 'g'.repeat(120), type: 'directory' },
        { path: huge, type: 'file', data: Buffer.alloc(1000, 7) },
        { path: boundary, type: 'file', data: Buffer.from('edge') },
      ]);
      const file = join(dir, 'a.tar');
      writeFileSync(file, archive);
      const out = join(dir, 'out');
      mkdirSync(out);
      const r = spawnSync('tar', ['-xf', file, '-C', out], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(statSync(join(out, 'bin/tool')).mode & 0o777, 0o755);
      assert.equal(readlinkSync(join(out, 'bin/alias')), 'tool');
      assert.equal(readlinkSync(join(out, 'bin/far')), longTarget);
      assert.ok(lstatSync(join(out, 'bin/far')).isSymbolicLink());
      assert.equal(statSync(join(out, 'tmp')).mode & 0o7777, 0o1777);
      assert.equal(readFileSync(join(out, deep), 'utf8'), 'deep');
      assert.deepEqual(readFileSync(join(out, huge)), Buffer.alloc(1000, 7));
      assert.equal(readFileSync(join(out, boundary), 'utf8'), 'edge');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('OCI image archives', { skip: hasBusybox ? false : 'no static /bin/busybox (apt-get install busybox-static)' }, () => {
  test('same input, same digests; cached the second time; layout, annotations and config as containerd needs', { skip: hasTar ? false : 'no tar binary' }, () => {
    const a = tmp('spl-img-');
    const b = tmp('spl-img-');
    try {
      const recipe = IMAGE_RECIPES.find((r) => r.names.includes(IMAGES.busybox137));
      assert.ok(recipe);
      const first = buildBusyboxImage({ recipe, outDir: a });
      const other = buildBusyboxImage({ recipe, outDir: b });
      const cached = buildBusyboxImage({ recipe, outDir: a });
      assert.equal(first.built, true);
      assert.equal(cached.built, false);
      assert.equal(first.manifestDigest, other.manifestDigest);
      assert.equal(first.configDigest, cached.configDigest);
      assert.deepEqual(readFileSync(first.path), readFileSync(other.path));

      const out = join(a, 'x');
      mkdirSync(out);
      assert.equal(spawnSync('tar', ['-xf', first.path, '-C', out]).status, 0);
      assert.deepEqual(JSON.parse(readFileSync(join(out, 'oci-layout'), 'utf8')), { imageLayoutVersion: '1.0.0' });
      const index = JSON.parse(readFileSync(join(out, 'index.json'), 'utf8')) as {
        manifests: { digest: string; annotations: Record<string, string> }[];
      };
      assert.deepEqual(
        index.manifests.map((m) => [m.annotations['io.containerd.image.name'], m.annotations['org.opencontainers.image.ref.name'], m.digest]),
        [
          [IMAGES.busybox137, '1.37', first.manifestDigest],
          [IMAGES.busyboxLatest, 'latest', first.manifestDigest],
        ],
      );
      const blob = (d: string): Buffer => readFileSync(join(out, 'blobs', 'sha256', d.slice('sha256:'.length)));
      const manifest = JSON.parse(blob(first.manifestDigest).toString()) as { config: { digest: string }; layers: { digest: string; mediaType: string }[] };
      assert.equal(sha256(blob(first.manifestDigest)), first.manifestDigest);
      assert.equal(manifest.config.digest, first.configDigest);
      const layerGz = blob(manifest.layers[0]?.digest ?? '');
      assert.equal(sha256(layerGz), manifest.layers[0]?.digest);
      assert.equal(sha256(gunzipSync(layerGz)), first.diffId);
      const config = JSON.parse(blob(first.configDigest).toString()) as {
        architecture: string;
        os: string;
        config: { Env: string[]; Cmd: string[] };
        rootfs: { diff_ids: string[] };
      };
      assert.equal(config.architecture, 'amd64');
      assert.equal(config.os, 'linux');
      assert.deepEqual(config.config.Cmd, ['sh']);
      assert.ok(config.config.Env.some((e) => e.startsWith('PATH=') && e.includes('/bin')));
      assert.deepEqual(config.rootfs.diff_ids, [first.diffId]);

      const listing = spawnSync('tar', ['-tzvf', join(out, 'blobs', 'sha256', (manifest.layers[0]?.digest ?? '').slice(7))], { encoding: 'utf8' }).stdout;
      assert.match(listing, /^-rwxr-xr-x root\/root\s+\d+ 1970-01-01 00:00 bin\/busybox$/m);
      assert.match(listing, /bin\/sh -> busybox$/m);
      assert.match(listing, /bin\/sleep -> busybox$/m);
      assert.match(listing, /^drwxrwxrwt .* tmp\/$/m);
      assert.match(listing, / etc\/passwd$/m);
    } finally {
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }
  });

  test('1.36 and 1.37 share the layer but not the image id; pause runs sleep infinity', () => {
    const dir = tmp('spl-img-');
    try {
      const [b136, b137, pause] = IMAGE_RECIPES.map((recipe) => buildBusyboxImage({ recipe, outDir: dir }));
      assert.ok(b136 && b137 && pause);
      assert.equal(b136.diffId, b137.diffId);
      assert.notEqual(b136.configDigest, b137.configDigest);
      assert.deepEqual(pause.names, [IMAGES.pause]);
      const recipe = IMAGE_RECIPES.find((r) => r.names.includes(IMAGES.pause));
      assert.deepEqual([...(recipe?.entrypoint ?? []), ...(recipe?.cmd ?? [])], ['/bin/sleep', 'infinity']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('pod network', { skip: hasIp ? false : 'no ip binary (apt-get install iproute2)' }, () => {
  test('derived from the state dir, stable, and clear of the host networks', () => {
    const dir = tmp('spl-net-');
    try {
      const n1 = choosePodNetwork(dir, { stateDir: '/srv/splitlet/a' });
      const n2 = choosePodNetwork(dir, { stateDir: '/srv/splitlet/a' });
      assert.deepEqual(n1, n2);
      assert.match(n1.bridge, /^spl[0-9a-f]{6}$/);
      assert.ok(n1.bridge.length <= 15);
      assert.match(n1.subnet, /^10\.2[0-4]\d\.\d+\.0\/24$/);
      assert.equal(n1.gateway, n1.subnet.replace('0/24', '1'));
      const otherDir = join(dir, 'other');
      mkdirSync(otherDir);
      const other = choosePodNetwork(otherDir, { stateDir: '/srv/splitlet/b' });
      assert.notEqual(other.bridge, n1.bridge);
      assert.notEqual(other.name, n1.name);
      const conf = podNetworkConflist(n1, join(dir, 'ipam')) as { name: string; plugins: { type: string; ipam?: { dataDir: string } }[] };
      assert.deepEqual(
        conf.plugins.map((p) => p.type),
        ['bridge', 'portmap'],
      );
      assert.equal(conf.plugins[0]?.ipam?.dataDir, join(dir, 'ipam'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an explicit subnet that overlaps the host or is malformed is refused', () => {
    const dir = tmp('spl-net-');
    try {
      assert.throws(
        () => choosePodNetwork(dir, { stateDir: '/x', subnet: '127.0.0.0/24' }),
        (e) => isRuntimeError(e, 'NetworkConflict'),
      );
      assert.throws(
        () => choosePodNetwork(dir, { stateDir: '/x', subnet: '10.88.3.0/24' }),
        (e) => isRuntimeError(e, 'NetworkConflict'),
      );
      assert.throws(
        () => choosePodNetwork(dir, { stateDir: '/x', subnet: '10.1.2.3' }),
        (e) => isRuntimeError(e, 'InvalidOption'),
      );
      assert.throws(
        () => choosePodNetwork(dir, { stateDir: '/x', subnet: 'nope' }),
        (e) => isRuntimeError(e, 'InvalidOption'),
      );
      assert.equal(choosePodNetwork(dir, { stateDir: '/x', subnet: '10.231.9.0/24' }).gateway, '10.231.9.1');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test('containerd config: everything under the state dir, the settings this machine needs', () => {
  const p = containerdPaths('/srv/st');
  const toml = containerdConfigToml(p, { sandboxImage: IMAGES.pause, snapshotter: 'overlayfs' });
  for (const line of [
    'version = 2',
    'root = "/srv/st/containerd/root"',
    'state = "/srv/st/containerd/state"',
    'address = "/srv/st/containerd/containerd.sock"',
    'restrict_oom_score_adj = true',
    'sandbox_image = "registry.k8s.io/pause:3.9"',
    'bin_dir = "/usr/lib/cni"',
    'conf_dir = "/srv/st/containerd/cni/net.d"',
    'snapshotter = "overlayfs"',
    'Root = "/srv/st/containerd/runc"',
    'SystemdCgroup = false',
    'netns_mounts_under_state_dir = true',
    'path = "/srv/st/containerd/opt"',
    'config_path = "/srv/st/containerd/certs.d"',
  ]) {
    assert.ok(toml.includes(line), `config has ${line}`);
  }
  assert.ok(!toml.includes('/run/containerd'), 'nothing under the machine-global /run/containerd');
  assert.ok(!existsSync('/srv/st'), 'pure: writes nothing');
});
