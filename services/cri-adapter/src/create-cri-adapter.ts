/**
 * Assembles the cri-adapter from its dependencies — a connected bus, a CRI client, a clock — and
 * binds its endpoints. `main` calls it with the real ones, integration tests with a fake clock and
 * the CRI simulator.
 */
import { availableParallelism, homedir, networkInterfaces, totalmem } from 'node:os';
import type { Tracer } from '@opentelemetry/api';
import { Buckets, Keys, NodeRuntimeStatus, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { ImageService, RuntimeService } from '@splitlet/cri';
import { Backoff, KubeletPeriods } from '@splitlet/kube';
import { KeyedMutex } from '@splitlet/service';
import type { Clock, HealthStatus } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { createEventPublisher, type EventPublisher } from './adapters/event-publisher.js';
import { createNodeFiles } from './adapters/node-files.js';
import { createBusRuntimeEventPublisher } from './adapters/runtime-event-publisher.js';
import { serveRuntimeRpc } from './adapters/runtime-rpc.js';
import { serveExecRpc } from './adapters/exec-rpc.js';
import { createStandalonePullSecretSource } from './adapters/standalone-pull-secrets.js';
import type { CriAdapterConfig } from './config.js';
import { createNodeKeyringProvider, type NodeKeyringProvider } from './credentials/node-keyring.js';
import { createPullSecretResolver } from './credentials/pull-secrets.js';
import { RuntimeEventForwarder } from './evented/runtime-event-forwarder.js';
import { RuntimeEventWatcher, type EventedPlegConnectionMetrics } from './evented/runtime-event-watcher.js';
import { DurableFences, memoryFenceStore } from './guard/durable-fences.js';
import { ImageManager } from './images/image-manager.js';
import { ContainerGC } from './kuberuntime/container-gc.js';
import { createLifecycleHandlerRunner } from './kuberuntime/lifecycle-handlers.js';
import { noopEventedPlegConnectionMetrics, type KubeRuntimeMetrics } from './kuberuntime/metrics.js';
import { RuntimeUpChecker } from './kuberuntime/runtime-health.js';
import type { EnvObjectSource } from './kuberuntime/env.js';
import { KubeGenericRuntimeManager } from './kuberuntime/runtime-manager.js';
import { RuntimeStatusReader } from './kuberuntime/runtime-status-reader.js';
import { PullThrottle } from './images/pull-throttle.js';
import type { FenceStore, LogFileRemover, NodeFiles, PullSecretSource, StateStore } from './ports.js';
import { podScope } from './pod-scope.js';
import { RuntimeOperations, type BackoffTables } from './runtime-operations.js';

/** The configuration fields the assembly reads. */
export type CriAdapterSettings = Pick<
  CriAdapterConfig,
  | 'NODE_NAME'
  | 'RUNTIME_REQUEST_TIMEOUT_MS'
  | 'POD_LOG_DIR'
  | 'SANDBOX_IMAGE'
  | 'SERIALIZE_IMAGE_PULLS'
  | 'REGISTRY_PULL_QPS'
  | 'REGISTRY_BURST'
  | 'CLUSTER_DNS'
  | 'CLUSTER_DOMAIN'
  | 'RESOLV_CONF'
  | 'CGROUP_PARENT'
  | 'ROOT_DIR'
  | 'EVENTED_PLEG'
  | 'RUNTIME_EVENT_COALESCE_MS'
>;

/** Dependencies of {@link createCriAdapter}. */
export interface CriAdapterDeps {
  readonly settings: CriAdapterSettings;
  readonly bus: Bus;
  /** The (instrumented) CRI client. Its mutating calls (see {@link isMutatingCriMethod}) are counted per pod operation here. */
  readonly cri: RuntimeService & ImageService;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics: KubeRuntimeMetrics;
  /** Persisted backoff tables; absent: memory only. */
  readonly backoffStore?: StateStore<BackoffTables> | undefined;
  /** Persisted fence epochs (loaded before serving); absent: memory only. */
  readonly fenceStore?: FenceStore | undefined;
  /** @default the local filesystem with `RESOLV_CONF` */
  readonly nodeFiles?: NodeFiles;
  /**
   * Where pod pull secrets come from (cluster mode: the API server).
   * @default the standalone source, which finds none
   */
  readonly pullSecretSource?: PullSecretSource;
  /** Where env configMap / secret references read (cluster mode: the API server); absent: standalone mode. */
  readonly envObjects?: EnvObjectSource;
  /**
   * The node's registry credentials.
   * @default the first docker config file in `ROOT_DIR`, the working dir, `$HOME/.docker`, `/.docker` (then `.dockercfg`), re-read every 5 minutes
   */
  readonly nodeKeyring?: NodeKeyringProvider;
  /** What container GC removes log files with. @default the local filesystem */
  readonly logFiles?: LogFileRemover;
  /** kubelet_evented_pleg_connection_* counters. @default none recorded */
  readonly eventedPlegMetrics?: EventedPlegConnectionMetrics;
  readonly signal: AbortSignal;
}

/** A running cri-adapter. */
export interface CriAdapter {
  readonly operations: RuntimeOperations;
  readonly manager: KubeGenericRuntimeManager;
  readonly backoffs: { readonly crashLoop: Backoff; readonly imagePull: Backoff };
  /** Readiness: the runtime answered Status with RuntimeReady within the last 30 s. */
  runtimeHealthy(): HealthStatus;
  /** Liveness: the runtime-up loop completed a check within the last 30 s. */
  loopAlive(): HealthStatus;
  /** Resolves when the runtime-up loop and the runtime event subscription stopped (after abort). */
  readonly done: Promise<void>;
  /** Waits for queued events and backoff saves. */
  flush(): Promise<void>;
  readonly events: EventPublisher;
  /** The runtime's container events on their way to pleg (the evented PLEG); `live` while subscribed. */
  readonly runtimeEvents: Pick<RuntimeEventForwarder, 'live'>;
}

const MUTATING = new Set(['RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox', 'CreateContainer', 'StartContainer', 'StopContainer', 'RemoveContainer']);

/** True for the CRI RPCs that change sandboxes or containers (after which pleg is poked). */
export function isMutatingCriMethod(method: string): boolean {
  return MUTATING.has(method);
}

/** `cri` with each call counted for the pod operation it is made in (podScope), the mutating ones apart. */
function countingCalls<T extends RuntimeService & ImageService>(cri: T): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(cri, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      let w = wrapped.get(prop);
      if (w === undefined) {
        const fn = v as (...args: unknown[]) => unknown;
        const mutating = typeof prop === 'string' && MUTATING.has(prop);
        w = (...args: unknown[]) => {
          podScope.noteCall(mutating);
          return fn.apply(target, args);
        };
        wrapped.set(prop, w);
      }
      return w;
    },
  });
}

