/**
 * The embedded API server's semantics, as a table a real kube-apiserver would pass too: auth,
 * discovery, create with defaulting and generateName, validation as 422 with the field path,
 * optimistic concurrency (409), label and field selectors, pagination, watch from a revision,
 * 410 Gone after compaction, graceful deletion and finalizers, patches, binding, status
 * subresource, Table output, and objects surviving a kill -9 of the server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request as httpsRequest } from 'node:https';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { ObjectStore, TOMBSTONE_TTL_MS } from '../../services/apiserver/src/storage/object-store.ts';
import { startApiServer, type ApiServerUnderTest } from './apiserver/harness.ts';

const pod = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: name.split('-')[0] ?? name } },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
  ...extra,
});

/** Reads watch events from `path` until `until` says stop or the deadline passes. */
async function watchEvents(api: ApiServerUnderTest, path: string, until: (events: any[]) => boolean, timeoutMs = 30_000): Promise<any[]> {
  const ca = await readFile(join(api.dir.path, 'pki', 'ca.crt'), 'utf8');
  return new Promise((resolve, reject) => {
    const events: any[] = [];
    let buf = '';
    const req = httpsRequest(api.url + path, { ca, headers: { authorization: `Bearer ${api.token}` } }, (res) => {
      res.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          events.push(JSON.parse(buf.slice(0, i)));
          buf = buf.slice(i + 1);
        }
        if (until(events)) {
          clearTimeout(timer);
          req.destroy();
          resolve(events);
        }
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve(events);
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`watch ${path}: condition not met after ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name]))}`));
    }, timeoutMs);
    req.on('error', (e) => {
      if (!events.length || !until(events)) reject(e);
    });
    req.end();
  });
}

