/**
 * The real process (dist/main.js): env contract, health and metrics endpoints, serving over NATS,
 * clean SIGTERM exit. Needs `npx tsc -b services/cri-adapter` first.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { RuntimeSyncPodReply, RuntimeSyncPodRequest, Subjects } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { startFakeCri, type FakeCri } from '@splitlet/cri/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';
import { aPod } from './fixtures.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const NODE = 'proc-node';

describe('cri-adapter process', { skip: existsSync(MAIN) ? false : 'dist/main.js missing: run npx tsc -b services/cri-adapter' }, () => {
  let nats: NatsServer;
  let sim: FakeCri;
  let dir: TempDir;
  let proc: SpawnedProcess;
  let caller: NatsBus;

  before(async () => {
    nats = await startNatsServer();
    sim = await startFakeCri();
    dir = await makeTempDir('cri-adapter-proc-');
    proc = await spawnProcess({
      cmd: process.execPath,
      args: [MAIN],
      name: 'cri-adapter',
      env: {
        NATS_URL: nats.url,
        NODE_NAME: NODE,
        HEALTH_PORT: '0',
        HEALTH_PORT_FILE: join(dir.path, 'port'),
        CRI_ENDPOINT: sim.endpoint,
        POD_LOG_DIR: join(dir.path, 'pods'),
        CLUSTER_DNS: '10.96.0.10',
        CLUSTER_DOMAIN: 'cluster.local',
        OTEL_SDK_DISABLED: 'true',
        OTEL_TRACES_EXPORTER: 'none',
        // The generic PLEG's pokes (a runtime without events, such as containerd 1.6); the evented
        // path is test/integration/evented-pleg.test.ts.
        EVENTED_PLEG: 'false',
      },
    });
    await proc.waitForLine('cri-adapter serving', 20_000);
    caller = await connectBus({ servers: nats.url, process: 'pod-worker', node: NODE, logger: createLogger({ service: 'test', level: 'error' }), provision: false });
  });

  after(async () => {
    await caller?.close();
    if (proc !== undefined && proc.status() === undefined) await proc.kill();
    await sim?.close();
    await nats?.stop();
    await dir?.cleanup();
  });

  it('serves syncPod, pokes pleg once it ended, reports health and metrics, and exits 0 on SIGTERM', async () => {
    const pod = aPod({ name: 'proc', uid: 'uid-proc' });
    const pokes: unknown[] = [];
    const stopPokes = new AbortController();
    caller.subscribeCore(Subjects.plegRelist(NODE), (data) => pokes.push(data), stopPokes.signal);
    await caller.flush();
    const reply = await caller.request(
      RuntimeSyncPodRequest,
      RuntimeSyncPodReply,
      Subjects.rpc.runtime(NODE, 'syncPod'),
      {
        type: 'kubelet.runtime.SyncPodRequest.v1',
        pod,
        podStatus: { uid: 'uid-proc', name: 'proc', namespace: 'default', ips: [], sandboxes: [], containers: [] },
        volumes: {},
        pullSecrets: [],
        fence: { partition: 3, epoch: 1 },
      },
      { timeoutMs: 20_000 },
    );
    assert.deepEqual(
      reply.results.filter((r) => r.error !== undefined),
      [],
    );
    assert.equal(reply.podStatus.containers[0]?.state, 'CONTAINER_RUNNING');
    // RunPodSandbox, CreateContainer and StartContainer changed the runtime: one relist of the pod
    // once the operation ended (sent before its reply), none while it was still making calls.
    await eventually(() => pokes.length > 0, { message: 'a pleg relist poke' });
    await caller.flush();
    assert.deepEqual(pokes, [{ uid: 'uid-proc' }]);
    stopPokes.abort();

    const port = Number((await readFile(join(dir.path, 'port'), 'utf8')).trim());
    const health = await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      return res.status === 200 ? res.text() : undefined;
    });
    assert.equal(health, 'ok\n');
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /kubelet_runtime_operations_total\{operation_type="run_podsandbox",service="cri-adapter"\} 1/);
    assert.match(metrics, /kubelet_started_pods_total\{service="cri-adapter"\} 1/);
    assert.match(metrics, /kubelet_started_containers_total\{container_type="container",service="cri-adapter"\} 1/);

    const code = await proc.stop('SIGTERM', 15_000);
    assert.equal(code, 0, proc.tail(30));
    if (process.env['SHOW_PROC_LOG'] === '1') console.log(proc.tail(60));
  });
});
