/**
 * sync-loop: the composition root. One active instance per node (leader lease); the leader turns
 * PodUpdates and PLEG events into desired pods, kill requests and pokes for the pod workers.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { realClock, runNodeProcess } from '@splitlet/service';
import { processEnv, SyncLoopEnv } from './config.js';
import { watchNodeCapacity } from './adapters/kv-node-capacity.js';
import { createKvLeaderLease } from './adapters/kv-leader-lease.js';
import { runLeaderSession, type SessionHealth } from './leader-session.js';
import { LeaderElector } from './sync-loop/leader-elector.js';
import { createSyncLoopMetrics } from './sync-loop/metrics.js';

/** This process's identity in the leader lease (a standby and a restarted leader differ). */
const instance = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;

await runNodeProcess({
  service: 'sync-loop',
  schema: SyncLoopEnv,
  env: processEnv(),
  instanceId: () => instance,
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const node = config.NODE_NAME;
    const metrics = createSyncLoopMetrics(registry);
    const capacity = await watchNodeCapacity(bus, node, logger, signal);
    onClose({ name: 'node-capacity-watch', close: () => capacity.done });
    health.register(
      'node-capacity',
      () => (capacity.current() !== undefined ? { ok: true } : { ok: false, reason: `no capacity published for node ${node} yet (volume-manager publishes it)` }),
      { readiness: true },
    );

    const elector = new LeaderElector({ store: await createKvLeaderLease(bus, node, instance), clock: realClock, logger, signal });
    let session: SessionHealth | undefined;
    health.register('sync-loop', () => (elector.leading && session !== undefined ? session.healthy() : elector.healthy()));
    const electing = elector.run((leaderSignal, fence) =>
      runLeaderSession(
        {
          bus,
          node,
          partitions: config.PARTITIONS,
          nodeLabels: config.NODE_LABELS,
          nodeCapacity: capacity,
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
        fence,
        (h) => (session = h),
      ),
    );
    // Closers run after the signal aborted: let the session drain and the lease go before the bus closes.
    onClose({ name: 'leader-election', close: () => electing });
    logger.info('sync-loop started', { instance, labels: config.NODE_LABELS, partitions: config.PARTITIONS });
  },
});
