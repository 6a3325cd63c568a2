/**
 * cri-adapter's composition root: CRI client (instrumented) → domain → endpoints, on the common
 * process bootstrap.
 */
import { Subjects } from '@splitlet/api';
import { dialRuntime, instrument } from '@splitlet/cri';
import { openNodeObjects } from '@splitlet/kube-client';
import { realClock, runNodeProcess } from '@splitlet/service';
import { apiEnvObjectSource, apiPullSecretSource } from './adapters/api-objects.js';
import { createKvFenceStore } from './adapters/kv-fence-store.js';
import { createKvBackoffStore } from './adapters/kv-state-store.js';
import { serveContainerLogs } from './adapters/container-logs-rpc.js';
import { CriAdapterEnv, processEnv } from './config.js';
import { createCriAdapter, isMutatingCriMethod } from './create-cri-adapter.js';
import { createEventedPlegConnectionMetrics, createKubeRuntimeMetrics } from './kuberuntime/metrics.js';
import { podScope } from './pod-scope.js';

await runNodeProcess({
  service: 'cri-adapter',
  schema: CriAdapterEnv,
  env: processEnv(),
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const metrics = createKubeRuntimeMetrics(registry);
    // Log files are on disk: served even while the runtime is unreachable.
    serveContainerLogs(bus, config.NODE_NAME, config.POD_LOG_DIR, signal);
    // The runtime may come up after us: keep dialling until it answers or we are stopped.
    const client = await dialRuntime({ endpoint: config.CRI_ENDPOINT, timeoutMs: config.RUNTIME_REQUEST_TIMEOUT_MS, signal }, (attempt, err) =>
      logger.warn('container runtime not reachable yet', { endpoint: config.CRI_ENDPOINT, attempt, err }),
    );
    if (client === undefined) return;
    const grpc = client;
    onClose({ name: 'cri-client', close: () => grpc.close() });
    // Set once the adapter exists: while the runtime's events reach pleg, no change needs a poke.
    let runtimeEvents: { readonly live: boolean } = { live: false };
    const cri = instrument(grpc, {
      tracer: telemetry.tracer,
      onCall: (record) => {
        metrics.runtimeCall(record);
        if (isMutatingCriMethod(record.method) && !runtimeEvents.live && !podScope.inOperation()) {
          // Ask pleg to relist now, in the caller's trace: otherwise a periodic relist may see the
          // change first and publish its lifecycle events outside that trace. A call made in a
          // pod's operation (SyncPod, KillPod, its part of a GC) pokes nothing here: the operation
          // pokes once it ends (RuntimeOperations), naming the pod, so no relist of the pod runs
          // while the operation still makes calls (it would compete with them for the runtime and
          // the node's cores, and publish events of a state the operation is still changing).
          bus.publishCore(Subjects.plegRelist(config.NODE_NAME), podScope.poke());
        }
      },
    });

    // Cluster mode: configMaps and secrets (env references, pull secrets) are read here on the node, from the API server.
    const objects = config.KUBECONFIG === undefined ? undefined : openNodeObjects(config.KUBECONFIG, { logger });
    if (objects !== undefined) onClose({ name: 'api-objects', close: () => objects.close() });
    const adapter = await createCriAdapter({
      settings: config,
      bus,
      cri,
      clock: realClock,
      logger,
      tracer: telemetry.tracer,
      metrics,
      backoffStore: await createKvBackoffStore(bus, config.NODE_NAME),
      fenceStore: await createKvFenceStore(bus, config.NODE_NAME),
      eventedPlegMetrics: createEventedPlegConnectionMetrics(registry),
      ...(objects !== undefined ? { envObjects: apiEnvObjectSource(objects), pullSecretSource: apiPullSecretSource(objects) } : {}),
      signal,
    });
    runtimeEvents = adapter.runtimeEvents;
    onClose({
      name: 'cri-adapter',
      close: async () => {
        await adapter.done;
        await adapter.flush();
      },
    });
    // A down runtime takes the adapter out of rotation (readiness); only a stuck loop fails liveness.
    health.register('container-runtime', () => adapter.runtimeHealthy(), { readiness: true });
    health.register('runtime-up-loop', () => adapter.loopAlive());
    logger.info('cri-adapter serving', { endpoint: config.CRI_ENDPOINT, node: config.NODE_NAME, mode: objects === undefined ? 'standalone' : 'cluster' });
  },
});
