/**
 * What only the leader runs, wired for one leadership term: the views, the sync loop rebuilt from
 * KV, the two consumers, the work-queue tick, housekeeping and container garbage collection.
 * Returns once `signal` aborted and everything drained.
 */
import type { Tracer } from '@opentelemetry/api';
import type { ContainerGCPolicy } from '@splitlet/api';
import type { Bus, Consumption } from '@splitlet/bus';
import { ProgressMonitor, sleep, type Clock, type HealthStatus } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { consumeConfig, consumePleg } from './adapters/consumers.js';
import { createBusEventRecorder, createBusRuntimeGarbageCollector, createBusStatusSink, createBusVolumeCleaner, createBusWorkPoker } from './adapters/bus-publishers.js';
import type { NodeCapacityView } from './adapters/kv-node-capacity.js';
import { KillRevisions } from './adapters/kill-revisions.js';
import { createKvAppliedUpdatesStore, createKvDesiredStore, createKvKillStore, createKvSourcesStore } from './adapters/kv-stores.js';
import { startClusterViews } from './adapters/kv-views.js';
import { admissionNode } from './sync-loop/admission.js';
import { watchProbeResults } from './adapters/probe-results-watch.js';
import { ContainerGarbageCollector } from './sync-loop/container-gc.js';
import type { SyncLoopMetrics } from './sync-loop/metrics.js';
import { fencedPorts } from './sync-loop/fenced-ports.js';
import type { LeaderFence } from './sync-loop/leader-fence.js';
import { SyncLoop } from './sync-loop/sync-loop.js';

/** The loop is unhealthy when its tick has not run for this long (simplified SyncLoopHealthCheck). */
const TICK_STALL_MS = 10_000;
/** A consumer is unhealthy when it saw neither a message nor a heartbeat for this long. */
const CONSUMER_STALL_MS = 30_000;
/** A term is unhealthy when it has not started its loop this long after the lease was won. */
const SESSION_START_MS = 60_000;
/** An ended term still draining after this long logs what it waits on (again every period). */
const DRAIN_WARN_MS = 10_000;
/** volume-manager `cleanup` deadline. */
const VOLUME_CLEANUP_TIMEOUT_MS = 10_000;
/** cri-adapter `garbageCollect` deadline: a run waits for the pods' operations in progress. */
const CONTAINER_GC_TIMEOUT_MS = 600_000;

/** Dependencies of a leader session. */
export interface LeaderSessionDeps {
  readonly bus: Bus;
  readonly node: string;
  readonly partitions: number;
  /** The node's labels (admission: node selector, affinity). */
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** The node's capacity as the node publishes it; the session waits for it before it admits anything. */
  readonly nodeCapacity: Pick<NodeCapacityView, 'present' | 'current'>;
  readonly syncTickMs: number;
  readonly housekeepingMs: number;
  /** ContainerGCPeriod. */
  readonly containerGcPeriodMs: number;
  /** @default the kubelet's (MinAge 0, MaxPerPodContainer 1, MaxContainers -1) */
  readonly containerGcPolicy?: ContainerGCPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics: SyncLoopMetrics;
}

/** Health of the running session (swapped in while leading). */
export interface SessionHealth {
  healthy(): HealthStatus;
}

/**
 * Runs one leadership term; `onHealth` receives the term's health check: while it starts, whether it
 * spent more than SESSION_START_MS on one step of its own; once it runs, the loop's. Every write
 * to sl_desired, sl_kill and SL_WORK passes `fence` and carries its epoch.
 */
