/**
 * status-manager: the composition root. Consumes `SL_STATUS` into the versioned pod status cache
 * (`sl_status`), standalone mode (no API server).
 */
import { connectNodeBus, isConfigError, realClock, runService } from '@splitlet/service';
import { createLogger, createMetricsRegistry, startTelemetry } from '@splitlet/telemetry';
import { readConfig, type StatusManagerConfig } from './config.js';
import { createKvStatusStore } from './adapters/kv-status-store.js';
import { consumeStatusUpdates } from './adapters/status-consumer.js';
import { createStatusMetrics } from './status/metrics.js';
import { StatusManager } from './status/status-manager.js';

const SERVICE = 'status-manager';
/** The consumer is healthy while it saw a message or a heartbeat within this long. */
const CONSUMER_STALL_MS = 30_000;

async function main(): Promise<void> {
  let config: StatusManagerConfig;
  try {
    config = readConfig();
  } catch (e) {
    if (!isConfigError(e)) throw e;
    process.stderr.write(`${SERVICE}: ${e.message}\n`);
    process.exit(2);
  }
  const logger = createLogger({ service: SERVICE, level: config.LOG_LEVEL, fields: { node: config.NODE_NAME } });
  const telemetry = startTelemetry({
    serviceName: SERVICE,
    nodeName: config.NODE_NAME,
    env: config.otelEnv,
    onError: (e) => logger.warn('telemetry error', { err: e }),
  });
  const registry = createMetricsRegistry({ service: SERVICE });

  await runService({
    name: SERVICE,
    logger,
    port: config.HEALTH_PORT,
    host: config.HEALTH_HOST,
    registry,
    ...(config.HEALTH_PORT_FILE === undefined ? {} : { portFile: config.HEALTH_PORT_FILE }),
    start: async ({ signal, health, onClose }) => {
      const bus = await connectNodeBus({ service: SERVICE, settings: config, logger, registry, telemetry, signal, onClose });

      const manager = new StatusManager({
        store: await createKvStatusStore(bus, config.NODE_NAME),
        clock: realClock,
        logger,
        metrics: createStatusMetrics(registry),
      });
      await manager.load();
      const consumption = await consumeStatusUpdates(bus, manager, { node: config.NODE_NAME, concurrency: config.STATUS_CONCURRENCY, signal });
      // Closers run after the signal aborted: finish in-flight updates before the bus closes.
      onClose({ name: 'status-consumer', close: () => consumption.done });
      health.register('status-consumer', () => {
        const age = realClock.now() - consumption.lastActivity();
        return age <= CONSUMER_STALL_MS
          ? { ok: true }
          : { ok: false, reason: `status consumer was last seen active ${age} ms ago; threshold is ${CONSUMER_STALL_MS} ms` };
      });
      logger.info('status-manager started', { pods: manager.size, concurrency: config.STATUS_CONCURRENCY });
    },
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`${SERVICE}: fatal: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
