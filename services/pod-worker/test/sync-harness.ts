/**
 * A PodSyncer wired to in-memory fakes, for unit tests of the sync decisions.
 */
import type { BoundPod, DesiredPod, KillRequest, SyncPodType } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import type { TestTracing } from '@splitlet/telemetry/testing';
import { LeaseGuard } from '../src/partitions/partition-guard.js';
import { SyncAborted } from '../src/pod-workers/pod-workers.js';
import type { SyncControl } from '../src/pod-workers/pod-workers.js';
import type { SyncMetrics } from '../src/ports.js';
import { PodSyncer } from '../src/sync/pod-syncer.js';
import { FakeEventSink, FakePodStateStore, FakeProbeResults, FakeRuntime, FakeRuntimeCache, FakeStatusSink, FakeVolumes, silentLog } from './fakes.js';

export const PP = 0;
export const EPOCH = 7;
export const T0 = Date.parse('2026-01-01T00:00:00Z');

export class RecordingMetrics implements SyncMetrics {
  workerDuration: string[] = [];
  workerStart: number[] = [];
  podStart: number[] = [];
  podStartSli: [number, number][] = [];
  settled: boolean[] = [];
  observeWorkerDuration(op: string): void {
    this.workerDuration.push(op);
  }
  observeWorkerStart(s: number): void {
    this.workerStart.push(s);
  }
  observePodStart(s: number): void {
    this.podStart.push(s);
  }
  observePodStartSli(sli: number, total: number): void {
    this.podStartSli.push([sli, total]);
  }
  observeSettledSync(statusSent: boolean): void {
    this.settled.push(statusSent);
  }
}

export interface Control {
  ctl: SyncControl;
  kill(): void;
  stop(): void;
  readonly terminating: boolean;
}

export function control(trigger?: SyncControl['trigger']): Control {
  const ac = new AbortController();
  const stopAc = new AbortController();
  let terminating = false;
  stopAc.signal.addEventListener('abort', () => ac.abort(stopAc.signal.reason));
  return {
    ctl: {
      signal: ac.signal,
      stopSignal: stopAc.signal,
      trigger,
      triggerKind: undefined,
      markTerminating: () => {
        terminating = true;
      },
    },
    kill: () => ac.abort(new SyncAborted('kill')),
    stop: () => stopAc.abort(new SyncAborted('stop')),
    get terminating() {
      return terminating;
    },
  };
}

export function harness(tracing: TestTracing, opts: { allowPrivileged?: boolean; resyncMs?: number } = {}) {
  const clock = new FakeClock(T0);
  const store = new FakePodStateStore();
  const cache = new FakeRuntimeCache();
  const runtime = new FakeRuntime();
  const volumes = new FakeVolumes();
  const status = new FakeStatusSink();
  const events = new FakeEventSink();
  const metrics = new RecordingMetrics();
  const probes = new FakeProbeResults();
  const syncer = new PodSyncer({
    node: 'node-a',
    runtimeName: 'containerd',
    allowPrivileged: opts.allowPrivileged ?? false,
    volumeTimeoutMs: 120_000,
    runtimeSyncTimeoutMs: 240_000,
    store,
    runtimeCache: cache,
    runtime,
    volumes,
    status,
    events,
    metrics,
    tracer: tracing.tracer,
    clock,
    logger: silentLog,
    random: () => 0,
    probes,
    ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
  });
  const guard = new LeaseGuard(PP, EPOCH, clock.now(), 7000, () => clock.now());
  const key = (uid: string) => `${PP}.${uid}`;
  // As sync-loop: every write of a desired record or a kill request is followed by a poke naming
  // the revisions of both as sync-loop last wrote them (the desired one: none once deleted; the
  // kill: 0 until it wrote one).
  const desiredRevisions = new Map<string, number>();
  const killRevisions = new Map<string, number>();
  const poke = (uid: string): void => syncer.poked(guard, uid, { desired: desiredRevisions.get(uid), kill: killRevisions.get(uid) ?? 0 });
  return {
    clock,
    store,
    cache,
    runtime,
    volumes,
    status,
    events,
    metrics,
    probes,
    syncer,
    guard,
    sync: (uid: string, c: Control = control()) => syncer.sync(guard, uid, c.ctl),
    /** Syncs until the sync no longer asks to run again (at most 5 times). */
    async syncAll(uid: string): Promise<number> {
      let n = 0;
      for (; n < 5; n++) {
        const r = await syncer.sync(guard, uid, control().ctl);
        if (r.again !== true) return n + 1;
      }
      return n;
    },
    desire(pod: BoundPod, updateType: SyncPodType = 'create', extra: Partial<DesiredPod> = {}): number {
      const uid = pod.metadata.uid;
      const revision = store.desired.put(key(uid), {
        type: 'kubelet.podworker.DesiredPod.v1',
        pod,
        updateType,
        startTime: new Date(clock.now()).toISOString(),
        ...extra,
      });
      desiredRevisions.set(uid, revision);
      poke(uid);
      return revision;
    },
    undesire(uid: string): void {
      store.desired.delete(key(uid));
      desiredRevisions.delete(uid);
      poke(uid);
    },
    killReq(uid: string, extra: Partial<KillRequest> = {}): number {
      const revision = store.kill.create(key(uid), {
        type: 'kubelet.podworker.KillRequest.v1',
        uid,
        reason: 'removed',
        requestedAt: new Date(clock.now()).toISOString(),
        ...extra,
      });
      killRevisions.set(uid, revision);
      poke(uid);
      return revision;
    },
    /** sync-loop shortens a kill's grace (compare-and-swap), then pokes. */
    updateKill(uid: string, value: KillRequest, revision: number): number {
      const next = store.kill.update(key(uid), value, revision);
      killRevisions.set(uid, next);
      poke(uid);
      return next;
    },
    rec: (uid: string) => store.rec(PP, uid),
  };
}
