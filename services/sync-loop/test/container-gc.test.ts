/**
 * Container GC, the sync-loop side: which pods' content must stay (ShouldPodContentBeRemoved), the
 * state the sync loop hands out, and the StartGarbageCollection loop (period, logs, the
 * ContainerGCFailed event, the span).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeEvent, Streams, type DesiredPod, type KillRequest, type RuntimeGarbageCollectReply, type RuntimeGarbageCollectRequest } from '@splitlet/api';
import { BusError } from '@splitlet/bus';
import { InMemoryBus } from '@splitlet/bus/testing';
import { KubeletPeriods } from '@splitlet/kube';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing } from '@splitlet/telemetry/testing';
import { createBusEventRecorder } from '../src/adapters/bus-publishers.js';
import type { RuntimeGarbageCollector } from '../src/ports.js';
import { ContainerGarbageCollector, DEFAULT_CONTAINER_GC_POLICY, podContentToKeep, type PodStateForGC } from '../src/sync-loop/container-gc.js';
import { RecordingEvents, START, harness, item, pod, update, worker } from './fakes.js';

function desired(uid: string, o: Partial<DesiredPod> = {}): DesiredPod {
  return { type: 'kubelet.podworker.DesiredPod.v1', pod: pod(uid), updateType: 'create', startTime: new Date(START).toISOString(), ...o };
}
const kill = (uid: string): KillRequest => ({ type: 'kubelet.podworker.KillRequest.v1', uid, reason: 'orphaned', requestedAt: 'x' });

describe('podContentToKeep (ShouldPodContentBeRemoved)', () => {
  const cases: Array<{ name: string; desired?: Partial<DesiredPod>; worker?: Parameters<typeof worker>[1]; kill?: boolean; keep: boolean }> = [
    { name: 'desired, no worker yet (just admitted) → keep', desired: {}, keep: true },
    { name: 'desired but rejected by admission (never reaches the workers) → removable', desired: { rejected: { reason: 'OutOfcpu', message: 'x' } }, keep: false },
    { name: 'worker syncing → keep', desired: {}, worker: {}, keep: true },
    { name: 'worker terminated, not deleted (a completed pod still in config) → keep', desired: {}, worker: { state: 'terminated', finished: true }, keep: true },
    { name: 'deleted and terminating → keep', worker: { state: 'terminating', deleted: true }, keep: true },
    { name: 'deleted and terminated → removable', worker: { state: 'terminated', deleted: true, finished: true }, keep: false },
    { name: 'deleted and terminated while still desired (graceful API delete) → removable', desired: {}, worker: { state: 'terminated', deleted: true }, keep: false },
    { name: 'evicted, even while terminating → removable', desired: {}, worker: { state: 'terminating', evicted: true }, keep: false },
    { name: 'a pending kill only (an orphan about to be killed) → keep', kill: true, keep: true },
    { name: 'unknown to the workers → removable', keep: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const keep = podContentToKeep({
        desired: c.desired === undefined ? [] : [desired('p', c.desired)],
        workers: c.worker === undefined ? [] : [worker('p', c.worker)],
        kills: c.kill === true ? [kill('p')] : [],
      });
      assert.deepEqual(keep, c.keep ? ['p'] : []);
    });
  }
});

describe('SyncLoop.podStateForGC', () => {
  it('reports sourcesReady and keeps the desired pods, the workers and the pending kills', async () => {
    const h = await harness();
    assert.deepEqual(await h.loop.podStateForGC(), { allSourcesReady: false, keep: [] });
    await h.loop.handlePodUpdate(update('ADD', [item(pod('a'))]));
    h.workers.map.set('b', worker('b', { state: 'terminated', deleted: true, finished: true }));
    h.workers.map.set('c', worker('c', { state: 'terminating', deleted: true }));
    h.killView.map.set('d', kill('d'));
    assert.deepEqual(await h.loop.podStateForGC(), { allSourcesReady: true, keep: ['a', 'c', 'd'] });
  });
});

/** A runtime GC endpoint that answers from a script and records the requests. */
class ScriptedRuntime implements RuntimeGarbageCollector {
  readonly requests: RuntimeGarbageCollectRequest[] = [];
  readonly answers: Array<Partial<RuntimeGarbageCollectReply> | Error> = [];
  async garbageCollect(request: RuntimeGarbageCollectRequest): Promise<RuntimeGarbageCollectReply> {
    this.requests.push(request);
    const a = this.answers.shift() ?? {};
    if (a instanceof Error) throw a;
    return { type: 'kubelet.runtime.GarbageCollectReply.v1', removedContainers: 0, removedSandboxes: 0, removedLogDirs: 0, ...a };
  }
}

