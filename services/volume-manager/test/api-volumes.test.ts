/**
 * configMap, secret and projected volumes: the projection (keys, items, paths, modes, optional
 * references, binaryData, projected merge with downwardAPI), the kubelet's errors, and updates of
 * the objects reaching the volume through the `..data` swap — against a real filesystem, with a
 * fake object reader in place of the API server.
 */
import assert from 'node:assert/strict';
import { lstat, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { BoundPod, Volume } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { eventually, makeTempDir, type TempDir } from '@splitlet/testkit';
import type { ApiObjectReader, ApiObjectRef } from '../src/ports.js';
import { makePayload, volumeObjectRefs } from '../src/volumes/api-volumes.js';
import { podPaths } from '../src/volumes/pod-dirs.js';
import { VolumeManager } from '../src/volumes/volume-manager.js';
import { EventLog, FakeMounter, MemoryStore, memoryLogger } from './fakes.js';

const fence = { partition: 1, epoch: 1 };

class NotFound extends Error {}

/** The API server's objects, by `kind/ns/name`; values as bytes. */
class FakeObjects implements ApiObjectReader {
  readonly objects = new Map<string, Map<string, Buffer>>();
  readonly held = new Map<string, ApiObjectRef[]>();
  readonly #listeners: Array<(ref: ApiObjectRef) => void> = [];
  set(kind: ApiObjectRef['kind'], namespace: string, name: string, values: Record<string, string | Buffer> | undefined): void {
    const key = `${kind}/${namespace}/${name}`;
    if (values === undefined) this.objects.delete(key);
    else this.objects.set(key, new Map(Object.entries(values).map(([k, v]) => [k, Buffer.isBuffer(v) ? v : Buffer.from(v)])));
    for (const l of this.#listeners) l({ kind, namespace, name });
  }
  async read(ref: ApiObjectRef): Promise<Map<string, Buffer>> {
    const o = this.objects.get(`${ref.kind}/${ref.namespace}/${ref.name}`);
    if (o === undefined) throw new NotFound(`${ref.kind} ${JSON.stringify(ref.name)} not found`);
    return new Map(o);
  }
  isNotFound(e: unknown): boolean {
    return e instanceof NotFound;
  }
  hold(holder: string, refs: readonly ApiObjectRef[]): void {
    if (refs.length === 0) this.held.delete(holder);
    else this.held.set(holder, [...refs]);
  }
  holders(ref: ApiObjectRef): string[] {
    return [...this.held].filter(([, refs]) => refs.some((r) => r.kind === ref.kind && r.namespace === ref.namespace && r.name === ref.name)).map(([h]) => h);
  }
  onChange(listener: (ref: ApiObjectRef) => void): void {
    this.#listeners.push(listener);
  }
}

function podWith(uid: string, volumes: Volume[]): BoundPod {
  return aPod({ metadata: { uid, name: `pod-${uid}`, namespace: 'shop', labels: { app: 'web' } }, spec: { volumes } });
}

describe('configMap / secret / projected volumes', () => {
  let tmp: TempDir;
  let objects: FakeObjects;
  let events: EventLog;
  let tracing: TestTracing;
  let mounter: FakeMounter;
  let vm: VolumeManager;

  beforeEach(async () => {
    tmp = await makeTempDir('vm-api-');
    objects = new FakeObjects();
    events = new EventLog();
    tracing = createTestTracing();
    mounter = new FakeMounter();
    vm = new VolumeManager({
      nodeName: 'node-a',
      paths: podPaths(tmp.path),
      mounter,
      store: new MemoryStore(),
      events,
      clock: new FakeClock(1_700_000_000_000),
      logger: memoryLogger().logger,
      tracer: tracing.tracer,
      allowTmpfs: true,
      defaultTmpfsBytes: 1 << 30,
      objects,
    });
  });
  afterEach(async () => {
    await tracing.shutdown();
    await tmp.cleanup();
  });

  const fileMode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

  it('a configMap volume: every key at 0644 (data and binaryData), through ..data symlinks', async () => {
    objects.set('configmap', 'shop', 'cfg', { 'app.conf': 'port=80\nname=web\n', blob: Buffer.from([0, 1, 2, 255]) });
    const reply = await vm.mount(podWith('u1', [{ name: 'conf', configMap: { name: 'cfg' } }]), fence);
    const dir = reply.volumes['conf']?.hostPath ?? '';
    assert.equal(dir, join(tmp.path, 'pods', 'u1', 'volumes', 'kubernetes.io~configmap', 'conf'));
    assert.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'port=80\nname=web\n');
    assert.deepEqual([...(await readFile(join(dir, 'blob')))], [0, 1, 2, 255]);
    assert.equal(await fileMode(join(dir, 'app.conf')), 0o644);
    assert.equal(await readlink(join(dir, 'app.conf')), '..data/app.conf');
    assert.match(await readlink(join(dir, '..data')), /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/);
    assert.equal(mounter.mounts.size, 0, 'a configMap volume is on disk, not tmpfs');
  });

  it('items pick keys into paths with their own mode; defaultMode for the others; a secret volume is a tmpfs', async () => {
    objects.set('secret', 'shop', 'creds', { user: 'admin', password: 's3cr3t' });
    const reply = await vm.mount(
      podWith('u2', [
        {
          name: 'creds',
          secret: {
            secretName: 'creds',
            defaultMode: 0o440,
            items: [
              { key: 'password', path: 'db/pass', mode: 0o400 },
              { key: 'user', path: 'user' },
            ],
          },
        },
      ]),
      fence,
    );
    const dir = reply.volumes['creds']?.hostPath ?? '';
    assert.equal(dir, join(tmp.path, 'pods', 'u2', 'volumes', 'kubernetes.io~secret', 'creds'));
    assert.equal(await readFile(join(dir, 'db', 'pass'), 'utf8'), 's3cr3t');
    assert.equal(await fileMode(join(dir, 'db', 'pass')), 0o400);
    assert.equal(await fileMode(join(dir, 'user')), 0o440);
    assert.equal(await readlink(join(dir, 'db')), '..data/db');
    assert.ok(mounter.mounts.has(dir), 'secret volumes are memory-backed');
  });

  it('secret files are 0644 by default, as the kubelet writes them', async () => {
    objects.set('secret', 'shop', 'creds', { token: 't' });
    const reply = await vm.mount(podWith('u3', [{ name: 's', secret: { secretName: 'creds' } }]), fence);
    assert.equal(await fileMode(join(reply.volumes['s']?.hostPath ?? '', 'token')), 0o644);
  });

  it('a missing object fails the mount with the kubelet FailedMount text and creates nothing; creating it lets the next mount succeed', async () => {
    const pod = podWith('u4', [{ name: 'conf', configMap: { name: 'absent' } }]);
    await assert.rejects(vm.mount(pod, fence), {
      code: 'FailedMount',
      message: 'unmounted volumes=[conf], unattached volumes=[]: MountVolume.SetUp failed for volume "conf" : configmap "absent" not found',
    });
    assert.deepEqual(
      events.events.map((e) => `${e.event.reason} ${e.event.message}`),
      ['FailedMount MountVolume.SetUp failed for volume "conf" : configmap "absent" not found'],
    );
    await assert.rejects(lstat(join(tmp.path, 'pods', 'u4', 'volumes', 'kubernetes.io~configmap', 'conf')), { code: 'ENOENT' });
    objects.set('configmap', 'shop', 'absent', { k: 'v' });
    const reply = await vm.mount(pod, fence);
    assert.equal(await readFile(join(reply.volumes['conf']?.hostPath ?? '', 'k'), 'utf8'), 'v');
  });

  it('a missing item key fails unless optional; an optional missing object is an empty volume', async () => {
    objects.set('configmap', 'shop', 'cfg', { a: '1' });
    await assert.rejects(vm.mount(podWith('u5', [{ name: 'c', configMap: { name: 'cfg', items: [{ key: 'b', path: 'b' }] } }]), fence), {
      message: /MountVolume\.SetUp failed for volume "c" : configmap references non-existent config key: b$/,
    });
    const opt = await vm.mount(
      podWith('u6', [
        {
          name: 'c',
          configMap: {
            name: 'cfg',
            optional: true,
            items: [
              { key: 'b', path: 'b' },
              { key: 'a', path: 'x/a' },
            ],
          },
        },
      ]),
      fence,
    );
    assert.equal(await readFile(join(opt.volumes['c']?.hostPath ?? '', 'x', 'a'), 'utf8'), '1');
    await assert.rejects(lstat(join(opt.volumes['c']?.hostPath ?? '', 'b')), { code: 'ENOENT' });
    const none = await vm.mount(podWith('u7', [{ name: 's', secret: { secretName: 'nope', optional: true } }]), fence);
    const dir = none.volumes['s']?.hostPath ?? '';
    assert.ok((await lstat(join(dir, '..data'))).isSymbolicLink());
    await assert.rejects(vm.mount(podWith('u8', [{ name: 's', secret: { secretName: 'creds', items: [{ key: 'k', path: 'k' }] } }]), fence), {
      message: /secret "creds" not found$/,
    });
  });

  it('a projected volume merges configMap, secret and downwardAPI sources at defaultMode; errors are aggregated', async () => {
    objects.set('configmap', 'shop', 'cfg', { 'app.conf': 'x=1' });
    objects.set('secret', 'shop', 'creds', { password: 'pw' });
    const pod = podWith('u9', [
      {
        name: 'all',
        projected: {
          defaultMode: 0o600,
          sources: [
            { configMap: { name: 'cfg' } },
            { secret: { name: 'creds', items: [{ key: 'password', path: 'secret/password', mode: 0o400 }] } },
            { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          ],
        },
      },
    ]);
    const reply = await vm.mount(pod, fence);
    const dir = reply.volumes['all']?.hostPath ?? '';
    assert.equal(dir, join(tmp.path, 'pods', 'u9', 'volumes', 'kubernetes.io~projected', 'all'));
    assert.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'x=1');
    assert.equal(await fileMode(join(dir, 'app.conf')), 0o600);
    assert.equal(await readFile(join(dir, 'secret', 'password'), 'utf8'), 'pw');
    assert.equal(await fileMode(join(dir, 'secret', 'password')), 0o400);
    assert.equal(await readFile(join(dir, 'labels'), 'utf8'), 'app="web"');

    const bad = podWith('u10', [{ name: 'p', projected: { sources: [{ configMap: { name: 'x' } }, { secret: { name: 'y' } }] } }]);
    await assert.rejects(vm.mount(bad, fence), { message: /MountVolume\.SetUp failed for volume "p" : \[configmap "x" not found, secret "y" not found\]$/ });
  });

  it('an update of a watched object is projected into the mounted volume (new ..data, old one removed); unmount stops holding it', async () => {
    objects.set('configmap', 'shop', 'cfg', { greeting: 'hello' });
    const pod = podWith('u11', [{ name: 'conf', configMap: { name: 'cfg' } }]);
    const dir = (await vm.mount(pod, fence)).volumes['conf']?.hostPath ?? '';
    const before = await readlink(join(dir, '..data'));
    assert.deepEqual(objects.held.get('u11'), [{ kind: 'configmap', namespace: 'shop', name: 'cfg' }]);
    objects.set('configmap', 'shop', 'cfg', { greeting: 'bonjour', extra: 'e' });
    await eventually(async () => (await readFile(join(dir, 'greeting'), 'utf8').catch(() => '')) === 'bonjour', { timeoutMs: 10_000 });
    assert.equal(await readFile(join(dir, 'extra'), 'utf8'), 'e');
    assert.notEqual(await readlink(join(dir, '..data')), before);
    await assert.rejects(lstat(join(dir, before)), { code: 'ENOENT' });
    // A deletion keeps the last content and says why the update failed.
    objects.set('configmap', 'shop', 'cfg', undefined);
    await eventually(() => events.events.some((e) => e.event.message === 'MountVolume.SetUp failed for volume "conf" : configmap "cfg" not found'), { timeoutMs: 10_000 });
    assert.equal(await readFile(join(dir, 'greeting'), 'utf8'), 'bonjour');
    await vm.unmount('u11', true, fence);
    assert.equal(objects.held.has('u11'), false);
  });

  it('a repeated mount projects the current content (the kubelet remount at each sync)', async () => {
    objects.set('secret', 'shop', 's', { k: 'one' });
    const pod = podWith('u12', [{ name: 's', secret: { secretName: 's' } }]);
    const dir = (await vm.mount(pod, fence)).volumes['s']?.hostPath ?? '';
    objects.objects.set('secret/shop/s', new Map([['k', Buffer.from('two')]])); // no change notification
    await vm.mount(pod, fence);
    assert.equal(await readFile(join(dir, 'k'), 'utf8'), 'two');
  });
});

describe('makePayload and volumeObjectRefs', () => {
  it('every key without items; items with path and mode', () => {
    const values = new Map([
      ['a', Buffer.from('1')],
      ['b', Buffer.from('2')],
    ]);
    assert.deepEqual(
      [...makePayload('configmap', undefined, values, 0o644, false)].map(([p, f]) => [p, f.data.toString(), f.mode]),
      [
        ['a', '1', 0o644],
        ['b', '2', 0o644],
      ],
    );
    assert.deepEqual(
      [...makePayload('secret', [{ key: 'b', path: 'x/y', mode: 0o400 }], values, 0o644, false)].map(([p, f]) => [p, f.data.toString(), f.mode]),
      [['x/y', '2', 0o400]],
    );
    assert.throws(() => makePayload('secret', [{ key: 'c', path: 'c' }], values, 0o644, false), { message: 'secret references non-existent secret key: c' });
    assert.equal(makePayload('secret', [{ key: 'c', path: 'c' }], values, 0o644, true).size, 0);
  });

  it('names each referenced object once, projected sources included', () => {
    const pod = podWith('u', [
      { name: 'a', configMap: { name: 'cfg' } },
      { name: 'b', secret: { secretName: 'creds' } },
      { name: 'c', projected: { sources: [{ configMap: { name: 'cfg' } }, { secret: { name: 'other' } }] } },
      { name: 'd', emptyDir: {} },
    ]);
    assert.deepEqual(volumeObjectRefs(pod), [
      { kind: 'configmap', namespace: 'shop', name: 'cfg' },
      { kind: 'secret', namespace: 'shop', name: 'creds' },
      { kind: 'secret', namespace: 'shop', name: 'other' },
    ]);
  });
});
