/**
 * status-manager: the composition root. Consumes `SL_STATUS` into the versioned pod status cache
 * (`sl_status`); with `KUBECONFIG` (cluster mode) also reports pod statuses, deletions, the Node and
 * its Lease to the API server.
 */
import { realClock, runNodeProcess } from '@splitlet/service';
import { processEnv, StatusManagerEnv } from './config.js';
import { createKvStatusStore } from './adapters/kv-status-store.js';
import { consumeStatusUpdates } from './adapters/status-consumer.js';
import type { ClusterReporting } from './api/cluster-reporting.js';
import { createStatusMetrics } from './status/metrics.js';
import { StatusManager } from './status/status-manager.js';

/** The consumer is healthy while it saw a message or a heartbeat within this long. */
const CONSUMER_STALL_MS = 30_000;

await runNodeProcess({
  service: 'status-manager',
  schema: StatusManagerEnv,
  env: processEnv(),
  start: async ({ config, bus, registry, logger, signal, health, onClose }) => {
    let cluster: ClusterReporting | undefined;
    const manager = new StatusManager({
      store: await createKvStatusStore(bus, config.NODE_NAME),
      clock: realClock,
      logger,
      metrics: createStatusMetrics(registry),
      onChange: (uid, record) => cluster?.changed(uid, record),
    });
    await manager.load();
    if (config.KUBECONFIG !== undefined) {
      // Loaded only in cluster mode: standalone starts without the API server client and reporters.
      const { startClusterReporting } = await import('./api/cluster-reporting.js');
      cluster = await startClusterReporting({
        kubeconfig: config.KUBECONFIG,
        bus,
        manager,
        node: config.NODE_NAME,
        runtimeVersion: config.CONTAINER_RUNTIME_VERSION,
        nodeStatus: {
          updateMs: config.NODE_STATUS_UPDATE_FREQUENCY_MS,
          reportMs: config.NODE_STATUS_REPORT_FREQUENCY_MS,
          leaseDurationSeconds: config.NODE_LEASE_DURATION_SECONDS,
        },
        limits: { kubeApiQps: config.KUBE_API_QPS, kubeApiBurst: config.KUBE_API_BURST, eventQps: config.EVENT_RECORD_QPS, eventBurst: config.EVENT_BURST },
        registry,
        logger,
        signal,
      });
      const reporting = cluster;
      onClose({ name: 'cluster-reporting', close: () => reporting.done });
      health.register('api-lease', () => reporting.health());
    }
    const consumption = await consumeStatusUpdates(bus, manager, { node: config.NODE_NAME, concurrency: config.STATUS_CONCURRENCY, signal });
    // Closers run after the signal aborted: finish in-flight updates before the bus closes.
    onClose({ name: 'status-consumer', close: () => consumption.done });
    health.register('status-consumer', () => {
      const age = realClock.now() - consumption.lastActivity();
      return age <= CONSUMER_STALL_MS ? { ok: true } : { ok: false, reason: `status consumer was last seen active ${age} ms ago; threshold is ${CONSUMER_STALL_MS} ms` };
    });
    logger.info('status-manager started', { pods: manager.size, concurrency: config.STATUS_CONCURRENCY, mode: config.KUBECONFIG === undefined ? 'standalone' : 'cluster' });
  },
});