function collector(state: PodStateForGC = { allSourcesReady: true, keep: ['a'] }) {
  const clock = new FakeClock(START);
  const runtime = new ScriptedRuntime();
  const events = new RecordingEvents();
  const logs: Array<{ level: string; msg: string; err?: string }> = [];
  const logger = createLogger({ service: 'sync-loop', level: 'debug', stream: { write: (l: string) => void logs.push(JSON.parse(l) as { level: string; msg: string }) } });
  const tracing = createTestTracing({ serviceName: 'sync-loop' });
  const gc = new ContainerGarbageCollector({ node: 'node-1.example', runtime, podState: async () => state, events, clock, logger, tracer: tracing.tracer });
  return { gc, clock, runtime, events, logs, tracing };
}

describe('ContainerGarbageCollector (StartGarbageCollection)', () => {
  it("sends the kubelet's default policy with the pod state, and logs success at debug", async () => {
    const t = collector({ allSourcesReady: true, keep: ['a', 'b'] });
    t.runtime.answers.push({ removedContainers: 3, removedSandboxes: 1, removedLogDirs: 1 });
    assert.equal(await t.gc.garbageCollect(), true);
    assert.deepEqual(t.runtime.requests, [
      { type: 'kubelet.runtime.GarbageCollectRequest.v1', policy: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 }, allSourcesReady: true, keep: ['a', 'b'] },
    ]);
    assert.deepEqual(DEFAULT_CONTAINER_GC_POLICY, { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 });
    assert.deepEqual(
      t.logs.filter((l) => l.msg.startsWith('Container garbage collection')).map((l) => `${l.level} ${l.msg}`),
      ['debug Container garbage collection succeeded'],
    );
    assert.equal(t.events.events.length, 0);
    const span = t.tracing.spans().find((s) => s.name === 'garbageCollect');
    assert.equal(span?.parentSpanContext, undefined, 'a root span: its own trace');
    assert.equal(span?.attributes['splitlet.gc.removed_containers'], 3);
    assert.equal(span?.attributes['splitlet.gc.keep_pods'], 2);
  });

  it('a failed run logs "Container garbage collection failed" and records ContainerGCFailed on the node; the next success logs at info', async () => {
    const t = collector();
    const timeout = 'no reply on sl.node-1_example.rpc.runtime.garbageCollect within 600000 ms';
    t.runtime.answers.push({ error: 'failed to read podLogsDirectory "/var/log/pods": permission denied' });
    t.runtime.answers.push(new BusError('Timeout', timeout, { retryable: true }));
    t.runtime.answers.push({}, {});
    assert.equal(await t.gc.garbageCollect(), false);
    assert.equal(await t.gc.garbageCollect(), false);
    assert.equal(await t.gc.garbageCollect(), true);
    assert.equal(await t.gc.garbageCollect(), true);
    assert.deepEqual(
      t.logs.filter((l) => l.msg.startsWith('Container garbage collection')).map((l) => `${l.level} ${l.msg}: ${l.err ?? ''}`),
      [
        'error Container garbage collection failed: failed to read podLogsDirectory "/var/log/pods": permission denied',
        `error Container garbage collection failed: ${timeout}`,
        'info Container garbage collection succeeded: ',
        'debug Container garbage collection succeeded: ',
      ],
    );
    const onNode = { kind: 'Node', name: 'node-1.example', namespace: '', uid: 'node-1.example' };
    const source = { component: 'kubelet', host: 'node-1.example' };
    assert.deepEqual(
      t.events.events.map((e) => ({ type: e.eventType, reason: e.reason, message: e.message, on: e.involvedObject, source: e.source })),
      [
        { type: 'Warning', reason: 'ContainerGCFailed', message: 'failed to read podLogsDirectory "/var/log/pods": permission denied', on: onNode, source },
        { type: 'Warning', reason: 'ContainerGCFailed', message: timeout, on: onNode, source },
      ],
    );
  });

  it('no responder before any run succeeded is cri-adapter still starting, not a failure', async () => {
    const t = collector();
    const noResponder = (): BusError =>
      new BusError('NoResponders', 'no responder for sl.node-1_example.rpc.runtime.garbageCollect: is the process that serves it running?', { retryable: true });
    t.runtime.answers.push(noResponder(), {}, noResponder());
    assert.equal(await t.gc.garbageCollect(), false);
    assert.equal(t.events.events.length, 0);
    assert.equal(t.logs.find((l) => l.msg.startsWith('Container garbage collection'))?.msg, 'Container garbage collection skipped: the runtime does not serve it yet');
    assert.equal(await t.gc.garbageCollect(), true);
    assert.equal(await t.gc.garbageCollect(), false);
    assert.deepEqual(
      t.events.events.map((e) => e.reason),
      ['ContainerGCFailed'],
      'once a run succeeded, no responder is a failure',
    );
  });

  it('runs right away, then a period after each run, until aborted', async () => {
    const t = collector();
    const stop = new AbortController();
    const running = t.gc.run(KubeletPeriods.containerGCPeriodMs, stop.signal);
    await t.clock.advanceAsync(0);
    assert.equal(t.runtime.requests.length, 1, 'at once');
    await t.clock.advanceAsync(KubeletPeriods.containerGCPeriodMs - 1);
    assert.equal(t.runtime.requests.length, 1);
    await t.clock.advanceAsync(1);
    assert.equal(t.runtime.requests.length, 2, 'one period later');
    await t.clock.advanceAsync(KubeletPeriods.containerGCPeriodMs);
    assert.equal(t.runtime.requests.length, 3);
    stop.abort();
    await running;
    assert.equal(t.clock.pendingTimers, 0, 'no timer left behind');
    assert.equal(KubeletPeriods.containerGCPeriodMs, 60_000);
  });

  it('an abort does not wait for the run in flight, and its failure is not reported', async () => {
    const t = collector();
    let fail!: (e: Error) => void;
    t.runtime.garbageCollect = () => new Promise((_, reject) => (fail = reject));
    const stop = new AbortController();
    const running = t.gc.run(60_000, stop.signal);
    await t.clock.advanceAsync(0);
    stop.abort();
    await running;
    fail(new BusError('Closed', 'connection closed'));
    await t.clock.advanceAsync(0);
    assert.equal(t.events.events.length, 0);
    assert.ok(!t.logs.some((l) => l.msg === 'Container garbage collection failed'));
  });
});

