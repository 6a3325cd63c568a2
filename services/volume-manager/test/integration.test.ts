/**
 * volume-manager as a real process against a real nats-server: the request/reply contract, events,
 * KV state, dead letters and a clean SIGTERM.
 */
import assert from 'node:assert/strict';
import { lstat, mkdir, stat, statfs } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Msg, Subscription } from '@nats-io/transport-node';
import {
  Buckets,
  DeadLetter,
  Keys,
  KubeEvent,
  NodeCapacity,
  PodVolumeState,
  SpanBatch,
  Subjects,
  VolumeCleanupReply,
  VolumeCleanupRequest,
  VolumeMountReply,
  VolumeMountRequest,
  VolumeUnmountReply,
  VolumeUnmountRequest,
} from '@splitlet/api';
import type { BoundPod, Volume } from '@splitlet/api';
import { connectBus, isBusError, type NatsBus } from '@splitlet/bus';
import { aPod } from '@splitlet/kube/testing';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';
import { memoryLogger } from './fakes.js';

const NODE = 'node-a.example';
const REPO = resolve(import.meta.dirname, '../../..');
const fence = { partition: 0, epoch: 1 };

function podWith(uid: string, volumes: Volume[]): BoundPod {
  return aPod({ metadata: { uid, name: `pod-${uid}` }, spec: { volumes } });
}

function collect(bus: NatsBus, subject: string): { msgs: unknown[]; sub: Subscription } {
  const msgs: unknown[] = [];
  const sub = bus.nc.subscribe(subject, { callback: (_e, m: Msg) => void msgs.push(m.json()) });
  return { msgs, sub };
}

