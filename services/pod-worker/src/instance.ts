/**
 * Assembles one pod-worker instance on a connected bus: runtime cache watch, pod syncer, sync
 * limiter, partition manager (leases, members, balancing) and per-partition runners.
 * `main.ts` calls it once; integration tests call it several times in one process, one bus
 * connection each, to play several replicas.
 */
import type { Tracer } from '@opentelemetry/api';
import type { Registry } from 'prom-client';
import type { Bus } from '@splitlet/bus';
import { busEventSink, busRuntimeClient, busStatusSink, busVolumeClient } from './adapters/bus-clients.js';
import { createKvProbeResults } from './adapters/kv-probe-results.js';
import { KvLeaseStore, KvMemberStore, KvPodStateStore } from './adapters/kv-stores.js';
import { createPromSyncMetrics, registerPartitionGauges } from './adapters/prom-metrics.js';
import { watchRuntimeCache } from './adapters/runtime-cache-watch.js';
import { busWorkSource } from './adapters/work-consumer.js';
import { PartitionManager } from './partitions/partition-manager.js';
import { createPartitionStarter } from './partitions/partition-runner.js';
import type { RunningPartition } from './partitions/partition-runner.js';
import type { PodWorkers, SyncEventHook } from './pod-workers/pod-workers.js';
import { createSyncLimiter } from './pod-workers/sync-limiter.js';
import type { Clock, Log } from './ports.js';
import { noMetrics } from './ports.js';
import { RuntimeStatusCache } from './runtime-cache/runtime-status-cache.js';
import { PodSyncer } from './sync/pod-syncer.js';

/** Settings of one instance (the parsed env, in short). */
export interface InstanceSettings {
  readonly node: string;
  readonly instanceId: string;
  readonly partitions: number;
  readonly leaseRenewMs: number;
  readonly memberHeartbeatMs: number;
  readonly balanceIntervalMs: number;
  readonly volumeTimeoutMs: number;
  readonly runtimeSyncTimeoutMs: number;
  readonly runtimeCacheWaitMs: number;
  readonly drainTimeoutMs: number;
  readonly runtimeName: string;
  readonly maxConcurrentSyncs: number;
  readonly allowPrivileged: boolean;
  readonly hostIPs?: readonly string[];
  /** syncFrequency: the resync period of a pod whose last sync succeeded. @default 60000 */
  readonly resyncMs?: number;
}

/** Dependencies of {@link startPodWorkerInstance}. */
export interface InstanceDeps {
  readonly bus: Bus;
  readonly clock: Clock;
  readonly logger: Log;
  readonly tracer: Tracer;
  /** Prometheus registry for the kubelet metrics; none → not recorded. */
  readonly registry?: Registry;
  /** Test hook: every sync start/end. */
  readonly onSyncEvent?: SyncEventHook;
  /** @default Math.random */
  readonly random?: () => number;
}

/** A running instance. */
export interface PodWorkerInstance {
  readonly instanceId: string;
  readonly partitions: PartitionManager;
  readonly runtimeCache: RuntimeStatusCache;
  /** Pod workers of the partitions held now. */
  workers(): ReadonlyMap<number, PodWorkers>;
  /**
   * Health by progress of the work consumers: every held partition's consumer saw a message or a
   * heartbeat within `thresholdMs`.
   */
  consumersHealthy(thresholdMs?: number): { ok: boolean; reason?: string };
  /** Graceful stop: drain, release every lease (others take over at once), leave the member set. */
  shutdown(): Promise<void>;
  /** Crash-like stop: abort every sync, keep leases (they expire by TTL). */
  abandon(): Promise<void>;
}

/** Starts an instance; resolves after its first balance round. */
export async function startPodWorkerInstance(s: InstanceSettings, d: InstanceDeps): Promise<PodWorkerInstance> {
  const { bus, clock, logger } = d;
  const ac = new AbortController();
  const runtimeCache = new RuntimeStatusCache({ clock, logger, maxWaitMs: s.runtimeCacheWaitMs });
  const watch = await watchRuntimeCache(bus, s.node, runtimeCache, ac.signal);
  watch.done.catch((e: unknown) => logger.error('runtime cache watch ended', { err: String(e) }));

  const [store, leases, members] = await Promise.all([
    KvPodStateStore.open(bus, s.node),
    KvLeaseStore.open(bus, s.node),
    KvMemberStore.open(bus, s.node, () => clock.now(), { signal: ac.signal }),
  ]);
  const syncer = new PodSyncer({
    node: s.node,
    runtimeName: s.runtimeName,
    allowPrivileged: s.allowPrivileged,
    volumeTimeoutMs: s.volumeTimeoutMs,
    runtimeSyncTimeoutMs: s.runtimeSyncTimeoutMs,
    store,
    runtimeCache,
    probes: await createKvProbeResults(bus, s.node),
    runtime: busRuntimeClient(bus, s.node),
    volumes: busVolumeClient(bus, s.node),
    status: busStatusSink(bus, s.node),
    events: busEventSink(bus, s.node),
    metrics: d.registry ? createPromSyncMetrics(d.registry) : noMetrics,
    tracer: d.tracer,
    clock,
    logger,
    ...(d.random !== undefined ? { random: d.random } : {}),
    ...(s.hostIPs !== undefined && s.hostIPs.length > 0 ? { hostIPs: s.hostIPs } : {}),
    ...(s.resyncMs !== undefined ? { resyncMs: s.resyncMs } : {}),
  });
  const limiter = createSyncLimiter(s.maxConcurrentSyncs);
  const running = new Map<number, RunningPartition>();
  const start = createPartitionStarter({
    instance: s.instanceId,
    store,
    work: busWorkSource(bus, { node: s.node, partitions: s.partitions }),
    limiter,
    clock,
    logger,
    syncFor: (guard) => syncer.forPartition(guard),
    onPoke: (guard, uid, named) => syncer.poked(guard, uid, named),
    drainTimeoutMs: s.drainTimeoutMs,
    ...(d.onSyncEvent !== undefined ? { onSyncEvent: d.onSyncEvent } : {}),
    onStarted: (pp, w) => running.set(pp, w),
    onStopped: (pp) => running.delete(pp),
  });
  const partitions = new PartitionManager({
    instance: s.instanceId,
    partitions: s.partitions,
    leases,
    members,
    clock,
    logger,
    start,
    renewMs: s.leaseRenewMs,
    heartbeatMs: s.memberHeartbeatMs,
    balanceMs: s.balanceIntervalMs,
  });
  if (d.registry) {
    registerPartitionGauges(d.registry, {
      owned: () => partitions.owned().length,
      inFlight: () => [...running.values()].reduce((n, r) => n + r.workers.inFlight, 0),
    });
  }
  await partitions.start();
  logger.info('pod-worker instance started', { instance: s.instanceId, partitions: s.partitions, owned: partitions.owned() });
  return {
    instanceId: s.instanceId,
    partitions,
    runtimeCache,
    workers: () => new Map([...running].map(([pp, r]) => [pp, r.workers])),
    consumersHealthy: (thresholdMs = 60_000) => {
      const now = Date.now();
      const stale = [...running].filter(([, r]) => r.consumption !== undefined && now - r.consumption.lastActivity() > thresholdMs).map(([pp]) => pp);
      return stale.length === 0 ? { ok: true } : { ok: false, reason: `work consumers of partitions ${stale.join(',')} idle for more than ${thresholdMs} ms` };
    },
    shutdown: async () => {
      await partitions.shutdown();
      ac.abort();
    },
    abandon: async () => {
      await partitions.abandon();
      ac.abort();
    },
  };
}
