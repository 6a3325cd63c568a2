/**
 * @splitlet/kube-client's object caches against the real embedded API server process (real HTTPS,
 * client-node's KubeConfig and Watch): a get lists one object by name, updates and deletions arrive
 * through the watch and call the change listeners, a missing object is NotFound with the API text,
 * and after the API server is killed (-9) and restarted the reflector lists and watches again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { openNodeObjects, secretBytes, type NodeObjects, type ObjectRef } from '@splitlet/kube-client';
import { eventually } from '@splitlet/testkit';
import { startApiServer, type ApiServerUnderTest } from './apiserver/harness.ts';

const quiet = { info: () => undefined, warn: () => undefined };

describe('kube-client object caches against the embedded API server', { timeout: 300_000 }, () => {
  let api: ApiServerUnderTest;
  let objects: NodeObjects;
  const changes: string[] = [];

  before(async () => {
    api = await startApiServer();
    objects = openNodeObjects(api.kubeconfig, { logger: quiet, initialBackoffMs: 200, maxBackoffMs: 1000, syncTimeoutMs: 30_000 });
    objects.onChange((r: ObjectRef) => changes.push(`${r.kind}:${r.namespace}/${r.name}`));
  });
  after(async () => {
    await objects?.close();
    await api?.stop();
  });

  const putConfigMap = async (name: string, data: Record<string, string>): Promise<void> => {
    const cur = await api.request('GET', `/api/v1/namespaces/default/configmaps/${name}`);
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data };
    const r =
      cur.status === 404
        ? await api.request('POST', '/api/v1/namespaces/default/configmaps', body)
        : await api.request('PUT', `/api/v1/namespaces/default/configmaps/${name}`, {
            ...body,
            metadata: { ...body.metadata, resourceVersion: (cur.body as IConfigMap).metadata?.resourceVersion },
          });
    assert.ok(r.status === 200 || r.status === 201, r.text);
  };

  test('get, watched update, deletion, NotFound texts', async () => {
    await putConfigMap('app', { greeting: 'hello' });
    assert.deepEqual((await objects.configMaps.get('default', 'app')).data, { greeting: 'hello' });
    await putConfigMap('app', { greeting: 'bonjour' });
    await eventually(() => changes.includes('configmap:default/app'), { timeoutMs: 30_000 });
    assert.deepEqual((await objects.configMaps.get('default', 'app')).data, { greeting: 'bonjour' });
    await assert.rejects(objects.configMaps.get('default', 'absent'), { message: 'configmap "absent" not found' });

    const created = await api.request('POST', '/api/v1/namespaces/default/secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      type: 'Opaque',
      data: { password: Buffer.from('pw').toString('base64') },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(
      secretBytes(await objects.secrets.get('default', 'creds'))
        .get('password')
        ?.toString(),
      'pw',
    );
    await assert.rejects(objects.secrets.get('default', 'nope'), { message: 'secret "nope" not found' });

    assert.equal((await api.request('DELETE', '/api/v1/namespaces/default/configmaps/app')).status, 200);
    await eventually(
      async () =>
        objects.configMaps.get('default', 'app').then(
          () => false,
          (e: unknown) => (e as Error).message === 'configmap "app" not found',
        ),
      { timeoutMs: 30_000 },
    );
  });

  test('after the API server is killed and restarted, the reflector lists and watches again', async () => {
    await putConfigMap('survivor', { v: '1' });
    assert.deepEqual((await objects.configMaps.get('default', 'survivor')).data, { v: '1' });
    await api.restart(true);
    await putConfigMap('survivor', { v: '2' });
    await eventually(async () => (await objects.configMaps.get('default', 'survivor')).data?.['v'] === '2', { timeoutMs: 60_000 });
  });
});
