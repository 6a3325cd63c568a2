import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, type Env } from '@splitlet/service';
import { ConfigSchema } from '../src/config.js';

const readConfig = (env: Env) => loadConfig(ConfigSchema, env);

const base = { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'node-a' };

describe('config-source config', () => {
  it('needs at least one source', () => {
    assert.throws(
      () => readConfig({ ...base, API_SOURCE: 'false' }),
      (e: unknown) => {
        const err = e as { code: string; message: string };
        assert.equal(err.code, 'InvalidConfig');
        assert.match(err.message, /no pod source configured: set MANIFEST_DIR, MANIFEST_URL or KUBECONFIG, or leave API_SOURCE on/);
        return true;
      },
    );
  });

  it('runs the api source by default (pods over the bus), and only it when no manifest source is set', () => {
    assert.equal(readConfig(base).API_SOURCE, true);
    assert.equal(readConfig({ ...base, MANIFEST_DIR: '/m', API_SOURCE: 'false' }).API_SOURCE, false);
  });

  it('defaults the periods to 20 s and parses the header', () => {
    const c = readConfig({ ...base, MANIFEST_DIR: '/etc/kubernetes/manifests/', MANIFEST_URL: 'http://x/y', MANIFEST_URL_HEADER: 'Authorization: Bearer abc' });
    assert.equal(c.MANIFEST_DIR, '/etc/kubernetes/manifests');
    assert.equal(c.MANIFEST_URL, 'http://x/y');
    assert.deepEqual(c.MANIFEST_URL_HEADER, { name: 'Authorization', value: 'Bearer abc' });
    assert.equal(c.FILE_CHECK_FREQUENCY_MS, 20_000);
    assert.equal(c.HTTP_CHECK_FREQUENCY_MS, 20_000);
  });

  it('rejects a bad header, URL or node name without echoing values', () => {
    assert.throws(
      () => readConfig({ ...base, MANIFEST_URL: 'http://x/', MANIFEST_URL_HEADER: 'no colon secret' }),
      (e: unknown) => {
        const msg = (e as Error).message;
        assert.match(msg, /MANIFEST_URL_HEADER/);
        assert.ok(!msg.includes('secret'));
        return true;
      },
    );
    assert.throws(() => readConfig({ ...base, MANIFEST_URL: 'ftp://x/' }), /MANIFEST_URL/);
    assert.throws(() => readConfig({ ...base, NODE_NAME: 'Node_A', MANIFEST_DIR: '/m' }), /NODE_NAME/);
  });
});
