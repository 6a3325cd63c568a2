/**
 * Settled syncs with the real processes (`splitlet up --runtime sim`, a real nats-server): a pod
 * whose inputs did not change since its last full SyncPod is synced without a runtime SyncPod,
 * volume mount or status set (the periodic resync here, every 2–3 s), and every real change still
 * syncs fully — a readiness probe result, a container's death, an image update, the pod's removal.
 * status-manager's record rolled back to an older status (a set redelivered after a newer one, as
 * after status-manager was killed: the failure that reverted 15d66e6) is corrected by the next sync.
 *
 * Observed on the bus (the volume.mount and runtime.syncPod requests and the status sets about the
 * pod, counted by a plain NATS subscriber), in pod-worker's debug log (`sync settled…`), through the
 * CLI's `get pods` and on the CRI socket.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Buckets, Keys, PodStatusRecord, PodStatusUpdate, Subjects, WorkerRecord, nodeToken } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { GrpcRuntimeService } from '@splitlet/cri';
import { createLogger } from '@splitlet/telemetry';
import { logRecords } from '@splitlet/testkit';
import { criEndpointOf, repoRoot, startSplitlet, waitFor } from './harness.ts';
import { parsePrometheusText, sumOf } from './prom-text.ts';
import type { Instance, PodJson } from './harness.ts';

const execFileP = promisify(execFile);
const NODE = 'settled-node';
const POD = `web-${NODE}`;

function manifest(image: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    // A fixed UID: an image edit is then an UPDATE of the same pod (else the static pod's UID, a
    // hash of its content, changes with it).
    metadata: { name: 'web', uid: '5e771ed0-0000-4000-8000-000000000001' },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image,
          command: ['sh', '-c', 'touch /tmp/ready; sleep 3600'],
          // A generous timeout: on a loaded machine a slow probe must not flip readiness (a real change) by itself.
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, timeoutSeconds: 10, successThreshold: 1, failureThreshold: 1 },
        },
      ],
    },
  });
}

const app = (p: PodJson | undefined) => p?.status?.containerStatuses?.find((c) => c.name === 'app');
const ready = (p: PodJson | undefined): boolean => p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && app(p)?.ready === true;

/** Messages per subject kind that mention a pod, as a plain subscriber sees them. */
class Traffic {
  readonly #seen: { kind: string; body: string; at: number }[] = [];
  constructor(nc: NatsConnection, subjects: Record<string, string>) {
    for (const [kind, subject] of Object.entries(subjects)) {
      nc.subscribe(subject, { callback: (_e, m) => void this.#seen.push({ kind, body: m.string(), at: Date.now() }) });
    }
  }
  count(kind: string, uid: string): number {
    return this.of(kind, uid).length;
  }
  /** The messages of a kind about a pod, each with when it arrived here. */
  of(kind: string, uid: string): { body: string; at: number }[] {
    return this.#seen.filter((m) => m.kind === kind && m.body.includes(uid));
  }
}

describe('settled syncs on the simulated runtime', { timeout: 300_000 }, () => {
  let s: Instance;
  let bus: NatsBus;
  let nc: NatsConnection;
  let traffic: Traffic;
  let cri: GrpcRuntimeService;
  let uid = '';

  const logOf = (process: string): Record<string, unknown>[] => logRecords(readFileSync(join(s.stateDir, 'logs', `${process}.log`), 'utf8').split('\n'));
  /** pod-worker's settled syncs of the pod. */
  const settled = (): Record<string, unknown>[] => logOf('pod-worker-1').filter((r) => r['msg'] === 'sync settled: volume mount and runtime SyncPod skipped' && r['uid'] === uid);
  /** The pod's runtime SyncPod requests to cri-adapter. */
  const runtimeSyncs = (): number => traffic.count('syncPod', uid);
  const mounts = (): number => traffic.count('mount', uid);
  const statusSets = (): number => traffic.count('status', uid);
  const pod = async (): Promise<PodJson | undefined> => (await s.pods()).find((p) => p.metadata.name === POD);
  const waitPod = (what: string, pred: (p: PodJson) => boolean, timeoutMs = 60_000): Promise<PodJson> =>
    waitFor(
      what,
      async () => {
        const p = await pod();
        return p !== undefined && pred(p) ? p : undefined;
      },
      timeoutMs,
      200,
    );
  const waitSettled = (n: number, what: string): Promise<Record<string, unknown>[]> =>
    waitFor(
      what,
      async () => {
        const all = settled();
        return all.length >= n ? all : undefined;
      },
      60_000,
      200,
    );
  const exec = (cmd: string[]): Promise<unknown> =>
    execFileP(process.execPath, [join(repoRoot, 'services/cli/bin/splitlet.js'), 'exec', POD, '-c', 'app', '--', ...cmd], {
      env: { ...process.env, SPLITLET_STATE_DIR: s.stateDir },
    });

  before(async () => {
    s = await startSplitlet({ nodeName: NODE, podWorkers: 1, args: ['--runtime', 'sim', '--sync-frequency', '2s'] });
    const admin = s.natsCredential('admin');
    bus = await connectBus({
      user: admin.user,
      pass: admin.password,
      servers: s.info().natsUrl.split(','),
      process: 'settled-sync-test',
      node: NODE,
      provision: false,
      logger: createLogger({ service: 'settled-sync-test', level: 'error', stream: process.stderr }),
    });
    nc = await connect({ servers: s.info().natsUrl.split(','), user: admin.user, pass: admin.password, name: 'settled-sync-test' });
    traffic = new Traffic(nc, {
      mount: Subjects.rpc.volume(NODE, 'mount'),
      syncPod: Subjects.rpc.runtime(NODE, 'syncPod'),
      status: Subjects.statusAll(NODE),
      worker: `$KV.${Buckets.worker}.${Keys.nodePrefix(NODE)}`,
      poke: `sl.${nodeToken(NODE)}.work.>`,
    });
    cri = await GrpcRuntimeService.connect({ endpoint: criEndpointOf('sim', s.stateDir), timeoutMs: 30_000 });
  });

  after(async () => {
    cri?.close();
    await nc?.close();
    await bus?.close();
    const code = await s?.stop();
    assert.equal(code, 0, 'splitlet up exits 0 on SIGTERM');
  });

  test('a running pod resyncs without a runtime SyncPod, a mount, a status set, a worker record write or a poke', async () => {
    writeFileSync(join(s.stateDir, 'manifests', 'web.json'), manifest('busybox:1.36'));
    const p = await waitPod('web Running and Ready', (x) => x.status?.phase === 'Running' && ready(x));
    uid = p.metadata.uid;
    assert.ok(runtimeSyncs() >= 1 && mounts() >= 1 && statusSets() >= 2, 'the create sync was a full one');
    // The window starts once the pod's start-up is over on the bus: pokes for real inputs from before
    // Ready (the prober's initial Failure and then Success, PLEG's ContainerStarted) may still be
    // on their way when Ready shows (seen in CI: one arrived inside the window). So it starts after
    // sync-loop's tick poked the worker record's nextSyncAt (the one poke a settled pod still gets,
    // as its record no longer changes) and after a settled sync that followed that poke.
    await waitFor(
      'the tick poke of the worker record nextSyncAt, then a settled sync',
      async () => {
        const record = traffic.of('worker', uid).at(-1);
        const next = record === undefined ? undefined : WorkerRecord.parse(JSON.parse(record.body)).nextSyncAt;
        const tick = traffic.of('poke', uid).find((m) => next !== undefined && m.at >= next);
        return tick !== undefined && settled().some((r) => Date.parse(String(r['time'])) > tick.at) ? true : undefined;
      },
      60_000,
      200,
    );
    const first = settled().length;
    const counts = () => ({ runtime: runtimeSyncs(), mounts: mounts(), sets: statusSets(), workerWrites: traffic.count('worker', uid) });
    const before = counts();
    const pokesBefore = traffic.count('poke', uid);
    const more = await waitSettled(first + 3, 'three more settled syncs (the 2 s resync)');
    // The pod workers resync a settled pod themselves: its record would change only in its times,
    // so it is not written and sync-loop has nothing more to poke. One poke is tolerated: the one
    // the wait above took for the tick's may have been a late start-up poke.
    assert.deepEqual(counts(), before, 'no runtime SyncPod, mount, status set or worker record write while settled');
    const pokes = traffic.of('poke', uid).slice(pokesBefore);
    assert.ok(
      pokes.length <= 1,
      `${pokes.length} pokes during three settled syncs: ${JSON.stringify(pokes.map((m) => ({ at: new Date(m.at).toISOString(), poke: JSON.parse(m.body) as unknown })))}; the settled syncs at ${JSON.stringify(more.slice(first).map((r) => r['time']))}`,
    );
    assert.ok(
      more.slice(first).every((r) => r['statusSent'] === false),
      'status-manager already held the status',
    );
    assert.ok(ready(await pod()));
    const port = s.info().processes.find((p) => p.name === 'pod-worker-1')?.healthPort;
    const metrics = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    assert.ok(sumOf(metrics, 'splitlet_pod_worker_settled_syncs_total', { status_sent: 'false' }) >= 3, 'counted in splitlet_pod_worker_settled_syncs_total');
  });

  test('a readiness result change syncs fully and is reported; so does its way back', async () => {
    const runtime0 = runtimeSyncs();
    await exec(['rm', '/tmp/ready']);
    const p = await waitPod('web not Ready', (x) => !ready(x) && x.status?.phase === 'Running');
    assert.equal(app(p)?.restartCount, 0);
    assert.ok(runtimeSyncs() > runtime0, 'the probe result change ran the runtime SyncPod');
    await exec(['touch', '/tmp/ready']);
    await waitPod('web Ready again', ready);
  });

  test('status-manager rolled back to an older status (a redelivered set): the next sync reports the current one again', async () => {
    const kv = await bus.kv(Buckets.status, PodStatusRecord);
    const current = (await kv.get(Keys.pod(NODE, uid)))?.value;
    assert.ok(current !== undefined && current !== null);
    // The set a killed status-manager would get redelivered after its successor applied newer ones:
    // the pod before it was ready.
    const stale = structuredClone(current.status);
    stale.conditions = stale.conditions?.map((c) => (c.type === 'Ready' || c.type === 'ContainersReady' ? { ...c, status: 'False', reason: 'ContainersNotReady' } : c));
    stale.containerStatuses = stale.containerStatuses?.map((c) => ({ ...c, ready: false }));
    const settledBefore = settled().length;
    const runtime0 = runtimeSyncs();
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, uid), {
      type: 'kubelet.status.PodStatusUpdate.v1',
      kind: 'set',
      uid,
      name: current.name,
      namespace: current.namespace,
      pod: current.pod,
      status: stale,
      couldHaveRunningContainers: true,
      at: new Date(Date.now() - 60_000).toISOString(),
    });
    // status-manager writes the stale status (version +1), then the next sync's set (version +2).
    await waitFor(
      'status-manager applied the stale set and then a current one',
      async () => {
        const r = (await kv.get(Keys.pod(NODE, uid)))?.value;
        return r !== undefined && r !== null && r.version >= current.version + 2 && r.status.containerStatuses?.[0]?.ready === true;
      },
      30_000,
      100,
    );
    await waitPod('web reported Ready again', ready, 30_000);
    const fixedBy = settled()
      .slice(settledBefore)
      .find((r) => r['statusSent'] === true);
    assert.ok(fixedBy !== undefined, 'a settled sync sent the status again');
    assert.equal(runtime0, runtimeSyncs(), 'without a runtime SyncPod');
  });

  test("a container's death syncs fully and restarts it", async () => {
    const before = app(await pod());
    const runtime0 = runtimeSyncs();
    const running = (await cri.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid } } })).containers.find((c) => c.state === 'CONTAINER_RUNNING');
    assert.ok(running !== undefined);
    await cri.StopContainer({ containerId: running.id, timeout: '0' });
    const p = await waitPod('web restarted', (x) => (app(x)?.restartCount ?? 0) >= 1 && app(x)?.containerID !== before?.containerID && x.status?.phase === 'Running');
    assert.ok(app(p)?.lastState?.terminated !== undefined);
    assert.ok(runtimeSyncs() > runtime0);
    await waitPod('web Ready after the restart', ready);
  });

  test('an image update syncs fully; the removal of the pod terminates it', async () => {
    const before = app(await pod());
    writeFileSync(join(s.stateDir, 'manifests', 'web.json'), manifest('busybox:1.37'));
    await waitPod('web on busybox:1.37', (x) => (app(x)?.image ?? '').endsWith('busybox:1.37') && app(x)?.containerID !== before?.containerID && ready(x));
    // Settled again on the new spec.
    const n = settled().length;
    const runtime0 = runtimeSyncs();
    const mounts0 = mounts();
    await waitSettled(n + 2, 'settled on the new image');
    assert.equal(runtimeSyncs(), runtime0);
    assert.equal(mounts(), mounts0);
    rmSync(join(s.stateDir, 'manifests', 'web.json'));
    await waitFor('web gone', async () => (await pod()) === undefined, 60_000, 200);
    const left = (await cri.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid } } })).containers.filter((c) => c.state === 'CONTAINER_RUNNING');
    assert.equal(left.length, 0);
  });
});
