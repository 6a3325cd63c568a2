/**
 * kubectl (the real v1.32 client) and client-node, unmodified, against the embedded API server:
 * namespaces, apply (create, then a 3-way patch), get with the server's columns, get -w, create
 * configmap/secret (protobuf bodies), label, patch, describe, delete, validation errors (also of
 * pods/status), pods/log without a node; a
 * client-node informer through add, update, delete and a 410 relist.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { eventually } from '@splitlet/testkit';
import { ObjectStore, TOMBSTONE_TTL_MS } from '../../services/apiserver/src/storage/object-store.ts';
import { startApiServer, type ApiServerUnderTest } from './apiserver/harness.ts';
import { KUBECTL, kubectlSkipReason } from './harness.ts';

const run = promisify(execFile);

const skip = await kubectlSkipReason();
if (skip !== undefined) process.stdout.write(`# skipping kubectl tests: ${skip}\n`);

describe('kubectl against the embedded API server', { skip, timeout: 300_000 }, () => {
  let api: ApiServerUnderTest;
  let k: (...args: string[]) => Promise<{ code: number; out: string; err: string }>;
  before(async () => {
    api = await startApiServer();
    k = async (...args) => {
      try {
        const r = await run(KUBECTL, ['--kubeconfig', api.kubeconfig, ...args], { timeout: 60_000 });
        return { code: 0, out: r.stdout, err: r.stderr };
      } catch (e) {
        const x = e as { code?: number; stdout?: string; stderr?: string };
        return { code: typeof x.code === 'number' ? x.code : 1, out: x.stdout ?? '', err: x.stderr ?? '' };
      }
    };
  });
  after(async () => {
    await api?.stop();
  });

  const manifest = (image: string): string =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  containers:\n  - {name: app, image: ${image}, command: ["sleep", "3600"]}\n`;

  test('get ns lists the system namespaces with the server columns', async () => {
    const r = await k('get', 'ns');
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^NAME\s+STATUS\s+AGE$/);
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2).join(' ')),
      ['default Active', 'kube-node-lease Active', 'kube-public Active', 'kube-system Active'],
    );
  });

  test('apply creates, a second apply patches; get prints READY STATUS RESTARTS AGE', async () => {
    const file = join(api.dir.path, 'web.yaml');
    await writeFile(file, manifest('busybox:1.36'));
    assert.deepEqual(await k('apply', '-f', file), { code: 0, out: 'pod/web created\n', err: '' });
    const got = await k('get', 'pods');
    assert.match(got.out, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0\/1\s+Pending\s+0\s+\d+s\n$/);
    await writeFile(file, manifest('busybox:1.37'));
    assert.deepEqual(await k('apply', '-f', file), { code: 0, out: 'pod/web configured\n', err: '' });
    const image = await k('get', 'pod', 'web', '-o', 'jsonpath={.spec.containers[0].image} {.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}');
    assert.match(image.out, /^busybox:1\.37 \{"apiVersion":"v1","kind":"Pod"/);
    const wide = await k('get', 'pods', '-o', 'wide');
    assert.match(wide.out.split('\n')[0] ?? '', /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/);
  });

  test('create configmap and secret (protobuf bodies), label, patch, describe', async () => {
    assert.equal((await k('create', 'configmap', 'cfg', '--from-literal=greeting=hello', '--from-literal=n=1')).out, 'configmap/cfg created\n');
    assert.equal((await k('get', 'configmap', 'cfg', '-o', 'jsonpath={.data.greeting}')).out, 'hello');
    assert.equal((await k('create', 'secret', 'generic', 'creds', '--from-literal=password=s3cret')).out, 'secret/creds created\n');
    assert.equal((await k('get', 'secret', 'creds', '-o', 'jsonpath={.data.password}')).out, Buffer.from('s3cret').toString('base64'));
    assert.match((await k('get', 'secrets')).out, /^NAME\s+TYPE\s+DATA\s+AGE\ncreds\s+Opaque\s+1\s+\d+s\n$/);
    assert.equal((await k('label', 'pod', 'web', 'tier=frontend')).out, 'pod/web labeled\n');
    assert.equal((await k('get', 'pods', '-l', 'tier=frontend', '-o', 'name')).out, 'pod/web\n');
    assert.equal((await k('patch', 'pod', 'web', '-p', '{"metadata":{"annotations":{"note":"x"}}}')).out, 'pod/web patched\n');
    const d = await k('describe', 'pod', 'web');
    assert.equal(d.code, 0, d.err);
    assert.match(d.out, /^Name:\s+web\nNamespace:\s+default\n/);
    assert.match(d.out, /Labels:\s+app=web\n\s+tier=frontend\n/);
    assert.match(d.out, /Image:\s+busybox:1\.37\n/);
  });

  test('invalid objects are refused with the field path; explain fails clearly', async () => {
    const file = join(api.dir.path, 'bad.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec:\n  containers: [{name: c, image: busybox}]\n');
    const r = await k('apply', '-f', file);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /The Pod "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name"/);
    const ex = await k('explain', 'pods');
    assert.notEqual(ex.code, 0);
    assert.match(ex.err, /not found in OpenAPI schema/);
  });

  test('pods/status: validation as the API server (terminal phase, IPs); pods/log of a pod without a node is empty', async () => {
    assert.equal((await k('patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Failed"}}')).code, 0);
    const back = await k('patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Pending"}}');
    assert.equal(back.code, 1);
    assert.equal(back.err, 'The Pod "web" is invalid: status.phase: Forbidden: may not be changed from terminal phase "Failed" to "Pending"\n');
    const ips = await k('patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', '{"status":{"podIP":"10.0.0.300","podIPs":[{"ip":"10.0.0.300"}]}}');
    assert.match(ips.err, /status\.podIP: Invalid value: "10\.0\.0\.300": must be a valid IP address/);
    assert.match(ips.err, /status\.podIPs\[0\]\.ip: Invalid value: "10\.0\.0\.300": must be a valid IP address/);
    const raw = await api.request('PATCH', '/api/v1/namespaces/default/pods/web/status', { status: { phase: 'Running' } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(raw.status, 422);
    assert.deepEqual(raw.body.details.causes, [
      { reason: 'FieldValueForbidden', message: 'Forbidden: may not be changed from terminal phase "Failed" to "Running"', field: 'status.phase' },
    ]);
    // The status written last (Failed) stays; qosClass, set at create, is kept by a status without it.
    assert.equal((await k('get', 'pod', 'web', '-o', 'jsonpath={.status.phase} {.status.qosClass}')).out, 'Failed BestEffort');
    assert.deepEqual(await k('logs', 'web'), { code: 0, out: '', err: '' });
    assert.equal((await api.request('GET', '/api/v1/namespaces/default/pods/web/log')).status, 204);
    assert.match((await api.request('GET', '/api/v1/namespaces/default/pods/web/log?container=nope')).body.message, /^container nope is not valid for pod web$/);
    // Back to a Pending pod for the watch test (a new one: the phase cannot go back).
    assert.equal((await k('delete', 'pod', 'web')).code, 0);
    const file = join(api.dir.path, 'web.yaml');
    await writeFile(file, manifest('busybox:1.37'));
    assert.equal((await k('apply', '-f', file)).code, 0);
  });

  test('get pods -w sees a new pod; delete waits for it to go', async () => {
    const watcher = spawn(KUBECTL, ['--kubeconfig', api.kubeconfig, 'get', 'pods', '-w'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = '';
    watcher.stdout.on('data', (c: Buffer) => (seen += c.toString()));
    try {
      // The list first: its header and the current row, then the changes.
      await eventually(() => (assert.match(seen, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0\/1\s+Pending\s+0\s+\d+s\n/, seen), true), { timeoutMs: 30_000 });
      const file = join(api.dir.path, 'other.yaml');
      await writeFile(file, manifest('busybox:1.36').replace('name: web', 'name: other'));
      assert.equal((await k('apply', '-f', file)).code, 0);
      await eventually(() => (assert.match(seen, /^other\s+0\/1\s+Pending\s+0\s+\d+s$/m), true), { timeoutMs: 30_000 });
    } finally {
      watcher.kill('SIGKILL');
    }
    assert.deepEqual(await k('delete', 'pod', 'other', 'web'), { code: 0, out: 'pod "other" deleted\npod "web" deleted\n', err: '' });
    const none = await k('get', 'pods');
    assert.equal(none.out, '');
    assert.equal(none.err, 'No resources found in default namespace.\n');
  });
});

describe('client-node informer against the embedded API server', { timeout: 300_000 }, () => {
  let api: ApiServerUnderTest;
  before(async () => {
    api = await startApiServer('debug'); // its watches' starts and ends are in a failure's message
  });
  after(async () => {
    await api?.stop();
  });

  test('add, update, delete; then a kill -9 of the server and a compaction of what it missed: the informer converges by relisting', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }));
    // Its latest resourceVersion, for the history below, is only on the ListWatch behind the informer.
    assert.ok(informer instanceof k8s.ListWatch, 'makeInformer returns a ListWatch');
    const log: string[] = [];
    informer.on('add', (o) => log.push(`add ${o.metadata?.name}`));
    informer.on('update', (o) => log.push(`update ${o.metadata?.name} ${o.data?.['v'] ?? ''}`));
    informer.on('delete', (o) => log.push(`delete ${o.metadata?.name}`));
    // The informer's own history (connects, errors, restarts), for a failure's message.
    const t0 = Date.now();
    const history: string[] = [];
    const note = (what: string): void => void history.push(`${Date.now() - t0} ms ${what}`);
    informer.on('connect', () => note(`connect (resourceVersion ${informer.latestResourceVersion() || 'none'})`));
    informer.on('error', (e: unknown) => note(`error ${e instanceof Error ? e.message : String(e)}`));
    let stopped = false;
    // ListWatch stops on a transport error; start it again as controllers do, also when that start
    // fails (the server still down): otherwise the informer stays stopped.
    const restart = (): void => {
      setTimeout(() => {
        if (stopped) return;
        note('start');
        informer.start().catch(restart);
      }, 500);
    };
    informer.on('error', restart);
    await informer.start();
    try {
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'a' }, data: { v: '1' } } });
      await core.patchNamespacedConfigMap({ namespace: 'default', name: 'a', body: { data: { v: '2' } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'b' } } });
      await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'b' });
      await eventually(() => (assert.deepEqual(log, ['add a', 'update a 2', 'add b', 'delete b']), true), { timeoutMs: 30_000 }).catch((e: unknown) => {
        throw new Error(`informer saw ${JSON.stringify(log)}`, { cause: e });
      });

      // Changes the informer misses while its server is down, then purge what it would need to resume.
      note('killing the server');
      await api.restart(true);
      note('the server is back');
      await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'a' });
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c' } } });
      const nc2 = await connect({ servers: api.nats.url });
      try {
        const store = await ObjectStore.open(nc2, await jetstreamManager(nc2), 'sl_api');
        assert.ok((await store.compact(Date.now() + TOMBSTONE_TTL_MS + 1000)) >= 1);
      } finally {
        await nc2.close();
      }
      note('deleted a, created c, compacted');
      await eventually(
        () => {
          const names = informer
            .list('default')
            .map((c) => c.metadata?.name)
            .sort();
          assert.deepEqual(names, ['c']);
          return true;
        },
        { timeoutMs: 60_000 },
      ).catch((e: unknown) => {
        throw new Error(`informer events ${JSON.stringify(log)}; its history:\n${history.join('\n')}\nthe server's last lines:\n${api.proc.tail(40)}`, { cause: e });
      });
    } finally {
      stopped = true;
      await informer.stop();
    }
  });
});
