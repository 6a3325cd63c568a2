/**
 * The probe worker's state machine (worker.go doProbe) with a fake clock: initial values, the
 * thresholds, initialDelaySeconds, startup gating, hold after a liveness failure, a new container,
 * errors thrown away, deletion, a stop for containers that will not restart, the first-run jitter,
 * and a restarted prober resuming stored results without a spurious change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BoundPod, Container } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import { ResultsManager } from '../src/prober/results-manager.js';
import { ProbeWorker, type ContainerView } from '../src/prober/worker.js';
import type { ProbeType } from '../src/prober/probe-type.js';
import { MemoryResultsStore, ScriptedProbe, aContainer, aPod, errored, fail, ok, running, silent } from './fakes.js';

interface Rig {
  clock: FakeClock;
  results: ResultsManager;
  store: MemoryResultsStore;
  probe: ScriptedProbe;
  worker: ProbeWorker;
  state: { pod: BoundPod | undefined; container: ContainerView | undefined; started: boolean };
  ended: number;
}

function rig(
  type: ProbeType,
  container: Container,
  probe: ScriptedProbe,
  opts: { results?: ResultsManager; store?: MemoryResultsStore; clock?: FakeClock; managerStartedAt?: number; random?: () => number; pod?: BoundPod } = {},
): Rig {
  const clock = opts.clock ?? new FakeClock(1_000_000);
  const store = opts.store ?? new MemoryResultsStore();
  const results = opts.results ?? new ResultsManager({ store, clock, logger: silent });
  const state = { pod: opts.pod ?? aPod([container]), container: running('c1', clock.now()) as ContainerView | undefined, started: true };
  const r: Rig = { clock, results, store, probe, state, ended: 0, worker: undefined as unknown as ProbeWorker };
  r.worker = new ProbeWorker({
    type,
    uid: 'uid-1',
    container,
    results,
    probe,
    clock,
    managerStartedAt: opts.managerStartedAt ?? 0,
    random: opts.random ?? (() => 0.5),
    view: { pod: () => state.pod, container: () => state.container, started: () => state.started },
    onEnd: () => r.ended++,
  });
  return r;
}

const get = (r: Rig, type: ProbeType, id = 'c1') => r.results.get('uid-1', type, id);

describe('probe worker', () => {
  it('readiness starts Failure and follows successThreshold and failureThreshold (flapping)', async () => {
    const c = aContainer({ readinessProbe: { exec: { command: ['true'] }, successThreshold: 2, failureThreshold: 3, periodSeconds: 1 } });
    const r = rig('readiness', c, new ScriptedProbe(ok, ok, fail, fail, fail, ok, ok));
    assert.equal(await r.worker.doProbe(), true);
    assert.equal(get(r, 'readiness'), 'Failure', 'one success is below successThreshold 2');
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Success', 'two successes');
    await r.worker.doProbe();
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Success', 'two failures are below failureThreshold 3');
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Failure', 'three failures');
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Failure');
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Success');
    assert.deepEqual(
      r.probe.changes.map((x) => x.result),
      ['Success', 'Failure', 'Success'],
    );
    assert.deepEqual(r.probe.observed, ['Success', 'Success', 'Failure', 'Failure', 'Failure', 'Success', 'Success']);
    await r.results.idle();
    assert.equal(r.store.records.get('uid-1')?.readiness?.['c1'], 'Success');
  });

  it('liveness starts Success, fails at the threshold, then holds until a new container', async () => {
    const c = aContainer({ livenessProbe: { exec: { command: ['true'] }, failureThreshold: 2 } });
    const r = rig('liveness', c, new ScriptedProbe(fail));
    await r.worker.doProbe();
    assert.equal(get(r, 'liveness'), 'Success');
    await r.worker.doProbe();
    assert.equal(get(r, 'liveness'), 'Failure');
    assert.equal(r.worker.onHold, true);
    await r.worker.doProbe();
    await r.worker.doProbe();
    assert.equal(r.probe.runs, 2, 'no run while on hold');
    r.state.container = running('c2', r.clock.now());
    await r.worker.doProbe();
    assert.equal(get(r, 'liveness', 'c1'), undefined, 'the old container result is forgotten');
    assert.equal(get(r, 'liveness', 'c2'), 'Success', 'the new container starts at the initial value');
    assert.equal(r.worker.onHold, false);
    assert.equal(r.probe.runs, 3);
  });

  it('waits initialDelaySeconds from the container start', async () => {
    const c = aContainer({ livenessProbe: { exec: { command: ['true'] }, initialDelaySeconds: 5 } });
    const r = rig('liveness', c, new ScriptedProbe(ok));
    await r.worker.doProbe();
    r.clock.advance(4_999);
    await r.worker.doProbe();
    assert.equal(r.probe.runs, 0);
    r.clock.advance(1);
    await r.worker.doProbe();
    assert.equal(r.probe.runs, 1);
  });

  it('holds liveness and readiness back until the container started; startup stops once started', async () => {
    const c = aContainer({ livenessProbe: { exec: { command: ['true'] } }, startupProbe: { exec: { command: ['true'] } } });
    const live = rig('liveness', c, new ScriptedProbe(fail));
    live.state.started = false;
    for (let i = 0; i < 5; i++) await live.worker.doProbe();
    assert.equal(live.probe.runs, 0, 'liveness does not run before the startup probe succeeded');
    live.state.started = true;
    await live.worker.doProbe();
    assert.equal(live.probe.runs, 1);

    const startup = rig('startup', c, new ScriptedProbe(fail, ok));
    startup.state.started = false;
    await startup.worker.doProbe();
    assert.equal(get(startup, 'startup'), 'Unknown', 'one failure is below the threshold 3');
    await startup.worker.doProbe();
    assert.equal(get(startup, 'startup'), 'Success');
    assert.equal(startup.worker.onHold, true, 'a startup result holds the worker');
    startup.state.started = true;
    await startup.worker.doProbe();
    assert.equal(startup.probe.runs, 2);
  });

  it('throws a probe error away (no result, not counted)', async () => {
    const c = aContainer({ readinessProbe: { exec: { command: ['true'] }, failureThreshold: 1 } });
    const r = rig('readiness', c, new ScriptedProbe(ok, errored, errored, ok));
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Success');
    await r.worker.doProbe();
    await r.worker.doProbe();
    assert.equal(get(r, 'readiness'), 'Success');
    assert.deepEqual(r.probe.observed, ['Success']);
  });

  it('sets liveness Success and stops when the pod is being deleted', async () => {
    const c = aContainer({ livenessProbe: { exec: { command: ['true'] }, failureThreshold: 1 } });
    const r = rig('liveness', c, new ScriptedProbe(fail));
    r.state.pod = aPod([c], { deletionTimestamp: '2026-01-01T00:00:00Z' });
    assert.equal(await r.worker.doProbe(), false);
    assert.equal(get(r, 'liveness'), 'Success');
    assert.equal(r.probe.runs, 0);
  });

  it('marks a non-running container Failure and stops when it will not be restarted', async () => {
    const c = aContainer({ readinessProbe: { exec: { command: ['true'] } } });
    const r = rig('readiness', c, new ScriptedProbe(ok), { pod: aPod([c], { restartPolicy: 'Never' }) });
    r.state.container = { id: 'c1', running: false, terminated: true };
    assert.equal(await r.worker.doProbe(), false);
    assert.equal(get(r, 'readiness'), 'Failure');
    r.state.pod = aPod([c], { restartPolicy: 'Always' });
    assert.equal(await r.worker.doProbe(), true);
  });

  it('waits for a created container to start instead of failing it (the next sync would kill it)', async () => {
    const c = aContainer({ livenessProbe: { exec: { command: ['true'] }, failureThreshold: 1 } });
    const r = rig('liveness', c, new ScriptedProbe(ok));
    r.state.container = { id: 'c1', running: false, terminated: false, created: true };
    assert.equal(await r.worker.doProbe(), true);
    assert.equal(get(r, 'liveness'), 'Success', 'the initial value stays');
    r.state.container = running('c1', r.clock.now());
    await r.worker.doProbe();
    assert.equal(r.probe.runs, 1);
    assert.equal(get(r, 'liveness'), 'Success');
  });

  it('jitters the first run within one period only while the prober started recently, then ticks every period', async () => {
    const c = aContainer({ readinessProbe: { exec: { command: ['true'] }, periodSeconds: 10 } });
    const clock = new FakeClock(1_000_000);
    const r = rig('readiness', c, new ScriptedProbe(ok), { clock, managerStartedAt: clock.now() - 2_000, random: () => 0.25 });
    r.worker.start();
    await clock.advanceAsync(2_499);
    assert.equal(r.probe.runs, 0);
    await clock.advanceAsync(1);
    assert.equal(r.probe.runs, 1, 'first run after 0.25 × 10 s');
    await clock.advanceAsync(10_000);
    assert.equal(r.probe.runs, 2);
    r.worker.stop();
    await clock.advanceAsync(30_000);
    assert.equal(r.probe.runs, 2, 'no run after stop');
    assert.equal(clock.pendingTimers, 0);
    assert.equal(r.ended, 1);
    assert.equal(get(r, 'readiness'), undefined, 'a stopped worker forgets its result');

    const clock2 = new FakeClock(1_000_000);
    const late = rig('readiness', c, new ScriptedProbe(ok), { clock: clock2, managerStartedAt: clock2.now() - 60_000, random: () => 0.9 });
    late.worker.start();
    await clock2.advanceAsync(0);
    assert.equal(late.probe.runs, 1, 'no jitter for a worker started long after the prober');
    late.worker.stop();
  });

  it('resumes stored results after a prober restart without a change or a spurious liveness failure', async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryResultsStore();
    store.records.set('uid-1', {
      type: 'kubelet.prober.PodProbeResults.v1',
      uid: 'uid-1',
      liveness: { c1: 'Success' },
      readiness: { c1: 'Success' },
      startup: { c1: 'Success' },
      updatedAt: '',
    });
    const results = new ResultsManager({ store, clock, logger: silent });
    assert.equal(await results.load(), 1);
    const c = aContainer({
      readinessProbe: { exec: { command: ['true'] }, failureThreshold: 3 },
      livenessProbe: { exec: { command: ['true'] }, failureThreshold: 3 },
      startupProbe: { exec: { command: ['true'] } },
    });
    const ready = rig('readiness', c, new ScriptedProbe(fail, ok), { clock, store, results });
    const live = rig('liveness', c, new ScriptedProbe(ok), { clock, store, results });
    const startup = rig('startup', c, new ScriptedProbe(fail), { clock, store, results });
    await ready.worker.doProbe();
    await live.worker.doProbe();
    await startup.worker.doProbe();
    assert.equal(get(ready, 'readiness'), 'Success', 'one failure after a restart does not flip readiness');
    assert.equal(get(live, 'liveness'), 'Success');
    assert.equal(startup.worker.onHold, true, 'a settled startup probe stays settled');
    assert.equal(startup.probe.runs, 0);
    await results.idle();
    assert.equal(store.writes, 0, 'nothing changed, nothing written');
  });
});
