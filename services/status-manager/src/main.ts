/**
 * status-manager: the composition root. Consumes `SL_STATUS` into the versioned pod status cache
 * (`sl_status`), standalone mode (no API server).
 */
import { realClock, runNodeProcess } from '@splitlet/service';
import { processEnv, StatusManagerEnv } from './config.js';
import { createKvStatusStore } from './adapters/kv-status-store.js';
import { consumeStatusUpdates } from './adapters/status-consumer.js';
import { createStatusMetrics } from './status/metrics.js';
import { StatusManager } from './status/status-manager.js';

/** The consumer is healthy while it saw a message or a heartbeat within this long. */
const CONSUMER_STALL_MS = 30_000;

await runNodeProcess({
  service: 'status-manager',
  schema: StatusManagerEnv,
  env: processEnv(),
  start: async ({ config, bus, registry, logger, signal, health, onClose }) => {
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
