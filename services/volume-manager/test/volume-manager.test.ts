import assert from 'node:assert/strict';
import { lstat, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SpanStatusCode } from '@opentelemetry/api';
import type { BoundPod, Volume } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import { eventually, makeTempDir, type TempDir } from '@splitlet/testkit';
import { podPaths } from '../src/volumes/pod-dirs.js';
import { VolumeManager, volumeType } from '../src/volumes/volume-manager.js';
import { EventLog, FakeMounter, MemoryStore, MetricsLog, memoryLogger } from './fakes.js';

const fence = { partition: 3, epoch: 7 };

function podWith(uid: string, volumes: Volume[], extra: Partial<BoundPod['spec']> = {}): BoundPod {
  return aPod({ metadata: { uid, name: `pod-${uid}` }, spec: { volumes, ...extra } });
}

describe('VolumeManager', () => {
  let tmp: TempDir;
  let mounter: FakeMounter;
  let store: MemoryStore;
  let events: EventLog;
  let metrics: MetricsLog;
  let tracing: TestTracing;
  let vm: VolumeManager;
  let allowTmpfs = true;

  const make = (): VolumeManager =>
    new VolumeManager({
      nodeName: 'node-a',
      paths: podPaths(tmp.path),
      mounter,
      store,
      events,
      clock: new FakeClock(1_700_000_000_000),
      logger: memoryLogger().logger,
      tracer: tracing.tracer,
      allowTmpfs,
      metrics,
      defaultTmpfsBytes: 1 << 30,
    });

  beforeEach(async () => {
    tmp = await makeTempDir('vm-unit-');
    mounter = new FakeMounter();
    store = new MemoryStore();
    events = new EventLog();
    metrics = new MetricsLog();
    tracing = createTestTracing();
    allowTmpfs = true;
    vm = make();
  });
  afterEach(async () => {
    await tracing.shutdown();
    await tmp.cleanup();
  });

  it('classifies volume sources (no source = emptyDir)', () => {
    assert.equal(volumeType({ name: 'a' }), 'emptyDir');
    assert.equal(volumeType({ name: 'a', emptyDir: {} }), 'emptyDir');
    assert.equal(volumeType({ name: 'a', hostPath: { path: '/x' } }), 'hostPath');
    assert.equal(volumeType({ name: 'a', configMap: { name: 'c' } }), 'configMap');
    assert.equal(volumeType({ name: 'a', nfs: { server: 's' } }), 'nfs');
  });

  it('mounts an emptyDir and a hostPath: dirs, reply, state, spans, metrics', async () => {
    const host = join(tmp.path, 'host-data');
    await mkdir(host);
    const pod = podWith('u1', [
      { name: 'cache', emptyDir: {} },
      { name: 'data', hostPath: { path: host, type: 'Directory' } },
    ]);
    const reply = await vm.mount(pod, fence);
    const podDir = join(tmp.path, 'pods', 'u1');
    const cacheDir = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'cache');
    assert.deepEqual(reply, { type: 'kubelet.volume.MountReply.v1', podDir, volumes: { cache: { hostPath: cacheDir }, data: { hostPath: host } } });
    for (const d of ['volumes', 'plugins', 'containers']) assert.ok((await stat(join(podDir, d))).isDirectory());
    assert.equal((await stat(cacheDir)).mode & 0o777, 0o777);
    const state = store.states.get('u1');
    assert.equal(state?.mounted, true);
    assert.deepEqual(state?.volumes, reply.volumes);
    assert.equal(state?.error, undefined);
    const spans = tracing.spans().filter((s) => s.name.startsWith('volume.mount '));
    assert.deepEqual(spans.map((s) => s.name).sort(), ['volume.mount cache', 'volume.mount data']);
    const data = tracing.spansNamed('volume.mount data')[0];
    assert.equal(data?.attributes['k8s.pod.uid'], 'u1');
    assert.equal(data?.attributes['k8s.volume.name'], 'data');
    assert.equal(data?.attributes['k8s.volume.type'], 'hostPath');
    assert.deepEqual(Object.fromEntries(metrics.totals), { 'kubernetes.io/empty-dir': 1, 'kubernetes.io/host-path': 1 });
    assert.equal(events.events.length, 0);
  });

  it('volume totals follow every mount, failed remount and unmount (counted per change, not recounted)', async () => {
    const host = join(tmp.path, 'host-totals');
    await mkdir(host);
    const totals = (): Record<string, number> => Object.fromEntries(metrics.totals);
    await vm.mount(
      podWith('t1', [
        { name: 'a', emptyDir: {} },
        { name: 'h', hostPath: { path: host, type: 'Directory' } },
      ]),
      fence,
    );
    await vm.mount(
      podWith('t2', [
        { name: 'a', emptyDir: {} },
        { name: 'b', emptyDir: {} },
      ]),
      fence,
    );
    assert.deepEqual(totals(), { 'kubernetes.io/empty-dir': 3, 'kubernetes.io/host-path': 1 });
    // t1 mounted again with a volume that fails: no longer mounted, so none of its volumes count.
    await assert.rejects(
      vm.mount(
        podWith('t1', [
          { name: 'a', emptyDir: {} },
          { name: 'h', hostPath: { path: join(tmp.path, 'missing'), type: 'Directory' } },
        ]),
        fence,
      ),
      { code: 'FailedMount' },
    );
    assert.deepEqual(totals(), { 'kubernetes.io/empty-dir': 2 });
    await vm.unmount('t2', true, fence);
    assert.deepEqual(totals(), {});
    await vm.mount(podWith('t1', [{ name: 'h', hostPath: { path: host, type: 'Directory' } }]), fence);
    assert.deepEqual(totals(), { 'kubernetes.io/host-path': 1 });
  });

  it('is idempotent: a second mount returns the same paths without new work', async () => {
    const pod = podWith('u1', [{ name: 'cache', emptyDir: {} }]);
    const first = await vm.mount(pod, fence);
    await writeFile(join(first.volumes['cache']!.hostPath, 'keep'), 'x');
    tracing.reset();
    const second = await vm.mount(pod, fence);
    assert.deepEqual(second, first);
    assert.equal(tracing.spans().length, 0);
    assert.equal(await readFile(join(first.volumes['cache']!.hostPath, 'keep'), 'utf8'), 'x');
  });

  it('a missing hostPath Directory fails with FailedMount, events and error state', async () => {
    const missing = join(tmp.path, 'nope');
    const pod = podWith('u2', [
      { name: 'cache', emptyDir: {} },
      { name: 'data', hostPath: { path: missing, type: 'Directory' } },
    ]);
    await assert.rejects(vm.mount(pod, fence), (e: unknown) => {
      const err = e as { code: string; retryable: boolean; message: string };
      assert.equal(err.code, 'FailedMount');
      assert.equal(err.retryable, true);
      assert.equal(
        err.message,
        `unmounted volumes=[data], unattached volumes=[]: MountVolume.SetUp failed for volume "data" : hostPath type check failed: ${missing} is not a directory`,
      );
      return true;
    });
    assert.equal(events.events.length, 1);
    const ev = events.events[0]!;
    assert.equal(ev.key, 'u2');
    assert.equal(ev.event.eventType, 'Warning');
    assert.equal(ev.event.reason, 'FailedMount');
    assert.equal(ev.event.message, `MountVolume.SetUp failed for volume "data" : hostPath type check failed: ${missing} is not a directory`);
    assert.deepEqual(ev.event.involvedObject, { kind: 'Pod', name: 'pod-u2', namespace: 'default', uid: 'u2' });
    const state = store.states.get('u2');
    assert.equal(state?.mounted, false);
    assert.ok(state?.error?.startsWith('unmounted volumes='));
    assert.deepEqual(Object.keys(state?.volumes ?? {}), ['cache']);
    const span = tracing.spansNamed('volume.mount data')[0];
    assert.equal(span?.status.code, SpanStatusCode.ERROR);
    assert.match(span?.status.message ?? '', /is not a directory/);
    // Once the directory exists, the retry succeeds.
    await mkdir(missing);
    const reply = await vm.mount(pod, fence);
    assert.equal(reply.volumes['data']?.hostPath, missing);
    assert.equal(store.states.get('u2')?.mounted, true);
  });

  it('standalone mode (no API client): configMap, secret and projected volumes fail as the kubelet without a client; a PVC is unattached', async () => {
    const pod = podWith('u3', [
      { name: 'cfg', configMap: { name: 'c' } },
      { name: 's', secret: { secretName: 'x' } },
      { name: 'p', projected: { sources: [] } },
      { name: 'pvc', persistentVolumeClaim: { claimName: 'claim' } },
    ]);
    const ns = pod.metadata.namespace;
    const want = [
      `MountVolume.SetUp failed for volume "cfg" : couldn't get configMap ${ns}/c, no kubeClient defined`,
      `MountVolume.SetUp failed for volume "s" : couldn't get secret ${ns}/x, no kubeClient defined`,
      'MountVolume.SetUp failed for volume "p" : cannot setup projected volume p because kube client is not configured',
      'MountVolume.SetUp failed for volume "pvc" : persistentVolumeClaim volumes are not supported by this node yet',
    ];
    await assert.rejects(vm.mount(pod, fence), { code: 'FailedMount', message: `unmounted volumes=[cfg p pvc s], unattached volumes=[pvc]: ${want.join('; ')}` });
    assert.deepEqual(
      events.events.map((e) => e.event.message),
      want,
    );
  });

  it('medium Memory mounts a tmpfs sized by sizeLimit and the pod memory limit', async () => {
    const pod = podWith('u4', [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }], {
      containers: [{ name: 'c', image: 'busybox', resources: { limits: { memory: '128Mi' } } }],
    });
    const reply = await vm.mount(pod, fence);
    assert.equal(mounter.mounts.get(reply.volumes['shm']!.hostPath), 64 * 1024 * 1024);
    // Mounted already: not mounted twice, even after a restart of the manager.
    vm = make();
    await vm.mount(pod, fence);
    assert.equal(mounter.mounts.size, 1);
    const pod2 = podWith('u5', [{ name: 'shm', emptyDir: { medium: 'Memory' } }], {
      containers: [{ name: 'c', image: 'busybox', resources: { limits: { memory: '32Mi' } } }],
    });
    const r2 = await vm.mount(pod2, fence);
    assert.equal(mounter.mounts.get(r2.volumes['shm']!.hostPath), 32 * 1024 * 1024);
    const pod3 = podWith('u6', [{ name: 'shm', emptyDir: { medium: 'Memory' } }]);
    const r3 = await vm.mount(pod3, fence);
    assert.equal(mounter.mounts.get(r3.volumes['shm']!.hostPath), 1 << 30);
  });

  it('medium Memory without ALLOW_TMPFS is a FailedMount', async () => {
    allowTmpfs = false;
    vm = make();
    await assert.rejects(vm.mount(podWith('u7', [{ name: 'shm', emptyDir: { medium: 'Memory' } }]), fence), /MountVolume.SetUp failed for volume "shm" : .*not allowed/);
    assert.equal(mounter.mounts.size, 0);
  });

  it('fencing: an older epoch for a partition is FencedOff (not retryable); newer and equal pass', async () => {
    const pod = podWith('u8', [{ name: 'cache', emptyDir: {} }]);
    await vm.mount(pod, { partition: 1, epoch: 10 });
    await vm.mount(pod, { partition: 1, epoch: 10 });
    await vm.mount(pod, { partition: 2, epoch: 1 });
    await assert.rejects(vm.mount(pod, { partition: 1, epoch: 9 }), { code: 'FencedOff', retryable: false });
    await assert.rejects(vm.unmount('u8', true, { partition: 1, epoch: 3 }), { code: 'FencedOff' });
    await vm.unmount('u8', false, { partition: 1, epoch: 11 });
    await assert.rejects(vm.mount(pod, { partition: 1, epoch: 10 }), { code: 'FencedOff' });
  });

  it('unmount tears down (tmpfs unmounted, emptyDir removed, hostPath untouched) and marks unmounted', async () => {
    const host = join(tmp.path, 'host-data');
    await mkdir(host);
    await writeFile(join(host, 'precious'), 'keep');
    const pod = podWith('u9', [
      { name: 'cache', emptyDir: {} },
      { name: 'shm', emptyDir: { medium: 'Memory' } },
      { name: 'data', hostPath: { path: host } },
    ]);
    const r = await vm.mount(pod, fence);
    const reply = await vm.unmount('u9', false, fence);
    assert.deepEqual(reply, { type: 'kubelet.volume.UnmountReply.v1', unmounted: ['cache', 'data', 'shm'] });
    assert.equal(mounter.mounts.size, 0);
    await assert.rejects(lstat(r.volumes['cache']!.hostPath), { code: 'ENOENT' });
    assert.ok((await stat(join(tmp.path, 'pods', 'u9'))).isDirectory());
    assert.equal(await readFile(join(host, 'precious'), 'utf8'), 'keep');
    const st = store.states.get('u9');
    assert.equal(st?.mounted, false);
    assert.deepEqual(st?.volumes, {});
    // removeContent: the pod dir and the state go away; a repeat is a no-op.
    await vm.unmount('u9', true, fence);
    await assert.rejects(lstat(join(tmp.path, 'pods', 'u9')), { code: 'ENOENT' });
    assert.equal(store.states.has('u9'), false);
    await vm.unmount('u9', true, fence);
  });

  it('cleanup removes only orphans: not kept, not mounted, no mount points; never follows symlinks', async () => {
    const outside = join(tmp.path, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'precious'), 'keep');
    const keep = podWith('keep', [{ name: 'c', emptyDir: {} }]);
    const mounted = podWith('mounted', [{ name: 'c', emptyDir: {} }]);
    const orphan = podWith('orphan', [{ name: 'c', emptyDir: {} }]);
    const busy = podWith('busy', [{ name: 'shm', emptyDir: { medium: 'Memory' } }]);
    await vm.mount(keep, fence);
    await vm.mount(mounted, fence);
    await vm.mount(orphan, fence);
    await vm.mount(busy, fence);
    await vm.unmount('orphan', false, fence);
    // busy: unmounted in ASW terms but a mount point is still there (e.g. a stuck tmpfs).
    await vm.unmount('busy', false, fence);
    const busyDir = join(tmp.path, 'pods', 'busy', 'volumes', 'kubernetes.io~empty-dir', 'shm');
    await mkdir(busyDir, { recursive: true });
    await mounter.mountTmpfs(busyDir, 1);
    // A leftover dir from before a restart, with a symlink pointing out of the root.
    await mkdir(join(tmp.path, 'pods', 'stale', 'volumes'), { recursive: true });
    await symlink(outside, join(tmp.path, 'pods', 'stale', 'volumes', 'escape'));
    store.states.set('stale', { type: 'kubelet.volume.PodVolumeState.v1', uid: 'stale', podDir: '', mounted: false, volumes: {}, updatedAt: '' });

    const reply = await vm.cleanup(['keep']);
    assert.deepEqual(reply.removed.sort(), ['orphan', 'stale']);
    assert.ok((await stat(join(tmp.path, 'pods', 'keep'))).isDirectory());
    assert.ok((await stat(join(tmp.path, 'pods', 'mounted'))).isDirectory());
    assert.ok((await stat(join(tmp.path, 'pods', 'busy'))).isDirectory());
    await assert.rejects(lstat(join(tmp.path, 'pods', 'orphan')), { code: 'ENOENT' });
    await assert.rejects(lstat(join(tmp.path, 'pods', 'stale')), { code: 'ENOENT' });
    assert.equal(await readFile(join(outside, 'precious'), 'utf8'), 'keep');
    assert.equal(store.states.has('orphan'), false);
    assert.equal(store.states.has('stale'), false);
    assert.equal(store.states.has('mounted'), true);
  });

  it('cleanup also drops the state of a pod whose dir is already gone', async () => {
    store.states.set('ghost', { type: 'kubelet.volume.PodVolumeState.v1', uid: 'ghost', podDir: '/nowhere', mounted: false, volumes: {}, updatedAt: '' });
    store.states.set('kept-ghost', { type: 'kubelet.volume.PodVolumeState.v1', uid: 'kept-ghost', podDir: '/nowhere', mounted: false, volumes: {}, updatedAt: '' });
    assert.deepEqual((await vm.cleanup(['kept-ghost'])).removed, ['ghost']);
    assert.deepEqual([...store.states.keys()], ['kept-ghost']);
  });

  it('cleanup lists sl_volumes once, then knows its keys from its own writes', async () => {
    let lists = 0;
    const list = store.list.bind(store);
    store.list = () => {
      lists++;
      return list();
    };
    store.states.set('ghost', { type: 'kubelet.volume.PodVolumeState.v1', uid: 'ghost', podDir: '/nowhere', mounted: false, volumes: {}, updatedAt: '' });
    assert.equal(await vm.reconstruct(), 1);
    await vm.mount(podWith('p1', [{ name: 'c', emptyDir: {} }]), fence);
    await vm.mount(podWith('p2', [{ name: 'c', emptyDir: {} }]), fence);
    assert.deepEqual((await vm.cleanup(['p1', 'p2'])).removed, ['ghost'], 'a key from before the restart');
    await vm.unmount('p1', false, fence);
    await rm(join(tmp.path, 'pods', 'p1'), { recursive: true });
    assert.deepEqual((await vm.cleanup(['p2'])).removed, ['p1'], 'its state written after the start, its dir gone by hand');
    assert.deepEqual([...store.states.keys()], ['p2']);
    await vm.unmount('p2', true, fence);
    assert.deepEqual((await vm.cleanup([])).removed, [], 'removed with its content: nothing left');
    assert.deepEqual([...store.states.keys()], []);
    assert.equal(lists, 1, 'only reconstruct listed the bucket');
  });

  it('reconstruct rebuilds the actual state so cleanup keeps mounted pods after a restart', async () => {
    await vm.mount(podWith('m1', [{ name: 'c', emptyDir: {} }]), fence);
    vm = make();
    assert.equal(await vm.reconstruct(), 1);
    assert.deepEqual((await vm.cleanup([])).removed, []);
    assert.deepEqual((await vm.unmount('m1', false, fence)).unmounted, ['c']);
    assert.deepEqual((await vm.cleanup([])).removed, ['m1']);
  });

  it('refuses a UID that is not a directory name', async () => {
    await assert.rejects(vm.mount(podWith('../evil', []), fence), { code: 'InvalidRequest', retryable: false });
  });

  it("replies to a mount before its state write ends; the pod's next operation and settled() wait for the write", async () => {
    let releasePut!: () => void;
    const gate = new Promise<void>((resolve) => (releasePut = resolve));
    const put = store.put.bind(store);
    const order: string[] = [];
    store.put = async (state) => {
      order.push(`put ${state.mounted ? 'mounted' : 'unmounted'} start`);
      if (state.mounted) await gate;
      await put(state);
      order.push(`put ${state.mounted ? 'mounted' : 'unmounted'} end`);
    };
    const pod = podWith('w1', [{ name: 'c', emptyDir: {} }]);
    let replied = false;
    const mounting = vm.mount(pod, fence).then((r) => ((replied = true), r));
    await eventually(() => order.length === 1);
    await new Promise((r) => setImmediate(r));
    if (!replied) releasePut(); // (the old behaviour: let it end rather than hang)
    assert.equal(replied, true, 'the mount replied before its write ended');
    const reply = await mounting;
    assert.equal(reply.volumes['c']?.hostPath, join(tmp.path, 'pods', 'w1', 'volumes', 'kubernetes.io~empty-dir', 'c'));
    assert.equal(store.states.get('w1'), undefined, 'the write has not ended');
    let settled = false;
    const settling = vm.settled().then(() => (settled = true));
    const unmounting = vm.unmount('w1', false, fence).then(() => order.push('unmounted'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['put mounted start'], 'the unmount waits for the write');
    assert.equal(settled, false);
    releasePut();
    await unmounting;
    await settling;
    assert.deepEqual(order, ['put mounted start', 'put mounted end', 'put unmounted start', 'put unmounted end', 'unmounted']);
    assert.equal(store.states.get('w1')?.mounted, false);
  });

  it('serializes operations per pod', async () => {
    const pod = podWith('s1', [{ name: 'c', emptyDir: {} }]);
    const results = await Promise.all([vm.mount(pod, fence), vm.unmount('s1', true, fence), vm.mount(pod, fence)]);
    assert.equal(results.length, 3);
    assert.ok((await stat(join(tmp.path, 'pods', 's1', 'volumes', 'kubernetes.io~empty-dir', 'c'))).isDirectory());
    assert.equal(store.states.get('s1')?.mounted, true);
  });
});