describe('embedded API server: conformance table', { timeout: 300_000 }, () => {
  let api: ApiServerUnderTest;
  before(async () => {
    api = await startApiServer();
  });
  after(async () => {
    await api?.stop();
  });

  test('no anonymous access; discovery answers', async () => {
    const anon = await new Promise<number>((resolve, reject) => {
      readFile(join(api.dir.path, 'pki', 'ca.crt'), 'utf8').then((ca) => {
        const r = httpsRequest(api.url + '/api/v1/pods', { ca }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        r.on('error', reject);
        r.end();
      }, reject);
    });
    assert.equal(anon, 401);
    assert.equal((await api.request('GET', '/version')).body.major, '1');
    assert.deepEqual((await api.request('GET', '/api')).body.versions, ['v1']);
    const core = (await api.request('GET', '/api/v1')).body;
    assert.ok(core.resources.some((r: any) => r.name === 'pods' && r.namespaced && r.shortNames.includes('po')));
    assert.ok(core.resources.some((r: any) => r.name === 'pods/status'));
    const groups = (await api.request('GET', '/apis')).body;
    assert.ok(groups.groups.some((g: any) => g.name === 'coordination.k8s.io'));
    const ns = (await api.request('GET', '/api/v1/namespaces')).body.items.map((n: any) => n.metadata.name).sort();
    assert.deepEqual(ns, ['default', 'kube-node-lease', 'kube-public', 'kube-system']);
  });

  test('create: system metadata, API defaulting, generateName, 409 AlreadyExists, 404 namespace', async () => {
    const created = await api.request('POST', '/api/v1/namespaces/default/pods', pod('web-1'));
    assert.equal(created.status, 201, created.text);
    const p = created.body;
    assert.match(p.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(p.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(p.metadata.resourceVersion, /^\d+$/);
    assert.equal(p.spec.restartPolicy, 'Always');
    assert.equal(p.spec.dnsPolicy, 'ClusterFirst');
    assert.equal(p.spec.schedulerName, 'default-scheduler');
    assert.equal(p.spec.terminationGracePeriodSeconds, 30);
    assert.equal(p.spec.containers[0].imagePullPolicy, 'IfNotPresent');
    assert.equal(p.spec.containers[0].terminationMessagePath, '/dev/termination-log');
    assert.equal(p.status.phase, 'Pending');
    assert.equal(p.status.qosClass, 'BestEffort');
    const gen = await api.request('POST', '/api/v1/namespaces/default/pods', { ...pod('x'), metadata: { generateName: 'gen-' } });
    assert.match(gen.body.metadata.name, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const dup = await api.request('POST', '/api/v1/namespaces/default/pods', pod('web-1'));
    assert.equal(dup.status, 409);
    assert.equal(dup.body.reason, 'AlreadyExists');
    assert.equal(dup.body.message, 'pods "web-1" already exists');
    const noNs = await api.request('POST', '/api/v1/namespaces/nope/pods', pod('web-2'));
    assert.equal(noNs.status, 404);
    assert.equal(noNs.body.message, 'namespaces "nope" not found');
  });

  test('validation: 422 Invalid with the field path', async () => {
    const bad = await api.request('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'Bad_Name' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.reason, 'Invalid');
    assert.equal(bad.body.details.causes[0].field, 'metadata.name');
    assert.match(bad.body.message, /^Pod "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
    const noImage = await api.request('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'noimage' },
      spec: { containers: [{ name: 'c' }] },
    });
    assert.equal(noImage.status, 422);
    assert.ok(
      noImage.body.details.causes.some((c: any) => c.field === 'spec.containers[0].image'),
      noImage.text,
    );
    const notJson = await api.request('POST', '/api/v1/namespaces/default/pods', '{"kind":');
    assert.equal(notJson.status, 400);
    assert.match(notJson.body.message, /not valid JSON/);
  });

  test('optimistic concurrency: a stale resourceVersion is 409 Conflict', async () => {
    const cm = (await api.request('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { a: '1' } })).body;
    const first = await api.request('PUT', '/api/v1/namespaces/default/configmaps/cfg', { ...cm, data: { a: '2' } });
    assert.equal(first.status, 200);
    assert.notEqual(first.body.metadata.resourceVersion, cm.metadata.resourceVersion);
    const stale = await api.request('PUT', '/api/v1/namespaces/default/configmaps/cfg', { ...cm, data: { a: '3' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, 'Conflict');
    assert.equal(
      stale.body.message,
      'Operation cannot be fulfilled on configmaps "cfg": the object has been modified; please apply your changes to the latest version and try again',
    );
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/configmaps/cfg')).body.data.a, '2');
  });

  test('label and field selectors, unsupported field label is 400', async () => {
    await api.request('POST', '/api/v1/namespaces/default/pods', pod('db-1', { spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'busybox' }] } }));
    const byLabel = (await api.request('GET', '/api/v1/namespaces/default/pods?labelSelector=app%3Ddb')).body.items.map((p: any) => p.metadata.name);
    assert.deepEqual(byLabel, ['db-1']);
    const notIn = (await api.request('GET', '/api/v1/pods?labelSelector=app%20notin%20(db,gen)')).body.items.map((p: any) => p.metadata.name);
    assert.ok(notIn.includes('web-1') && !notIn.includes('db-1'), JSON.stringify(notIn));
    const onNode = (await api.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a')).body.items.map((p: any) => p.metadata.name);
    assert.deepEqual(onNode, ['db-1']);
    const unscheduled = (await api.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3D%2Cmetadata.namespace%3Ddefault')).body.items.map((p: any) => p.metadata.name);
    assert.ok(unscheduled.includes('web-1') && !unscheduled.includes('db-1'));
    const bad = await api.request('GET', '/api/v1/pods?fieldSelector=spec.bogus%3Dx');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.message, 'field label not supported: spec.bogus');
  });

  test('pagination: limit and continue return every item once', async () => {
    for (let i = 0; i < 5; i++)
      await api.request('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `page-${i}`, labels: { page: 'yes' } } });
    const names: string[] = [];
    let cont = '';
    let pages = 0;
    do {
      const r = (await api.request('GET', `/api/v1/namespaces/default/configmaps?labelSelector=page%3Dyes&limit=2${cont === '' ? '' : `&continue=${cont}`}`)).body;
      names.push(...r.items.map((c: any) => c.metadata.name));
      cont = r.metadata.continue ?? '';
      pages++;
    } while (cont !== '');
    assert.equal(pages, 3);
    assert.deepEqual(names, ['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
  });

  test('watch from a resourceVersion replays what came after it, in order', async () => {
    const list = (await api.request('GET', '/api/v1/namespaces/default/configmaps')).body;
    const rv = list.metadata.resourceVersion;
    await api.request('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w1' } });
    await api.request('PATCH', '/api/v1/namespaces/default/configmaps/w1', { data: { k: 'v' } }, { 'content-type': 'application/merge-patch+json' });
    await api.request('DELETE', '/api/v1/namespaces/default/configmaps/w1');
    const events = await watchEvents(api, `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`, (ev) => ev.some((e) => e.type === 'DELETED'));
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.object.metadata.name}`),
      ['ADDED w1', 'MODIFIED w1', 'DELETED w1'],
    );
    assert.equal(events[1].object.data.k, 'v');
    const revs = events.map((e) => Number(e.object.metadata.resourceVersion));
    assert.deepEqual(
      [...revs].sort((a, b) => a - b),
      revs,
    );
  });

  test('patches: strategic merge by key on pods/status, JSON patch test failure is 422', async () => {
    const p = (await api.request('GET', '/api/v1/namespaces/default/pods/db-1')).body;
    const status = {
      status: {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'False' },
          { type: 'Initialized', status: 'True' },
        ],
      },
    };
    assert.equal((await api.request('PATCH', '/api/v1/namespaces/default/pods/db-1/status', status, { 'content-type': 'application/strategic-merge-patch+json' })).status, 200);
    const patched = await api.request(
      'PATCH',
      '/api/v1/namespaces/default/pods/db-1/status',
      { metadata: { uid: p.metadata.uid }, status: { $setElementOrder: undefined, conditions: [{ type: 'Ready', status: 'True' }] } },
      { 'content-type': 'application/strategic-merge-patch+json' },
    );
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(
      patched.body.status.conditions.map((c: any) => `${c.type}=${c.status}`),
      ['Ready=True', 'Initialized=True'],
    );
    assert.equal(patched.body.status.phase, 'Running');
    const wrongUid = await api.request(
      'PATCH',
      '/api/v1/namespaces/default/pods/db-1/status',
      { metadata: { uid: 'other' }, status: { phase: 'Failed' } },
      { 'content-type': 'application/strategic-merge-patch+json' },
    );
    assert.equal(wrongUid.status, 409);
    assert.match(wrongUid.body.message, /Precondition failed: UID in precondition: other/);
    const specViaStatus = await api.request(
      'PATCH',
      '/api/v1/namespaces/default/pods/db-1/status',
      { spec: { nodeName: 'x' } },
      { 'content-type': 'application/merge-patch+json' },
    );
    assert.equal(specViaStatus.body.spec.nodeName, 'node-a');
    const test422 = await api.request('PATCH', '/api/v1/namespaces/default/pods/db-1', [{ op: 'test', path: '/metadata/name', value: 'nope' }], {
      'content-type': 'application/json-patch+json',
    });
    assert.equal(test422.status, 422);
    const immutable = await api.request('PATCH', '/api/v1/namespaces/default/pods/db-1', { spec: { restartPolicy: 'Never' } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(immutable.status, 422);
    assert.match(immutable.body.message, /^Pod "db-1" is invalid: spec: Forbidden: pod updates may not change fields other than/);
    const image = await api.request(
      'PATCH',
      '/api/v1/namespaces/default/pods/db-1',
      { spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } },
      { 'content-type': 'application/strategic-merge-patch+json' },
    );
    assert.equal(image.status, 200, image.text);
    assert.equal(image.body.spec.containers[0].image, 'busybox:1.37');
    assert.equal(image.body.spec.containers[0].terminationMessagePath, '/dev/termination-log');
    assert.equal(image.body.metadata.generation, 2);
  });

  test('binding assigns a node once; graceful deletion of a scheduled pod; finalizers hold deletion', async () => {
    assert.equal(
      (
        await api.request('POST', '/api/v1/namespaces/default/pods/web-1/binding', {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: 'web-1' },
          target: { kind: 'Node', name: 'node-a' },
        })
      ).status,
      201,
    );
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/pods/web-1')).body.spec.nodeName, 'node-a');
    const again = await api.request('POST', '/api/v1/namespaces/default/pods/web-1/binding', { target: { kind: 'Node', name: 'node-b' } });
    assert.equal(again.status, 409);
    const del = await api.request('DELETE', '/api/v1/namespaces/default/pods/web-1', { gracePeriodSeconds: 20 });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.metadata.deletionGracePeriodSeconds, 20);
    assert.ok(del.body.metadata.deletionTimestamp);
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/pods/web-1')).status, 200);
    const now = await api.request('DELETE', '/api/v1/namespaces/default/pods/web-1', { gracePeriodSeconds: 0 });
    assert.equal(now.status, 200);
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/pods/web-1')).status, 404);

    await api.request('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held', finalizers: ['example.com/hold'] } });
    const marked = await api.request('DELETE', '/api/v1/namespaces/default/configmaps/held');
    assert.ok(marked.body.metadata.deletionTimestamp);
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/configmaps/held')).status, 200);
    await api.request('PATCH', '/api/v1/namespaces/default/configmaps/held', { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/configmaps/held')).status, 404);
  });

  test('Table output for kubectl get', async () => {
    const t = (await api.request('GET', '/api/v1/namespaces/default/pods', undefined, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' })).body;
    assert.equal(t.kind, 'Table');
    assert.deepEqual(
      t.columnDefinitions.filter((c: any) => c.priority === 0).map((c: any) => c.name),
      ['Name', 'Ready', 'Status', 'Restarts', 'Age'],
    );
    const row = t.rows.find((r: any) => r.cells[0] === 'db-1');
    assert.deepEqual(row.cells.slice(0, 4), ['db-1', '0/1', 'Running', '0']);
    assert.equal(row.object.metadata.name, 'db-1');
  });

  test('watch from a compacted revision ends with 410 Expired; the informer way back is a relist', async () => {
    await api.request('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'old' } });
    const rv = (await api.request('GET', '/api/v1/namespaces/default/configmaps')).body.metadata.resourceVersion;
    await api.request('DELETE', '/api/v1/namespaces/default/configmaps/old');
    // Purge the tombstones as the server's compaction does once they are older than its TTL.
    const nc = await connect({ servers: api.nats.url });
    try {
      const store = await ObjectStore.open(nc, await jetstreamManager(nc), 'sl_api');
      assert.ok((await store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000)) >= 1);
    } finally {
      await nc.close();
    }
    const events = await watchEvents(api, `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`, (ev) => ev.length > 0);
    assert.equal(events[0].type, 'ERROR');
    assert.equal(events[0].object.code, 410);
    assert.equal(events[0].object.reason, 'Expired');
    assert.match(events[0].object.message, /^too old resource version: \d+ \(\d+\)$/);
    const fresh = (await api.request('GET', '/api/v1/namespaces/default/configmaps')).body;
    const resumed = await watchEvents(api, `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${fresh.metadata.resourceVersion}&timeoutSeconds=2`, () => false);
    assert.deepEqual(resumed, []);
  });

  test('objects and revisions survive a kill -9 of the server', async () => {
    const before = (await api.request('GET', '/api/v1/namespaces/default/configmaps/cfg')).body;
    await api.restart(true);
    const after = (await api.request('GET', '/api/v1/namespaces/default/configmaps/cfg')).body;
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.equal(after.metadata.uid, before.metadata.uid);
    assert.equal(after.data.a, '2');
  });
});
