/**
 * pod-worker: the kubelet's pod workers (pod_workers.go + Kubelet.SyncPod / SyncTerminatingPod /
 * SyncTerminatedPod), scaled out over N replicas that share the node's partitions by lease.
 * Composition root only.
 */
import { connectNodeBus, realClock, runService } from '@splitlet/service';
import { createLogger, createMetricsRegistry, startTelemetry } from '@splitlet/telemetry';
import { readConfig } from './config.js';
import { startPodWorkerInstance } from './instance.js';
import { KUBELET_TRACER } from './sync/pod-syncer.js';

const SERVICE = 'pod-worker';

async function main(): Promise<void> {
  const config = readConfig(process.env);
  const logger = createLogger({ service: SERVICE, level: config.LOG_LEVEL, fields: { node: config.NODE_NAME, instance: config.instanceId } });
  const telemetry = startTelemetry({
    serviceName: SERVICE,
    nodeName: config.NODE_NAME,
    instanceId: config.instanceId,
    env: process.env,
    onError: (e) => logger.warn('telemetry error', { err: e }),
  });
  const registry = createMetricsRegistry({ service: SERVICE });

  await runService({
    name: SERVICE,
    logger,
    port: config.HEALTH_PORT,
    host: config.HEALTH_HOST,
    registry,
    ...(config.HEALTH_PORT_FILE !== undefined ? { portFile: config.HEALTH_PORT_FILE } : {}),
    shutdownTimeoutMs: config.DRAIN_TIMEOUT_MS + 10_000,
    start: async ({ signal, health, onClose }) => {
      const bus = await connectNodeBus({ service: SERVICE, settings: config, logger, registry, telemetry, signal, onClose });
      const instance = await startPodWorkerInstance(
        {
          node: config.NODE_NAME,
          instanceId: config.instanceId,
          partitions: config.PARTITIONS,
          leaseRenewMs: config.LEASE_RENEW_MS,
          memberHeartbeatMs: config.MEMBER_HEARTBEAT_MS,
          balanceIntervalMs: config.BALANCE_INTERVAL_MS,
          volumeTimeoutMs: config.VOLUME_TIMEOUT_MS,
          runtimeSyncTimeoutMs: config.RUNTIME_SYNC_TIMEOUT_MS,
          runtimeCacheWaitMs: config.RUNTIME_CACHE_WAIT_MS,
          drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
          runtimeName: config.RUNTIME_NAME,
          maxConcurrentSyncs: config.MAX_CONCURRENT_SYNCS,
          allowPrivileged: config.ALLOW_PRIVILEGED,
          hostIPs: config.HOST_IPS,
        },
        { bus, clock: realClock, logger, tracer: telemetry.tracerProvider.getTracer(KUBELET_TRACER), registry },
      );
      onClose({ name: 'pod-workers', close: () => instance.shutdown() });
      health.register('partitions', () => instance.partitions.healthy());
      health.register('work-consumers', () => instance.consumersHealthy());
      health.register(
        'runtime-cache',
        () => (instance.runtimeCache.caughtUp ? { ok: true } : { ok: false, reason: 'runtime cache watch has not caught up' }),
        { readiness: true },
      );
    },
  });
}

void main().catch((e: unknown) => {
  // Config errors and the like, before runService owns the process.
  process.stderr.write(`${JSON.stringify({ level: 'error', service: SERVICE, msg: 'pod-worker failed to start', err: e instanceof Error ? e.message : String(e) })}\n`);
  process.exit(1);
});
