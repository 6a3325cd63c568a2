import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readConfig } from '../src/config.js';

const base = { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'node-a' };

describe('volume-manager config', () => {
  it('requires ROOT_DIR', () => {
    assert.throws(() => readConfig(base, false), /ROOT_DIR: is required but not set/);
  });
  it('ALLOW_TMPFS defaults to running as root', () => {
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet' }, true).allowTmpfs, true);
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet' }, false).allowTmpfs, false);
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet', ALLOW_TMPFS: 'false' }, true).allowTmpfs, false);
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet', ALLOW_TMPFS: 'true' }, false).allowTmpfs, true);
  });
  it('makes ROOT_DIR absolute', () => {
    assert.ok(readConfig({ ...base, ROOT_DIR: 'rel/dir' }, false).rootDir.startsWith('/'));
  });
});
