/**
 * Cluster mode wiring: the API client from the kubeconfig, the pod status syncer (on every written
 * status, and every 10 s over the cached pods whose API copy — a watch of the node's pods — differs), the node reporter (registration, status, Lease) and
 * the event poster (`SL_EVENTS` → core/v1 Events).
 */
import { existsSync } from 'node:fs';
import { Buckets, Keys, NodeCapacity, NodeRuntimeStatus, errorMessage, type PodStatusRecord } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { realClock, sleep, TokenBucket } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import type { StatusManager } from '../status/status-manager.js';
import { Gauge, Histogram, type Registry } from 'prom-client';
import { createKubeRest } from './kube-rest.js';
import { rateLimitedRest } from './rate-limited-rest.js';
import { postEventsToApi } from './event-poster.js';
import { MirrorPods } from './mirror-pods.js';
import { NodePods } from './node-pods.js';
import { NodeReporter } from './node-reporter.js';
import { PodStatusSyncer, STATUS_SYNC_PERIOD_MS } from './pod-status-syncer.js';

/** Running cluster reporting. */
export interface ClusterReporting {
  /** A status was written (`record`) or removed (`undefined`). */
  changed(uid: string, record: PodStatusRecord | undefined): void;
  /** Health: failing when the node Lease was not renewed within its duration (40 s). */
  health(): { ok: true } | { ok: false; reason: string };
  /** Resolves once every loop stopped (after the signal aborted). */
  readonly done: Promise<void>;
}

/** Options of {@link startClusterReporting}. */
export interface ClusterReportingOptions {
  readonly kubeconfig: string;
  readonly bus: Pick<Bus, 'kv' | 'consume'>;
  readonly manager: Pick<StatusManager, 'records' | 'podRemoved'>;
  readonly node: string;
  readonly runtimeVersion?: string | undefined;
  /** nodeStatusUpdateFrequency, nodeStatusReportFrequency (ms) and nodeLeaseDurationSeconds. */
  readonly nodeStatus?: { readonly updateMs: number; readonly reportMs: number; readonly leaseDurationSeconds: number };
  /** kubeAPIQPS / kubeAPIBurst and eventRecordQPS / eventBurst (eventQps 0: events are not limited). @default no limits */
  readonly limits?: { readonly kubeApiQps: number; readonly kubeApiBurst: number; readonly eventQps: number; readonly eventBurst: number };
  /** Where rest_client_rate_limiter_duration_seconds is registered. @default not recorded */
  readonly registry?: Registry;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}

/** Starts reporting to the API server until `signal` aborts. */
export async function startClusterReporting(o: ClusterReportingOptions): Promise<ClusterReporting> {
  // `splitlet up` starts the API server beside us: its kubeconfig appears once it listens.
  let logged = false;
  while (!existsSync(o.kubeconfig)) {
    if (!logged) o.logger.info('waiting for the kubeconfig', { path: o.kubeconfig });
    logged = true;
    if (!(await sleep(500, o.signal))) break;
  }
  const api = await createKubeRest(o.kubeconfig);
  const host = api.host;
  const waited =
    o.registry === undefined
      ? undefined
      : new Histogram({
          name: 'rest_client_rate_limiter_duration_seconds',
          help: 'Client side rate limiter latency in seconds. Broken down by verb, and host.',
          labelNames: ['verb', 'host'],
          buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
          registers: [o.registry],
        });
  const observe = (verb: string, seconds: number): void => waited?.observe({ verb, host }, seconds);
  const limits = o.limits;
  // The kubelet's main client (kubeAPIQPS) carries the pods' traffic; its event client (eventRecordQPS)
  // the events. Its heartbeat client, the Node's Lease, has no limit: the node reporter is not limited.
  const podApi = limits === undefined ? api : rateLimitedRest(api, new TokenBucket(limits.kubeApiQps, limits.kubeApiBurst, realClock), { observe });
  const eventApi = limits === undefined || limits.eventQps === 0 ? api : rateLimitedRest(api, new TokenBucket(limits.eventQps, limits.eventBurst, realClock), { observe });
  const capacityKv = await o.bus.kv(Buckets.nodeCapacity, NodeCapacity);
  const runtimeKv = await o.bus.kv(Buckets.nodeRuntime, NodeRuntimeStatus);
  const reporter: NodeReporter = new NodeReporter({
    api,
    node: o.node,
    clock: realClock,
    logger: o.logger,
    capacity: async () => (await capacityKv.get(Keys.node(o.node)))?.value ?? undefined,
    runtime: async () => (await runtimeKv.get(Keys.node(o.node)))?.value ?? undefined,
    ...(o.runtimeVersion === undefined ? {} : { runtimeVersion: o.runtimeVersion }),
    ...(o.nodeStatus === undefined
      ? {}
      : { statusUpdateMs: o.nodeStatus.updateMs, statusReportMs: o.nodeStatus.reportMs, leaseDurationSeconds: o.nodeStatus.leaseDurationSeconds }),
  });
  // The resync compares against the watched API copy of the node's pods instead of GETting each.
  const nodePods = new NodePods(podApi, o.node, o.logger);
  const podsDone = nodePods.run(o.signal);
  const syncer = new PodStatusSyncer(podApi, new MirrorPods(podApi, o.node, () => reporter.nodeUid), o.logger, nodePods);
  if (o.registry !== undefined) {
    new Gauge({
      name: 'splitlet_status_api_syncs_pending',
      help: "Pods whose status sync to the API server is running or waiting (behind the pod's sync in flight, or for a kubeAPIQPS token).",
      registers: [o.registry],
      collect() {
        this.set(syncer.pending);
      },
    });
  }
  const nodeDone = reporter.run(o.signal);
  const events = await postEventsToApi(o.bus, eventApi, { node: o.node, logger: o.logger, signal: o.signal });
  // A pod removed from its source is no longer reported (the kubelet's status manager finds no
  // pod-manager pod for it); its mirror pod goes once its status is removed.
  const reportable = function* (): Generator<PodStatusRecord> {
    for (const r of o.manager.records()) if (!o.manager.podRemoved(r.uid)) yield r;
  };
  const resync = setInterval(() => void syncer.resync(reportable()), STATUS_SYNC_PERIOD_MS);
  const done = new Promise<void>((resolve) => o.signal.addEventListener('abort', () => resolve(), { once: true })).then(() => {
    clearInterval(resync);
    return Promise.all([nodeDone, podsDone, events.done]).then(() => undefined);
  });
  const startedAt = realClock.now();
  const leaseMs = reporter.leaseDurationSeconds * 1000;
  o.logger.info('reporting to the API server', { kubeconfig: o.kubeconfig, node: o.node });
  return {
    changed(uid, record) {
      if (record === undefined) {
        syncer.forget(uid).catch((e: unknown) => o.logger.warn('Failed deleting a mirror pod', { podUID: uid, err: errorMessage(e) }));
        return;
      }
      if (o.manager.podRemoved(uid)) return;
      syncer.sync(record).catch((e: unknown) => o.logger.warn('Failed to update status for pod', { podUID: uid, pod: `${record.namespace}/${record.name}`, err: errorMessage(e) }));
    },
    health() {
      const age = realClock.now() - (reporter.leaseRenewedAt ?? startedAt);
      return age <= leaseMs ? { ok: true } : { ok: false, reason: `node lease kube-node-lease/${o.node} was last renewed ${age} ms ago; lease duration is ${leaseMs} ms` };
    },
    done,
  };
}
