/**
 * The embedded API server's minimal scheduler, in its real process on a real nats-server: pods
 * without spec.nodeName are bound to a Ready node whose allocatable fits them (counting what is
 * already bound there), else stay Pending with a FailedScheduling event naming the resource.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '@splitlet/testkit';
import { startApiServer, type ApiServerUnderTest } from './apiserver/harness.ts';

const pod = (name: string, cpu: string): unknown => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36', resources: { requests: { cpu } } }] },
});

describe('scheduler in the embedded API server', { timeout: 300_000 }, () => {
  let api: ApiServerUnderTest;
  before(async () => {
    api = await startApiServer();
  });
  after(async () => {
    await api?.stop();
  });

  const nodeOf = async (name: string): Promise<string | undefined> => (await api.request('GET', `/api/v1/namespaces/default/pods/${name}`)).body?.spec?.nodeName;
  const events = async (name: string): Promise<string[]> =>
    ((await api.request('GET', `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D${name}`)).body?.items ?? []).map(
      (e: { reason: string; message: string }) => `${e.reason}: ${e.message}`,
    );

  test('fits by allocatable cpu; FailedScheduling names the resource; bound pods count', async () => {
    assert.equal((await api.request('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-b' } })).status, 201);
    const status = {
      status: {
        allocatable: { cpu: '1', memory: '1Gi', pods: '10' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
      },
    };
    const patched = await api.request('PATCH', '/api/v1/nodes/node-b/status', status, { 'content-type': 'application/merge-patch+json' });
    assert.equal(patched.status, 200, patched.text);

    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('big', '2'))).status, 201);
    await eventually(async () => (await events('big')).includes('FailedScheduling: 0/1 nodes are available: 1 Insufficient cpu.'), { timeoutMs: 30_000 });
    assert.equal(await nodeOf('big'), undefined);

    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('small', '500m'))).status, 201);
    await eventually(async () => (await nodeOf('small')) === 'node-b', { timeoutMs: 30_000 });
    assert.ok((await events('small')).includes('Scheduled: Successfully assigned default/small to node-b'));

    assert.equal((await api.request('POST', '/api/v1/namespaces/default/pods', pod('second', '600m'))).status, 201);
    await eventually(async () => (await events('second')).some((e) => e.includes('Insufficient cpu')), { timeoutMs: 30_000 });
    assert.equal(await nodeOf('second'), undefined, '500m of 1 cpu is taken');
  });
});