describe('createBusEventRecorder', () => {
  it("publishes a Node event under the node's token (node names may hold dots), a pod event under its UID", async () => {
    const bus = new InMemoryBus({ node: 'node-1.example' });
    const recorder = createBusEventRecorder(bus, 'node-1.example');
    const event = (kind: string, uid: string): Parameters<typeof recorder.record>[0] => ({
      type: 'kubelet.events.Event.v1',
      eventType: 'Warning',
      reason: 'ContainerGCFailed',
      message: 'x',
      involvedObject: { kind, name: uid, namespace: '', uid },
      source: { component: 'kubelet', host: 'node-1.example' },
      timestamp: new Date(START).toISOString(),
    });
    await recorder.record(event('Node', 'node-1.example'));
    await recorder.record(event('Pod', 'uid-1'));
    assert.deepEqual(
      bus.published.map((m) => m.subject),
      ['sl.node-1_example.events.node-1_example', 'sl.node-1_example.events.uid-1'],
    );
    const stored: string[] = [];
    await bus.readStream(KubeEvent, Streams.events, 'sl.node-1_example.events.*', (e) => stored.push(e.involvedObject.kind));
    assert.deepEqual(stored, ['Node', 'Pod'], 'stored on SL_EVENTS, valid against the KubeEvent schema');
  });
});
