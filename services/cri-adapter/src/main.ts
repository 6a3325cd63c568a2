/**
 * cri-adapter composition root: config → telemetry → logger → bus → CRI client (instrumented) →
 * domain → endpoints → runService.
 */
import { Subjects } from '@splitlet/api';
import { GrpcRuntimeService, instrument } from '@splitlet/cri';
import { connectNodeBus, realClock, runService, sleep } from '@splitlet/service';
import { createLogger, createMetricsRegistry, startTelemetry } from '@splitlet/telemetry';
import { createKvBackoffStore } from './adapters/kv-state-store.js';
import { serveContainerLogs } from './adapters/container-logs-rpc.js';
import { loadCriAdapterConfig, processEnv } from './config.js';
import { createCriAdapter, isMutatingCriMethod } from './create-cri-adapter.js';
import { createKubeRuntimeMetrics } from './kuberuntime/metrics.js';

const SERVICE = 'cri-adapter';

const config = loadCriAdapterConfig();
const logger = createLogger({ service: SERVICE, level: config.LOG_LEVEL, fields: { node: config.NODE_NAME } });
const telemetry = startTelemetry({
  serviceName: SERVICE,
  nodeName: config.NODE_NAME,
  env: processEnv(),
  onError: (e) => logger.warn('telemetry error', { err: e }),
});
const registry = createMetricsRegistry({ service: SERVICE });
const metrics = createKubeRuntimeMetrics(registry);

await runService({
  name: SERVICE,
  logger,
  port: config.HEALTH_PORT,
  host: config.HEALTH_HOST,
  ...(config.HEALTH_PORT_FILE !== undefined ? { portFile: config.HEALTH_PORT_FILE } : {}),
  registry,
  start: async ({ signal, health, onClose }) => {
    const bus = await connectNodeBus({ service: SERVICE, settings: config, logger, registry, telemetry, signal, onClose });
    // Log files are on disk: served even while the runtime is unreachable.
    serveContainerLogs(bus, config.NODE_NAME, config.POD_LOG_DIR, signal);

    // The runtime may come up after us: keep dialling until it answers or we are stopped.
    let client: GrpcRuntimeService | undefined;
    for (let attempt = 1; client === undefined; attempt++) {
      try {
        client = await GrpcRuntimeService.connect({ endpoint: config.CRI_ENDPOINT, timeoutMs: config.RUNTIME_REQUEST_TIMEOUT_MS, signal });
      } catch (e) {
        if (signal.aborted) return;
        logger.warn('container runtime not reachable yet', { endpoint: config.CRI_ENDPOINT, attempt, err: e });
        if (!(await sleep(Math.min(1000 * attempt, 5000), signal))) return;
      }
    }
    const grpc = client;
    onClose({ name: 'cri-client', close: () => grpc.close() });
    let mutations = 0;
    const cri = instrument(grpc, {
      tracer: telemetry.tracer,
      onCall: (record) => {
        metrics.runtimeCall(record);
        if (isMutatingCriMethod(record.method)) {
          mutations++;
          // Ask pleg to relist now, in the caller's trace: otherwise a periodic relist may see the
          // change first and publish the pod's lifecycle events outside the pod's trace.
          bus.publishCore(Subjects.plegRelist(config.NODE_NAME), {});
        }
      },
    });

    const adapter = await createCriAdapter({
      settings: config,
      bus,
      cri,
      mutations: () => mutations,
      clock: realClock,
      logger,
      tracer: telemetry.tracer,
      metrics,
      backoffStore: await createKvBackoffStore(bus, config.NODE_NAME),
      signal,
    });
    onClose({ name: 'cri-adapter', close: async () => {
      await adapter.done;
      await adapter.flush();
    } });
    // A down runtime takes the adapter out of rotation (readiness); only a stuck loop fails liveness.
    health.register('container-runtime', () => adapter.runtimeHealthy(), { readiness: true });
    health.register('runtime-up-loop', () => adapter.loopAlive());
    logger.info('cri-adapter serving', { endpoint: config.CRI_ENDPOINT, node: config.NODE_NAME });
  },
});
