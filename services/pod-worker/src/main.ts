/**
 * pod-worker: the kubelet's pod workers (pod_workers.go + Kubelet.SyncPod / SyncTerminatingPod /
 * SyncTerminatedPod), scaled out over N replicas that share the node's partitions by lease.
 * Composition root only.
 */
import { realClock, runNodeProcess } from '@splitlet/service';
import { PodWorkerEnv, processEnv } from './config.js';
import { startPodWorkerInstance } from './instance.js';
import { KUBELET_TRACER } from './sync/pod-syncer.js';

await runNodeProcess({
  service: 'pod-worker',
  schema: PodWorkerEnv,
  env: processEnv(),
  instanceId: (config) => config.instanceId,
  shutdownTimeoutMs: (config) => config.DRAIN_TIMEOUT_MS + 10_000,
  start: async ({ config, bus, telemetry, registry, logger, health, onClose }) => {
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
        resyncMs: config.SYNC_FREQUENCY_MS,
      },
      { bus, clock: realClock, logger, tracer: telemetry.tracerProvider.getTracer(KUBELET_TRACER), registry },
    );
    onClose({ name: 'pod-workers', close: () => instance.shutdown() });
    health.register('partitions', () => instance.partitions.healthy());
    health.register('work-consumers', () => instance.consumersHealthy());
    health.register('runtime-cache', () => (instance.runtimeCache.caughtUp ? { ok: true } : { ok: false, reason: 'runtime cache watch has not caught up' }), { readiness: true });
  },
});
