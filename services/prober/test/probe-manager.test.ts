/**
 * The probe manager: workers follow the desired pods (regular containers and sidecars, none for a
 * rejected pod, replaced on a changed probe, stopped with the pod), read the runtime's containers,
 * and a result change — not a tick — is one span in the pod's current trace episode, whose context
 * the stored record carries on to the sync it causes.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { BoundPod, DesiredPod, RuntimeCacheEntry } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import { createTestTracing } from '@splitlet/telemetry/testing';
import type { ProberMetrics } from '../src/prober/metrics.js';
import { ProbeManager } from '../src/prober/probe-manager.js';
import type { Prober, ProbeRun } from '../src/prober/prober.js';
import type { ProbeType } from '../src/prober/probe-type.js';
import { ResultsManager } from '../src/prober/results-manager.js';
import { MemoryResultsStore, aContainer, aPod, fail, ok, silent } from './fakes.js';

const EPISODE_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CREATION_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const carrier = (traceId: string) => ({ traceparent: `00-${traceId}-b7ad6b7169203331-01` });

function desired(pod: BoundPod, extra: Partial<DesiredPod> = {}): DesiredPod {
  return { type: 'kubelet.podworker.DesiredPod.v1', pod, updateType: 'create', startTime: '', trace: carrier(CREATION_TRACE), ...extra };
}

function runtimeEntry(uid: string, containers: { name: string; id: string }[], withEpisode: boolean): RuntimeCacheEntry {
  return {
    type: 'kubelet.pleg.RuntimeCacheEntry.v1',
    uid,
    timestamp: 0,
    status: {
      uid,
      name: 'p',
      namespace: 'default',
      ips: ['10.88.0.9'],
      sandboxes: [],
      containers: containers.map((c) => ({
        id: c.id,
        name: c.name,
        sandboxId: 's',
        state: 'CONTAINER_RUNNING',
        createdAt: 1,
        startedAt: 0,
        image: 'busybox',
        imageRef: 'x',
        hash: 'h',
        restartCount: 0,
      })),
    },
    ...(withEpisode ? { episode: { trace: carrier(EPISODE_TRACE), at: 1 } } : {}),
  };
}

/** A prober whose results come from `script[type]` (the last one repeats), counting runs. */
function scriptedProber(script: Partial<Record<ProbeType, ProbeRun[]>>): Prober & { runs: Record<ProbeType, number>; ips: string[] } {
  const runs: Record<ProbeType, number> = { liveness: 0, readiness: 0, startup: 0 };
  const ips: string[] = [];
  return {
    runs,
    ips,
    async probe(type, target) {
      ips.push(target.podIP);
      const list = script[type] ?? [ok];
      return list[Math.min(runs[type]++, list.length - 1)]!;
    },
  };
}

const noMetrics: ProberMetrics = { observe: () => undefined, forget: () => undefined };

describe('probe manager', () => {
  const tracing = createTestTracing();
  after(() => tracing.shutdown());

  function setup(prober: Prober) {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryResultsStore();
    const results = new ResultsManager({ store, clock, logger: silent });
    const manager = new ProbeManager({ prober, results, metrics: noMetrics, tracer: tracing.tracer, clock, logger: silent, random: () => 0 });
    return { clock, store, results, manager };
  }

  it('runs one worker per probe of regular and sidecar containers, none for a rejected pod', async () => {
    const { manager } = setup(scriptedProber({}));
    const c = aContainer({ livenessProbe: { exec: { command: ['true'] } }, readinessProbe: { exec: { command: ['true'] } } });
    const side = aContainer({ name: 'side', restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } });
    const plainInit = aContainer({ name: 'init', readinessProbe: { exec: { command: ['true'] } } });
    manager.updatePod(desired(aPod([c], { initContainers: [plainInit, side] })));
    assert.deepEqual(manager.workersOf('uid-1'), ['app/liveness', 'app/readiness', 'side/startup']);
    manager.updatePod(desired(aPod([c]), { rejected: { reason: 'OutOfcpu', message: 'no' } }));
    assert.deepEqual(manager.workersOf('uid-1'), []);
    await manager.stop();
  });

  it('replaces a worker whose probe changed and stops them all with the pod', async () => {
    const { manager, clock, store } = setup(scriptedProber({}));
    const c = aContainer({ readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 } });
    manager.updateRuntime('uid-1', runtimeEntry('uid-1', [{ name: 'app', id: 'c1' }], false));
    manager.updatePod(desired(aPod([c])));
    await clock.advanceAsync(1);
    const changed = aContainer({ readinessProbe: { exec: { command: ['true'] }, periodSeconds: 5 } });
    manager.updatePod(desired(aPod([changed])));
    assert.deepEqual(manager.workersOf('uid-1'), ['app/readiness']);
    assert.equal(manager.workerCount, 1);
    await clock.advanceAsync(1);
    manager.removePod('uid-1');
    assert.equal(manager.workerCount, 0);
    await clock.advanceAsync(20_000);
    assert.equal(clock.pendingTimers, 0, 'no worker left ticking');
    await manager.stop();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(store.records.has('uid-1'), false, 'the pod record is deleted');
  });

  it('records a result change as one span in the pod episode, carried in the stored record; ticks add none', async () => {
    tracing.reset();
    const prober = scriptedProber({ liveness: [ok, fail, fail, fail, fail, fail], readiness: [ok] });
    const { manager, clock, store, results } = setup(prober);
    const c = aContainer({
      livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 2 },
      readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
    });
    manager.updateRuntime('uid-1', runtimeEntry('uid-1', [{ name: 'app', id: 'c1' }], true));
    manager.updatePod(desired(aPod([c])));
    for (let i = 0; i < 6; i++) await clock.advanceAsync(1000);
    await results.idle();
    assert.equal(results.get('uid-1', 'liveness', 'c1'), 'Failure');
    assert.equal(results.get('uid-1', 'readiness', 'c1'), 'Success');
    assert.ok(
      prober.ips.every((ip) => ip === '10.88.0.9'),
      'probes target the pod IP',
    );
    const live = tracing.spansNamed('probe Liveness');
    assert.equal(live.length, 1, 'one span for the change to Failure, none for the passing or held ticks');
    assert.equal(live[0]!.spanContext().traceId, EPISODE_TRACE, "in the runtime's current episode");
    assert.equal(live[0]!.status.code, 2);
    assert.equal(live[0]!.attributes['k8s.container.name'], 'app');
    const ready = tracing.spansNamed('probe Readiness');
    assert.equal(ready.length, 1, 'readiness Failure → Success once');
    const record = store.records.get('uid-1');
    assert.equal(record?.liveness?.['c1'], 'Failure');
    assert.match(record?.trace?.['traceparent'] ?? '', new RegExp(`^00-${EPISODE_TRACE}-${live[0]!.spanContext().spanId}-01$`));
    await manager.stop();
  });

  it('falls back to the desired pod trace when the runtime has no episode', async () => {
    tracing.reset();
    const { manager, clock, results } = setup(scriptedProber({ readiness: [ok] }));
    const c = aContainer({ readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 1 } });
    manager.updateRuntime('uid-1', runtimeEntry('uid-1', [{ name: 'app', id: 'c1' }], false));
    manager.updatePod(desired(aPod([c])));
    await clock.advanceAsync(2000);
    await results.idle();
    const spans = tracing.spansNamed('probe Readiness');
    assert.equal(spans.length, 1, 'Failure (initial) → Success');
    assert.equal(spans[0]!.spanContext().traceId, CREATION_TRACE, "the desired pod's trace");
    assert.equal(spans[0]!.status.code, 0);
    await manager.stop();
  });
});
