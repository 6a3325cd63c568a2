/**
 * The NATS configuration `splitlet up`, compose and k8s get: private files, a valid nats-server
 * config (checked by nats-server itself, `-t`), kept passwords unless rotated, and the Helm values
 * in k8s/ generated from the same permission table (no drift).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { findNatsServer } from '@splitlet/testkit';
import { Consumers } from '@splitlet/api';
import { IDENTITIES } from '@splitlet/bus';
import { identityOf, readCredential, renderHelmAuthValues, writeNatsAuthConfig, writeNatsConfigDir } from '../src/up/nats-config.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');

test('splitlet up: nats.conf and the credentials are 0600, valid for nats-server, one user per identity', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nats-config-'));
  try {
    const { configFile, credentials } = writeNatsAuthConfig({ stateRoot: dir, host: '127.0.0.1', port: 14999, storeDir: join(dir, 'store'), node: 'node-1.example' });
    for (const f of [configFile, join(dir, 'nats-credentials.json')]) assert.equal(statSync(f).mode & 0o777, 0o600, f);
    execFileSync(findNatsServer(), ['-c', configFile, '-t'], { stdio: 'pipe' });
    const text = readFileSync(configFile, 'utf8');
    for (const id of IDENTITIES) {
      assert.deepEqual(readCredential(dir, id), credentials.get(id));
      assert.ok(text.includes(`password: "${credentials.get(id)!.password}"`));
    }
    assert.match(text, /sl\.node-1_example\.status\.\*/, 'subjects are scoped to the node token');
    assert.equal(new Set([...credentials.values()].map((c) => c.password)).size, IDENTITIES.length, 'every password differs');
    assert.equal(identityOf('pod-worker-3'), 'pod-worker');
    assert.equal(identityOf('sim-runtime'), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('splitlet nats-config: kept unless --rotate, valid for nats-server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nats-config-dir-'));
  try {
    const o = { dir, node: 'compose-node', listen: '0.0.0.0:4222', storeDir: '/data', monitorPort: 8222, serverName: 'splitlet-nats', ownerUid: undefined, rotate: false };
    assert.equal(writeNatsConfigDir(o), 'written');
    const first = readFileSync(join(dir, 'users', 'cli'), 'utf8');
    assert.equal(statSync(join(dir, 'users', 'cli')).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'nats.conf')).mode & 0o777, 0o600);
    execFileSync(findNatsServer(), ['-c', join(dir, 'nats.conf'), '-t'], { stdio: 'pipe' });
    assert.equal(writeNatsConfigDir(o), 'kept');
    assert.equal(readFileSync(join(dir, 'users', 'cli'), 'utf8'), first);
    assert.equal(writeNatsConfigDir({ ...o, rotate: true }), 'written');
    assert.notEqual(readFileSync(join(dir, 'users', 'cli'), 'utf8'), first);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('k8s/nats/auth-values.yaml is the generator output for the base node (regenerate: splitlet nats-config --helm-values k8s/nats/auth-values.yaml --node-name splitlet-node-1)', () => {
  const kustomization = readFileSync(join(repoRoot, 'k8s', 'base', 'kustomization.yaml'), 'utf8');
  const node = /NODE_NAME=(\S+)/.exec(kustomization)?.[1];
  assert.ok(node);
  assert.equal(readFileSync(join(repoRoot, 'k8s', 'nats', 'auth-values.yaml'), 'utf8'), renderHelmAuthValues(node));
  assert.doesNotMatch(readFileSync(join(repoRoot, 'k8s', 'nats', 'auth-values.yaml'), 'utf8'), /password: "/, 'no password in the file');
});

test('splitlet nats-config --partitions: the pod-workers may take over exactly that many partition durables of their node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nats-config-partitions-'));
  try {
    writeNatsConfigDir({
      dir,
      node: 'compose-node',
      partitions: 4,
      listen: '0.0.0.0:4222',
      storeDir: '/data',
      monitorPort: undefined,
      serverName: undefined,
      ownerUid: undefined,
      rotate: false,
    });
    const durables = (text: string): string[] => [...text.matchAll(/\$JS\.API\.CONSUMER\.DELETE\.SL_WORK\.([^"\s,\]]+)/g)].map((m) => m[1]!).sort();
    const conf = readFileSync(join(dir, 'nats.conf'), 'utf8');
    execFileSync(findNatsServer(), ['-c', join(dir, 'nats.conf'), '-t'], { stdio: 'pipe' });
    assert.deepEqual(durables(conf), [0, 1, 2, 3].map((p) => Consumers.podWorkerPartition('compose-node', p)).sort());
    const helm = renderHelmAuthValues('compose-node', 4);
    assert.deepEqual(durables(helm), durables(conf));
    assert.ok(durables(renderHelmAuthValues('compose-node')).length > 4, 'the default partition count is larger');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
