import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, type Env } from '@splitlet/service';
import { configSchema } from '../src/config.js';

const readConfig = (env: Env, runningAsRoot: boolean) => loadConfig(configSchema(runningAsRoot), env);

const base = { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'node-a' };

describe('volume-manager config', () => {
  it('requires ROOT_DIR', () => {
    assert.throws(() => readConfig(base, false), /ROOT_DIR: is required but not set/);
  });
  it('ALLOW_TMPFS defaults to running as root', () => {
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet' }, true).ALLOW_TMPFS, true);
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet' }, false).ALLOW_TMPFS, false);
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet', ALLOW_TMPFS: 'false' }, true).ALLOW_TMPFS, false);
    assert.equal(readConfig({ ...base, ROOT_DIR: '/var/lib/kubelet', ALLOW_TMPFS: 'true' }, false).ALLOW_TMPFS, true);
  });
  it('makes ROOT_DIR absolute', () => {
    assert.ok(readConfig({ ...base, ROOT_DIR: 'rel/dir' }, false).ROOT_DIR.startsWith('/'));
  });
});
