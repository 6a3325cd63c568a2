import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '@splitlet/service';
import { StatusManagerEnv } from '../src/config.js';

const base = { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'node-a' };

describe('status-manager config', () => {
  it("defaults the API rate limits to the kubelet's: kubeAPIQPS 50 / burst 100, eventRecordQPS 50 / burst 100", () => {
    const c = loadConfig(StatusManagerEnv, base);
    assert.deepEqual([c.KUBE_API_QPS, c.KUBE_API_BURST, c.EVENT_RECORD_QPS, c.EVENT_BURST], [50, 100, 50, 100]);
    assert.equal(loadConfig(StatusManagerEnv, { ...base, EVENT_RECORD_QPS: '0' }).EVENT_RECORD_QPS, 0, 'events without a limit');
  });

  it('refuses a limit that is not a whole number, or no limit where one is needed, naming the variable', () => {
    for (const [name, value] of [
      ['KUBE_API_QPS', '0'],
      ['KUBE_API_QPS', '2.5'],
      ['EVENT_RECORD_QPS', '-1'],
      ['EVENT_RECORD_QPS', '0.01'],
      ['EVENT_BURST', '0'],
    ] as const) {
      assert.throws(
        () => loadConfig(StatusManagerEnv, { ...base, [name]: value }),
        (e: unknown) => {
          assert.match((e as Error).message, new RegExp(name));
          return true;
        },
        `${name}=${value}`,
      );
    }
  });
});