/** The node's addresses, IPv4 first, for the downward API `status.hostIP`. */
export function nodeAddresses(): string[] {
  const v4: string[] = [];
  const v6: string[] = [];
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.internal) continue;
      if (a.family === 'IPv4') v4.push(a.address);
      else if (!a.address.startsWith('fe80:')) v6.push(a.address);
    }
  }
  return [...v4, ...v6];
}

/**
 * Builds the backoffs (restored from the store when it has them), the runtime manager, its guards
 * and the container garbage collector, serves the endpoints, and starts the runtime-up loop. The
 * sandbox image is made present in the background (a failure is logged).
 */
export async function createCriAdapter(deps: CriAdapterDeps): Promise<CriAdapter> {
  const { settings, bus, clock, logger, tracer, metrics } = deps;
  const cri = countingCalls(deps.cri);
  const node = settings.NODE_NAME;

  let stored: BackoffTables | undefined;
  try {
    stored = await deps.backoffStore?.load();
  } catch (e) {
    logger.warn('could not load the backoff tables; starting empty', { err: e });
  }
  const restore = (state: BackoffTables['crashLoop'] | undefined, fresh: () => Backoff): Backoff => {
    if (state === undefined) return fresh();
    try {
      return Backoff.fromJSON(state, clock);
    } catch (e) {
      logger.warn('stored backoff table is invalid; starting empty', { err: e });
      return fresh();
    }
  };
  const crashLoop = restore(stored?.crashLoop, () => Backoff.crashLoop(clock));
  const imagePull = restore(stored?.imagePull, () => new Backoff({ initialMs: KubeletPeriods.imageBackOffInitialMs, maxMs: KubeletPeriods.imageBackOffMaxMs, clock }));

  const events = createEventPublisher({ bus, node, clock, logger });
  const localFiles = createNodeFiles(settings.RESOLV_CONF);
  const nodeFiles = deps.nodeFiles ?? localFiles;
  const logFiles = deps.logFiles ?? localFiles;
  const statusReader = new RuntimeStatusReader(cri, nodeFiles);
  const nodeKeyring = deps.nodeKeyring ?? createNodeKeyringProvider({ paths: { rootDir: settings.ROOT_DIR, workingDir: process.cwd(), homeDir: homedir() }, clock, logger });
  const imageManager = new ImageManager({
    images: cri,
    nodeKeyring,
    recorder: events,
    clock,
    backoff: imagePull,
    serializePulls: settings.SERIALIZE_IMAGE_PULLS,
    throttle: new PullThrottle(settings.REGISTRY_PULL_QPS, settings.REGISTRY_BURST, clock),
    metrics,
    logger,
    tracer,
  });
  const cpus = availableParallelism();
  const manager = new KubeGenericRuntimeManager({
    runtime: cri,
    images: cri,
    imageManager,
    statusReader,
    handlers: createLifecycleHandlerRunner(cri),
    recorder: events,
    nodeFiles,
    logFiles,
    clock,
    crashLoopBackoff: crashLoop,
    metrics,
    envObjects: deps.envObjects,
    logger,
    tracer,
    settings: {
      sandbox: {
        podLogDir: settings.POD_LOG_DIR,
        dns: { clusterDns: settings.CLUSTER_DNS, clusterDomain: settings.CLUSTER_DOMAIN, hasResolvConf: settings.RESOLV_CONF !== '' },
        cgroupParent: settings.CGROUP_PARENT,
      },
      runtimeRequestTimeoutMs: settings.RUNTIME_REQUEST_TIMEOUT_MS,
      memoryCapacityBytes: totalmem(),
      nodeAllocatable: { milliCpu: cpus * 1000, memoryBytes: totalmem() },
      hostIPs: nodeAddresses(),
    },
  });
  const gc = new ContainerGC({
    runtime: cri,
    manager,
    logFiles,
    podLogDir: settings.POD_LOG_DIR,
    clock,
    logger,
    tracer,
  });
  // The evented PLEG: the runtime's container events, translated with the relist's code, to pleg.
  const runtimeEvents = new RuntimeEventForwarder({
    publisher: createBusRuntimeEventPublisher(bus, node, logger),
    clock,
    coalesceMs: settings.RUNTIME_EVENT_COALESCE_MS,
  });
  const watcher = new RuntimeEventWatcher({
    runtime: cri,
    translate: (event) => statusReader.fromContainerEvent(event),
    sink: runtimeEvents,
    metrics: deps.eventedPlegMetrics ?? noopEventedPlegConnectionMetrics,
    clock,
    logger,
  });
  const operations = new RuntimeOperations({
    manager,
    pullSecrets: createPullSecretResolver({ source: deps.pullSecretSource ?? createStandalonePullSecretSource(), recorder: events, logger }),
    gc,
    fences: await DurableFences.open(deps.fenceStore ?? memoryFenceStore()),
    podLocks: new KeyedMutex(),
    pokePleg: (uid) => bus.publishCore(Subjects.plegRelist(node), { uid }),
    runtimeEvents,
    operationEnded: (uid) => events.flushPod(uid),
    backoffs: { crashLoop, imagePull },
    backoffStore: deps.backoffStore,
    clock,
    logger,
  });

  // The runtime's state for the node's Ready condition (status-manager): on a change and at least every 20 s.
  const runtimeKv = await bus.kv(Buckets.nodeRuntime, NodeRuntimeStatus);
  let reported: { ready: boolean; message: string; at: number } | undefined;
  const health = new RuntimeUpChecker({
    runtime: cri,
    clock,
    logger,
    onCheck: async (ready, message) => {
      const now = clock.now();
      if (reported !== undefined && reported.ready === ready && reported.message === message && now - reported.at < 20_000) return;
      await runtimeKv.put(Keys.node(node), { type: 'kubelet.node.RuntimeStatus.v1', node, ready, message, observedAt: new Date(now).toISOString() });
      reported = { ready, message, at: now };
    },
  });
  serveRuntimeRpc(bus, node, operations, deps.signal);
  serveExecRpc(bus, node, cri, deps.signal);
  const watching = settings.EVENTED_PLEG ? watcher.run(deps.signal).finally(() => runtimeEvents.close()) : Promise.resolve();
  const done = Promise.all([health.run(deps.signal), watching]).then(() => undefined);
  void ensureSandboxImage(cri, settings.SANDBOX_IMAGE, logger);

  return {
    operations,
    manager,
    backoffs: { crashLoop, imagePull },
    runtimeHealthy: () => health.healthy(),
    loopAlive: () => health.alive(),
    done,
    flush: async () => {
      await operations.flush();
      await events.flush();
    },
    events,
    runtimeEvents,
  };
}

/**
 * Pulls the pause image when the runtime does not have it, so the first sandbox does not wait for
 * it (the runtime itself decides which pause image a sandbox uses).
 */
async function ensureSandboxImage(images: Pick<ImageService, 'ImageStatus' | 'PullImage'>, image: string, logger: Logger): Promise<void> {
  try {
    const st = await images.ImageStatus({ image: { image } });
    if (st.image !== null) return;
    logger.info('pulling the sandbox image', { image });
    await images.PullImage({ image: { image } });
  } catch (e) {
    logger.warn('could not make the sandbox image present', { image, err: e });
  }
}
