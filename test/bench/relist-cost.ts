/**
 * CPU of one idle periodic relist of N Running pods, by stage, in one process (so the machine's
 * load does not change the numbers): the simulator answering ListPodSandbox + ListContainers with
 * the bytes it puts on the wire; cri-adapter's RuntimeStatusReader.relist over real gRPC to it
 * (client decode + reading, plus the simulator's part); GenericPleg.relist comparing N unchanged pods.
 *
 * Usage: node --import tsx test/bench/relist-cost.ts [--pods 1000] [--rounds 40] [--splitlet-root DIR]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
// eslint-disable-next-line import-x/no-extraneous-dependencies -- encodes replies as serveCri does, also for a checkout without wire bytes (@splitlet/cri's own dependency)
import * as protoLoader from '@grpc/proto-loader';
import type { RuntimePodStatus } from '@splitlet/api';
import type * as CriModule from '../../libs/cri/src/index.ts';
import type * as ReaderModule from '../../services/cri-adapter/src/kuberuntime/runtime-status-reader.ts';
import type * as PlegModule from '../../services/pleg/src/pleg/generic-pleg.ts';
import type * as FakesModule from '../../services/pleg/test/fakes.ts';
import type * as SimModule from '../../services/sim-runtime/src/simulator.ts';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '40' }, 'splitlet-root': { type: 'string' } } });
/** The checkout whose code is measured (another worktree, for a before/after). */
const ROOT = values['splitlet-root'] ?? fileURLToPath(new URL('../..', import.meta.url));
const cri = (await import(path.join(ROOT, 'libs/cri/src/index.ts'))) as typeof CriModule;
const { GrpcRuntimeService } = cri;
const { RuntimeStatusReader } = (await import(path.join(ROOT, 'services/cri-adapter/src/kuberuntime/runtime-status-reader.ts'))) as typeof ReaderModule;
const { GenericPleg } = (await import(path.join(ROOT, 'services/pleg/src/pleg/generic-pleg.ts'))) as typeof PlegModule;
const { MemoryCache, MemorySink, silentLogger, testMetrics } = (await import(path.join(ROOT, 'services/pleg/test/fakes.ts'))) as typeof FakesModule;
const { startSimCri } = (await import(path.join(ROOT, 'services/sim-runtime/src/simulator.ts'))) as typeof SimModule;

const PODS = Number(values.pods);
const ROUNDS = Number(values.rounds);

/** CPU ms (user + system) per call of `fn`, over ROUNDS calls after 3 warm-up calls. */
async function cpuPerCall(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3; i++) await fn();
  const t0 = process.cpuUsage();
  for (let i = 0; i < ROUNDS; i++) await fn();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000 / ROUNDS;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'relist-cost-'));
  const simCri = await startSimCri();
  const client = await GrpcRuntimeService.connect({ endpoint: simCri.endpoint, connectTimeoutMs: 5000 });
  try {
    const { sim } = simCri;
    for (let i = 0; i < PODS; i++) {
      const uid = `0000${i}`.slice(-5) + '-uid-1234-5678-9abc-def012345678';
      const labels = { 'io.kubernetes.pod.name': `pod-${i}`, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid };
      const config = { metadata: { name: `pod-${i}`, namespace: 'default', uid, attempt: 0 }, logDirectory: dir, labels, annotations: { 'kubernetes.io/config.source': 'api' } };
      const { podSandboxId } = await sim.RunPodSandbox({ config });
      const { containerId } = await sim.CreateContainer({
        podSandboxId,
        sandboxConfig: config,
        config: {
          metadata: { name: 'app', attempt: 0 },
          image: { image: 'busybox:1.36' },
          command: ['sleep', 'infinity'],
          labels: { ...labels, 'io.kubernetes.container.name': 'app' },
          annotations: {
            'io.kubernetes.container.hash': 'a1b2c3d4',
            'io.kubernetes.container.restartCount': '0',
            'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
            'io.kubernetes.container.terminationMessagePolicy': 'File',
            'io.kubernetes.pod.terminationGracePeriod': '30',
          },
        },
      });
      await sim.StartContainer({ containerId });
    }

    const defs = protoLoader.loadSync(cri.CRI_PROTO_PATH, { keepCase: false, longs: String, enums: String, defaults: true, arrays: true, objects: true, oneofs: false });
    const serializer = (name: string) => (defs[name] as protoLoader.MessageTypeDefinition<object, object>).serialize;
    const wireBytesOf = (cri as { wireBytesOf?: (r: unknown) => Uint8Array | undefined }).wireBytesOf ?? (() => undefined);
    const encodeSandboxes = serializer('runtime.v1.ListPodSandboxResponse');
    const encodeContainers = serializer('runtime.v1.ListContainersResponse');
    let bytes = 0;
    const simMs = await cpuPerCall(async () => {
      const s = await sim.ListPodSandbox({});
      const c = await sim.ListContainers({});
      bytes = (wireBytesOf(s) ?? encodeSandboxes(s)).byteLength + (wireBytesOf(c) ?? encodeContainers(c)).byteLength;
    });

    const reader = new RuntimeStatusReader(client, { readAtMost: async () => '', readLogTail: async () => '' } as never);
    let pods: RuntimePodStatus[] = [];
    const readerMs = await cpuPerCall(async () => {
      pods = await reader.relist();
    });

    const wire = JSON.parse(JSON.stringify(pods)) as RuntimePodStatus[];
    const pleg = new GenericPleg({
      lister: { relist: async () => structuredClone(wire) },
      cache: new MemoryCache(),
      events: new MemorySink(),
      clock: { now: () => Date.now() },
      logger: silentLogger(),
      metrics: testMetrics().metrics,
      relistThresholdMs: 180_000,
    } as never);
    await pleg.relist();
    const cloneMs = await cpuPerCall(async () => structuredClone(wire));
    const plegMs = (await cpuPerCall(() => pleg.relist())) - cloneMs;

    console.log(`${PODS} pods (${pods.length} relisted), ${ROUNDS} rounds; CPU ms per idle relist:`);
    console.log(`  sim-runtime lists + wire bytes   ${simMs.toFixed(2)}  (${(bytes / 1024).toFixed(0)} KiB)`);
    console.log(`  reader.relist over gRPC (+ sim)   ${readerMs.toFixed(2)}`);
    console.log(`  pleg relist compare              ${plegMs.toFixed(2)}`);
  } finally {
    client.close();
    await simCri.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
