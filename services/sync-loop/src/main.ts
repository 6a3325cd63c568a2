/**
 * sync-loop: the composition root. One active instance per node (leader lease); the leader turns
 * PodUpdates and PLEG events into desired pods, kill requests and pokes for the pod workers.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { connectNodeBus, isConfigError, realClock, runService } from '@splitlet/service';
import { createLogger, createMetricsRegistry, startTelemetry } from '@splitlet/telemetry';
import { readConfig, type SyncLoopConfig } from './config.js';
import { createKvLeaderLease } from './adapters/kv-leader-lease.js';
import { runLeaderSession, type SessionHealth } from './leader-session.js';
import { admissionNode } from './sync-loop/admission.js';
import { LeaderElector } from './sync-loop/leader-elector.js';
import { createSyncLoopMetrics } from './sync-loop/metrics.js';

const SERVICE = 'sync-loop';

async function main(): Promise<void> {
  let config: SyncLoopConfig;
  try {
    config = readConfig();
  } catch (e) {
    if (!isConfigError(e)) throw e;
    process.stderr.write(`${SERVICE}: ${e.message}\n`);
    process.exit(2);
  }
  const instance = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const logger = createLogger({ service: SERVICE, level: config.LOG_LEVEL, fields: { node: config.NODE_NAME, instance } });
  const telemetry = startTelemetry({
    serviceName: SERVICE,
    nodeName: config.NODE_NAME,
    instanceId: instance,
    env: config.otelEnv,
    onError: (e) => logger.warn('telemetry error', { err: e }),
  });
  const registry = createMetricsRegistry({ service: SERVICE });
  const metrics = createSyncLoopMetrics(registry);
  const node = admissionNode({
    name: config.NODE_NAME,
    labels: config.NODE_LABELS,
    cpu: config.NODE_CPU,
    memory: config.NODE_MEMORY,
    ephemeralStorage: config.NODE_EPHEMERAL_STORAGE,
    maxPods: config.NODE_MAX_PODS,
  });

  await runService({
    name: SERVICE,
    logger,
    port: config.HEALTH_PORT,
    host: config.HEALTH_HOST,
    registry,
    ...(config.HEALTH_PORT_FILE === undefined ? {} : { portFile: config.HEALTH_PORT_FILE }),
    start: async ({ signal, health, onClose }) => {
      const bus = await connectNodeBus({ service: SERVICE, settings: config, logger, registry, telemetry, signal, onClose });

      const elector = new LeaderElector({ store: await createKvLeaderLease(bus, config.NODE_NAME, instance), clock: realClock, logger, signal });
      let session: SessionHealth | undefined;
      health.register('sync-loop', () => (elector.leading && session !== undefined ? session.healthy() : elector.healthy()));
      const electing = elector.run((leaderSignal) =>
        runLeaderSession(
          {
            bus,
            node: config.NODE_NAME,
            partitions: config.PARTITIONS,
            admissionNode: node,
            syncTickMs: config.SYNC_TICK_MS,
            housekeepingMs: config.HOUSEKEEPING_MS,
            containerGcPeriodMs: config.CONTAINER_GC_PERIOD_MS,
            containerGcPolicy: {
              minAgeMs: config.MINIMUM_CONTAINER_TTL_MS,
              maxPerPodContainer: config.MAX_DEAD_CONTAINERS_PER_CONTAINER,
              maxContainers: config.MAX_DEAD_CONTAINERS,
            },
            clock: realClock,
            logger,
            tracer: telemetry.tracer,
            metrics,
          },
          leaderSignal,
          (h) => (session = h),
        ),
      );
      // Closers run after the signal aborted: let the session drain and the lease go before the bus closes.
      onClose({ name: 'leader-election', close: () => electing });
      logger.info('sync-loop started', { instance, allocatable: node.allocatable, partitions: config.PARTITIONS });
    },
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`${SERVICE}: fatal: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
