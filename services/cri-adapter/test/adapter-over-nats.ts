/**
 * The cri-adapter as the integration tests run it: a real nats-server, the CRI simulator behind a
 * real unix-socket gRPC server, the real (instrumented) CRI client, the adapter serving its
 * endpoints, and a second connection that calls them as a pod-worker or sync-loop would.
 */
import { trace } from '@opentelemetry/api';
import { RuntimeKillPodReply, RuntimeKillPodRequest, RuntimeSyncPodReply, RuntimeSyncPodRequest, Subjects, type BoundPod, type RuntimePodStatus } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { GrpcRuntimeService, instrument } from '@splitlet/cri';
import { startFakeCri, type FakeCri } from '@splitlet/cri/testing';
import { testPrograms } from './programs.js';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { makeTempDir, startNatsServer, type NatsServer, type TempDir } from '@splitlet/testkit';
import { createCriAdapter, type CriAdapter, type CriAdapterDeps } from '../src/create-cri-adapter.js';
import { noopKubeRuntimeMetrics } from '../src/kuberuntime/metrics.js';

const logger = createLogger({ service: 'cri-adapter-test', level: 'error' });

/** What a test can change. */
export interface AdapterOverNatsOptions {
  readonly node: string;
  /** The calling process's name (dead letters, connection name). */
  readonly caller: string;
  readonly logPrefix: string;
  /** Settings over the defaults (POD_LOG_DIR is the temp log root). */
  readonly settings?: Partial<CriAdapterDeps['settings']>;
  /** A nats-server to use (and leave running at close); @default a new one, stopped at close */
  readonly nats?: NatsServer;
  /** Extra adapter dependencies, given the adapter's own bus. */
  readonly deps?: (bus: NatsBus) => Promise<Partial<CriAdapterDeps>> | Partial<CriAdapterDeps>;
}

/** A running adapter and its caller. */
export interface AdapterOverNats {
  readonly sim: FakeCri;
  readonly logs: TempDir;
  readonly caller: NatsBus;
  readonly client: GrpcRuntimeService;
  readonly adapter: CriAdapter;
  readonly clock: FakeClock;
  /** Aborted by close(); pass it to subscriptions. */
  readonly signal: AbortSignal;
  /** pleg relist pokes the adapter sent so far. */
  pokes(): number;
  /** The fence the requests carry; tests of fencing change it. */
  fence: { partition: number; epoch: number };
  /**
   * A syncPod as a pod-worker sends it; `podStatus` is the runtime status it syncs on (default: an
   * empty one), `podStatusTimestamp` the pleg cache's time of it (default: none).
   */
  syncPod(pod: BoundPod, volumes?: Record<string, { hostPath: string }>, podStatus?: RuntimePodStatus, podStatusTimestamp?: number): Promise<RuntimeSyncPodReply>;
  killPod(pod: BoundPod, gracePeriodOverride?: number): Promise<RuntimeKillPodReply>;
  close(): Promise<void>;
}

/** Starts NATS, the simulator, the adapter and the caller. */
export async function startAdapterOverNats(o: AdapterOverNatsOptions): Promise<AdapterOverNats> {
  const stop = new AbortController();
  const nats: NatsServer = o.nats ?? (await startNatsServer());
  const sim = await startFakeCri({ programs: testPrograms });
  const logs = await makeTempDir(o.logPrefix);
  const bus = await connectBus({ servers: nats.url, process: 'cri-adapter', node: o.node, logger });
  const caller = await connectBus({ servers: nats.url, process: o.caller, node: o.node, logger, provision: false });
  let pokes = 0;
  caller.subscribeCore(Subjects.plegRelist(o.node), () => pokes++, stop.signal);
  await caller.flush();
  const client = await GrpcRuntimeService.connect({ endpoint: sim.endpoint });
  const cri = instrument(client, { tracer: trace.getTracer('test') });
  const clock = new FakeClock(Date.now());
  const adapter = await createCriAdapter({
    settings: {
      NODE_NAME: o.node,
      RUNTIME_REQUEST_TIMEOUT_MS: 30_000,
      POD_LOG_DIR: logs.path,
      SANDBOX_IMAGE: 'registry.k8s.io/pause:3.9',
      ROOT_DIR: '/nonexistent/kubelet',
      SERIALIZE_IMAGE_PULLS: true,
      REGISTRY_PULL_QPS: 5,
      REGISTRY_BURST: 10,
      CLUSTER_DNS: [],
      CLUSTER_DOMAIN: '',
      RESOLV_CONF: '',
      // The runtime's event stream stays off (as it was when these settings left it out): these
      // tests count the relist pokes SyncPod and KillPod send; runtime-events.test.ts covers it.
      EVENTED_PLEG: false,
      RUNTIME_EVENT_COALESCE_MS: 10,
      ...o.settings,
    },
    bus,
    cri,
    clock,
    logger,
    tracer: trace.getTracer('test'),
    metrics: noopKubeRuntimeMetrics,
    signal: stop.signal,
    ...(await o.deps?.(bus)),
  });
  // The adapter's subscriptions reach the server before the caller's first request (a PING/PONG
  // after them), or a loaded machine answers that request with "no responders".
  await bus.flush();
  const h: AdapterOverNats = {
    sim,
    logs,
    caller,
    client,
    adapter,
    clock,
    signal: stop.signal,
    pokes: () => pokes,
    fence: { partition: 0, epoch: 1 },
    syncPod: (pod, volumes = {}, podStatus, podStatusTimestamp) =>
      caller.request(
        RuntimeSyncPodRequest,
        RuntimeSyncPodReply,
        Subjects.rpc.runtime(o.node, 'syncPod'),
        {
          type: 'kubelet.runtime.SyncPodRequest.v1',
          pod,
          podStatus: podStatus ?? { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace, ips: [], sandboxes: [], containers: [] },
          ...(podStatusTimestamp !== undefined ? { podStatusTimestamp } : {}),
          volumes,
          pullSecrets: [],
          fence: { ...h.fence },
        },
        { timeoutMs: 30_000 },
      ),
    killPod: (pod, gracePeriodOverride) =>
      caller.request(
        RuntimeKillPodRequest,
        RuntimeKillPodReply,
        Subjects.rpc.runtime(o.node, 'killPod'),
        {
          type: 'kubelet.runtime.KillPodRequest.v1',
          pod,
          runningPod: { uid: pod.metadata.uid, name: pod.metadata.name, namespace: pod.metadata.namespace },
          ...(gracePeriodOverride !== undefined ? { gracePeriodOverride } : {}),
          fence: { ...h.fence },
        },
        { timeoutMs: 30_000 },
      ),
    async close() {
      stop.abort();
      await adapter.done;
      await adapter.flush();
      await caller.close();
      await bus.close();
      client.close();
      await sim.close();
      if (o.nats === undefined) await nats.stop();
      await logs.cleanup();
    },
  };
  return h;
}