export async function runLeaderSession(deps: LeaderSessionDeps, signal: AbortSignal, fence: LeaderFence, onHealth: (h: SessionHealth | undefined) => void): Promise<void> {
  const { bus, node, partitions, clock, logger } = deps;
  // Until the loop runs, health names the step the term waits on, and fails when one step of its
  // own took over SESSION_START_MS. Waiting for the node's capacity is not this process's fault
  // (readyz reports it): no step then.
  let step: string | undefined;
  let since = clock.now();
  const enter = (next: string | undefined): void => {
    step = next;
    since = clock.now();
  };
  enter('starting the watches of sl_worker, sl_runtime and sl_kill');
  onHealth({
    healthy: () => {
      const ms = clock.now() - since;
      return step !== undefined && ms > SESSION_START_MS ? { ok: false, reason: `the sync loop has not started, ${ms} ms into: ${step}` } : { ok: true };
    },
  });
  // The revisions of the kill requests, from the sl_kill watch and the term's own writes, for the pokes to name.
  const killRevisions = new KillRevisions();
  const views = await startClusterViews(bus, node, signal, killRevisions);
  const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  enter('waiting for the watches of sl_worker, sl_runtime and sl_kill to replay the buckets');
  await Promise.race([views.ready, aborted]);
  // No admission without the node's capacity: pods wait in SL_CONFIG until the node published it.
  enter(undefined);
  await Promise.race([deps.nodeCapacity.present, aborted]);
  if (signal.aborted) {
    await views.done;
    onHealth(undefined);
    return;
  }

  const desired = await createKvDesiredStore(bus, node, partitions);
  const writes = fencedPorts(fence, desired, await createKvKillStore(bus, node, partitions, killRevisions));
  const poker = writes.poker((admit) =>
    createBusWorkPoker(bus, node, partitions, { admit, desiredRevision: (uid) => desired.revision(uid), killRevision: (uid) => killRevisions.revision(uid) }),
  );
  const loop = new SyncLoop({
    node,
    admissionNode: () => {
      const capacity = deps.nodeCapacity.current();
      if (capacity === undefined) throw new Error(`no capacity published for node ${node}`); // unreachable: awaited above
      return admissionNode({ name: node, labels: deps.nodeLabels, allocatable: capacity.allocatable });
    },
    desired: writes.desired,
    kills: writes.kills,
    work: poker,
    status: createBusStatusSink(bus, node),
    events: createBusEventRecorder(bus, node),
    volumes: createBusVolumeCleaner(bus, node, VOLUME_CLEANUP_TIMEOUT_MS),
    sources: await createKvSourcesStore(bus, node),
    applied: writes.applied(await createKvAppliedUpdatesStore(bus, node)),
    views,
    clock,
    logger,
    tracer: deps.tracer,
    metrics: deps.metrics,
  });
  enter('loading sl_desired and sl_node');
  await loop.start();
  enter('starting the config and PLEG consumers');

  const consumers: Consumption[] = [];
  consumers.push(await consumeConfig(bus, loop, node, signal));
  consumers.push(await consumePleg(bus, loop, node, signal));
  const probes = await watchProbeResults(bus, node, loop, poker, logger, signal);

  const tickMonitor = new ProgressMonitor({ name: 'sync loop', thresholdMs: TICK_STALL_MS, clock });
  onHealth({
    healthy: () => {
      const tick = tickMonitor.healthy();
      if (!tick.ok) return tick;
      for (const c of consumers) {
        const age = clock.now() - c.lastActivity();
        if (age > CONSUMER_STALL_MS) return { ok: false, reason: `a sync-loop consumer was last seen active ${age} ms ago; threshold is ${CONSUMER_STALL_MS} ms` };
      }
      return { ok: true };
    },
  });

  const ticking = (async () => {
    tickMonitor.progress();
    while (await sleep(deps.syncTickMs, signal, clock)) {
      await loop.tick();
      tickMonitor.progress();
    }
  })();
  const housekeeping = (async () => {
    while (await sleep(deps.housekeepingMs, signal, clock)) await loop.housekeeping();
  })();
  const containerGc = new ContainerGarbageCollector({
    node,
    runtime: createBusRuntimeGarbageCollector(bus, node, CONTAINER_GC_TIMEOUT_MS),
    podState: () => loop.podStateForGC(),
    events: createBusEventRecorder(bus, node),
    ...(deps.containerGcPolicy === undefined ? {} : { policy: deps.containerGcPolicy }),
    clock,
    logger,
    tracer: deps.tracer,
  }).run(deps.containerGcPeriodMs, signal);
  logger.info('sync loop running', { desiredPods: loop.desiredPodCount, allSourcesReady: loop.sourcesReady.allReady() });

  await drained(
    {
      'the sync tick': ticking,
      housekeeping,
      'container GC': containerGc,
      'the SL_CONFIG consumer': consumers[0]!.done,
      'the SL_PLEG consumer': consumers[1]!.done,
      'the sl_worker, sl_runtime and sl_kill watches': views.done,
      'the probe results watch': probes.done,
    },
    signal,
    clock,
    logger,
  );
  onHealth(undefined);
}

/**
 * Resolves (or rejects) as `Promise.all` of `parts` does. Once `signal` aborted, every
 * DRAIN_WARN_MS a term still draining logs the parts it waits on: a new term cannot start (and
 * `stopped leading` is not logged) until this one has ended.
 */
export async function drained(parts: Record<string, Promise<unknown>>, signal: AbortSignal, clock: Clock, logger: Logger): Promise<void> {
  const pending = new Set(Object.keys(parts));
  const all = Promise.all(Object.entries(parts).map(([name, p]) => p.finally(() => pending.delete(name))));
  const done = new AbortController();
  const watching = (async () => {
    const aborted = signal.aborted ? Promise.resolve() : new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    const finished = new Promise<void>((resolve) => done.signal.addEventListener('abort', () => resolve(), { once: true }));
    await Promise.race([aborted, finished]);
    const since = clock.now();
    while (await sleep(DRAIN_WARN_MS, done.signal, clock)) {
      logger.warn('the ended leader term is still draining', { ms: clock.now() - since, waitingOn: [...pending] });
    }
  })();
  try {
    await all;
  } finally {
    done.abort();
    await watching;
  }
}
