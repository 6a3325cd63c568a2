/**
 * volume-manager's composition root: config → telemetry → logger → bus → domain → adapters →
 * runService. No logic lives here.
 */
import { connectNodeBus, realClock, runService } from '@splitlet/service';
import { createLogger, createMetricsRegistry, startTelemetry } from '@splitlet/telemetry';
import { processEnv, readConfig } from './config.js';
import { busEventRecorder } from './adapters/event-publisher.js';
import { execMounter } from './adapters/exec-mounter.js';
import { kvVolumeStore } from './adapters/kv-volume-store.js';
import { promVolumeMetrics } from './adapters/metrics.js';
import { serveVolumeRpc } from './adapters/rpc-handlers.js';
import { podPaths } from './volumes/pod-dirs.js';
import { VolumeManager } from './volumes/volume-manager.js';

const NAME = 'volume-manager';
/** An operation running longer than this (a hung mount) makes the process unhealthy. */
const STUCK_OPERATION_MS = 120_000;

const config = readConfig();
const logger = createLogger({ service: NAME, level: config.logLevel, fields: { node: config.nodeName } });
const telemetry = startTelemetry({
  serviceName: NAME,
  nodeName: config.nodeName,
  env: processEnv(),
  onError: (e) => logger.warn('telemetry error', { err: e }),
});
const registry = createMetricsRegistry({ service: NAME });

await runService({
  name: NAME,
  logger,
  port: config.healthPort,
  host: config.healthHost,
  registry,
  ...(config.healthPortFile !== undefined ? { portFile: config.healthPortFile } : {}),
  start: async ({ signal, health, onClose }) => {
    const bus = await connectNodeBus({ service: NAME, settings: { NATS_URL: config.natsUrl, NODE_NAME: config.nodeName, PUBLISH_SPANS: config.publishSpans }, logger, registry, telemetry, signal, onClose });

    const vm = new VolumeManager({
      nodeName: config.nodeName,
      paths: podPaths(config.rootDir),
      mounter: execMounter(),
      store: await kvVolumeStore(bus, config.nodeName),
      events: busEventRecorder(bus, config.nodeName),
      clock: realClock,
      logger,
      tracer: telemetry.tracer,
      allowTmpfs: config.allowTmpfs,
      metrics: promVolumeMetrics(registry),
    });
    const restored = await vm.reconstruct();
    logger.info('volume state reconstructed', { pods: restored, rootDir: config.rootDir, allowTmpfs: config.allowTmpfs });

    serveVolumeRpc(bus, config.nodeName, vm, signal);
    health.register('volume-operations', () => {
      const age = vm.oldestOperationMs();
      return age <= STUCK_OPERATION_MS ? { ok: true } : { ok: false, reason: `a volume operation has been running for ${age} ms; threshold is ${STUCK_OPERATION_MS} ms` };
    });
    health.register('nats', () => (bus.isClosed() ? { ok: false, reason: 'NATS connection closed' } : { ok: true }), { readiness: true });
  },
});