describe('volume-manager process (real nats-server)', () => {
  let nats: NatsServer;
  let tmp: TempDir;
  let proc: SpawnedProcess;
  let bus: NatsBus;
  let root: string;

  before(async () => {
    nats = await startNatsServer();
    tmp = await makeTempDir('vm-int-');
    root = join(tmp.path, 'kubelet');
    proc = await spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', 'services/volume-manager/src/main.ts'],
      cwd: REPO,
      name: 'volume-manager',
      env: { NATS_URL: nats.url, NODE_NAME: NODE, ROOT_DIR: root, HEALTH_PORT: '0', LOG_LEVEL: 'debug', ALLOW_TMPFS: 'false', NODE_CPU: '1500m', OTEL_TRACES_EXPORTER: 'none' },
    });
    await proc.waitForLine('"msg":"started"', 30_000);
    bus = await connectBus({ servers: nats.url, process: 'vm-test', node: NODE, logger: memoryLogger().logger, provision: false });
  });

  after(async () => {
    await bus?.close();
    if (proc !== undefined && proc.status() === undefined) await proc.stop();
    await nats?.stop();
    await tmp?.cleanup();
  });

  const mount = (pod: BoundPod) =>
    bus.request(VolumeMountRequest, VolumeMountReply, Subjects.rpc.volume(NODE, 'mount'), { type: 'kubelet.volume.MountRequest.v1', pod, fence }, { timeoutMs: 5000 });

  it("publishes the node's capacity, measured on the node, with the configured allocatable CPU", async () => {
    const kv = await bus.kv(Buckets.nodeCapacity, NodeCapacity);
    const record = (await kv.get(Keys.node(NODE)))?.value;
    assert.ok(record, 'published before the process reported started');
    const fs = await statfs(tmp.path); // ROOT_DIR's filesystem (it is created under the temp dir)
    const capacity = { cpu: String(cpus().length), memory: String(totalmem()), 'ephemeral-storage': String(Number(fs.blocks) * Number(fs.bsize)), pods: '110' };
    assert.deepEqual(record.capacity, capacity);
    assert.deepEqual(record.allocatable, { ...capacity, cpu: '1500m' });
    assert.equal(record.node, NODE);
  });

  it('mounts an emptyDir and a hostPath Directory: dirs, host paths, KV state', async () => {
    const host = join(tmp.path, 'host-data');
    await mkdir(host);
    const spans = collect(bus, Subjects.spansAll(NODE));
    const reply = await mount(
      podWith('uid-1', [
        { name: 'cache', emptyDir: {} },
        { name: 'data', hostPath: { path: host, type: 'Directory' } },
      ]),
    );
    const podDir = join(root, 'pods', 'uid-1');
    const cache = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'cache');
    assert.deepEqual(reply, { type: 'kubelet.volume.MountReply.v1', podDir, volumes: { cache: { hostPath: cache }, data: { hostPath: host } } });
    assert.ok((await stat(cache)).isDirectory());
    assert.ok((await stat(join(podDir, 'plugins'))).isDirectory());
    const kv = await bus.kv(Buckets.volumes, PodVolumeState);
    const entry = await kv.get(Keys.pod(NODE, 'uid-1'));
    assert.equal(entry?.value?.mounted, true);
    assert.deepEqual(entry?.value?.volumes, reply.volumes);
    // One span per volume, each a child of the bus's SERVER span for the request.
    const records = await eventually(
      () => {
        const rs = spans.msgs.flatMap((m) => SpanBatch.parse(m).spans);
        return rs.filter((r) => r.name.startsWith('volume.mount ')).length === 2 ? rs : undefined;
      },
      { timeoutMs: 5000 },
    );
    spans.sub.unsubscribe();
    const server = records.find((r) => r.name === 'process sl.{node}.rpc.volume.mount');
    assert.ok(server, 'the SERVER span was recorded');
    for (const name of ['volume.mount cache', 'volume.mount data']) {
      const r = records.find((x) => x.name === name);
      assert.equal(r?.parentSpanId, server.spanId, name);
      assert.equal(r?.traceId, server.traceId);
      assert.equal(r?.attributes['k8s.pod.uid'], 'uid-1');
    }
    assert.equal(records.find((x) => x.name === 'volume.mount data')?.attributes['k8s.volume.type'], 'hostPath');
  });

  it('a missing hostPath Directory → FailedMount error reply (retryable) + Warning event', async () => {
    const events = collect(bus, Subjects.events(NODE, 'uid-2'));
    const missing = join(tmp.path, 'missing');
    await assert.rejects(mount(podWith('uid-2', [{ name: 'data', hostPath: { path: missing, type: 'Directory' } }])), (e: unknown) => {
      assert.ok(isBusError(e, 'Remote'));
      assert.equal(e.remoteCode, 'FailedMount');
      assert.equal(e.retryable, true);
      assert.equal(
        e.message,
        `unmounted volumes=[data], unattached volumes=[]: MountVolume.SetUp failed for volume "data" : hostPath type check failed: ${missing} is not a directory`,
      );
      return true;
    });
    await eventually(() => events.msgs.length === 1, { timeoutMs: 5000 });
    const ev = KubeEvent.parse(events.msgs[0]);
    assert.equal(ev.reason, 'FailedMount');
    assert.equal(ev.eventType, 'Warning');
    assert.equal(ev.message, `MountVolume.SetUp failed for volume "data" : hostPath type check failed: ${missing} is not a directory`);
    assert.deepEqual(ev.involvedObject, { kind: 'Pod', name: 'pod-uid-2', namespace: 'default', uid: 'uid-2' });
    events.sub.unsubscribe();
    const kv = await bus.kv(Buckets.volumes, PodVolumeState);
    const st = (await kv.get(Keys.pod(NODE, 'uid-2')))?.value;
    assert.equal(st?.mounted, false);
    assert.match(st?.error ?? '', /^unmounted volumes=/);
  });

  it('a malformed request → SchemaInvalid reply + dead letter naming the subject; the process keeps working', async () => {
    const dlq = collect(bus, Subjects.deadLetter(NODE, 'volume-manager'));
    const subject = Subjects.rpc.volume(NODE, 'mount');
    const reply = await bus.nc.request(subject, JSON.stringify({ type: 'kubelet.volume.MountRequest.v1', pod: { nope: true } }), { timeout: 5000 });
    const env = reply.json<{ ok: boolean; error: { code: string; message: string; retryable: boolean } }>();
    assert.equal(env.ok, false);
    assert.equal(env.error.code, 'SchemaInvalid');
    assert.equal(env.error.retryable, false);
    const notJson = await bus.nc.request(subject, 'not json at all', { timeout: 5000 });
    assert.equal(notJson.json<{ error: { code: string } }>().error.code, 'SchemaInvalid');
    await eventually(() => dlq.msgs.length === 2, { timeoutMs: 5000 });
    const dl = DeadLetter.parse(dlq.msgs[0]);
    assert.equal(dl.subject, subject);
    assert.equal(dl.process, 'volume-manager');
    assert.ok(dl.reason.includes(subject), dl.reason);
    dlq.sub.unsubscribe();
    const ok = await mount(podWith('uid-3', [{ name: 'cache', emptyDir: {} }]));
    assert.ok(ok.volumes['cache']);
  });

  it('unmount with removeContent removes the pod dir and the KV state', async () => {
    const reply = await bus.request(
      VolumeUnmountRequest,
      VolumeUnmountReply,
      Subjects.rpc.volume(NODE, 'unmount'),
      { type: 'kubelet.volume.UnmountRequest.v1', uid: 'uid-3', removeContent: true, fence },
      { timeoutMs: 5000 },
    );
    assert.deepEqual(reply.unmounted, ['cache']);
    await assert.rejects(lstat(join(root, 'pods', 'uid-3')), { code: 'ENOENT' });
    const kv = await bus.kv(Buckets.volumes, PodVolumeState);
    assert.equal(await kv.get(Keys.pod(NODE, 'uid-3')), null);
  });

  it('cleanup removes only orphaned pod dirs', async () => {
    await mkdir(join(root, 'pods', 'orphan-1', 'volumes'), { recursive: true });
    const reply = await bus.request(
      VolumeCleanupRequest,
      VolumeCleanupReply,
      Subjects.rpc.volume(NODE, 'cleanup'),
      { type: 'kubelet.volume.CleanupRequest.v1', keep: ['uid-1'] },
      { timeoutMs: 5000 },
    );
    // uid-2 failed to mount (not mounted) and is not kept: an orphan too.
    assert.deepEqual(reply.removed.sort(), ['orphan-1', 'uid-2']);
    assert.ok((await stat(join(root, 'pods', 'uid-1'))).isDirectory());
    await assert.rejects(lstat(join(root, 'pods', 'orphan-1')), { code: 'ENOENT' });
  });

  it('a stale fence is FencedOff', async () => {
    await bus.request(
      VolumeMountRequest,
      VolumeMountReply,
      Subjects.rpc.volume(NODE, 'mount'),
      {
        type: 'kubelet.volume.MountRequest.v1',
        pod: podWith('uid-1', [
          { name: 'cache', emptyDir: {} },
          { name: 'data', hostPath: { path: join(tmp.path, 'host-data'), type: 'Directory' } },
        ]),
        fence: { partition: 5, epoch: 9 },
      },
      { timeoutMs: 5000 },
    );
    await assert.rejects(
      bus.request(
        VolumeUnmountRequest,
        VolumeUnmountReply,
        Subjects.rpc.volume(NODE, 'unmount'),
        { type: 'kubelet.volume.UnmountRequest.v1', uid: 'uid-1', removeContent: false, fence: { partition: 5, epoch: 8 } },
        { timeoutMs: 5000 },
      ),
      (e: unknown) => isBusError(e, 'Remote') && e.remoteCode === 'FencedOff' && e.retryable === false,
    );
  });

  it('serves /healthz and exits 0 on SIGTERM', async () => {
    const line = await proc.waitForLine('"msg":"listening"', 1000);
    const port = Number(/"port":(\d+)/.exec(line.input ?? '')?.[1]);
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(res.status, 200);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /storage_operation_duration_seconds_count\{[^}]*operation_name="volume_mount"/);
    assert.equal(await proc.stop('SIGTERM', 15_000), 0);
    assert.ok((await stat(join(root, 'pods', 'uid-1'))).isDirectory(), 'volumes stay after a restart-safe shutdown');
  });
});
