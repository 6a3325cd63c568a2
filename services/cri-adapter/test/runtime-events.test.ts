/**
 * The evented PLEG's cri-adapter half: an event's part of its pod translated with the relist's code,
 * the watcher's subscription life, and the forwarder's order, coalescing and numbering.
 */
import assert from 'node:assert/strict';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import { ROOT_CONTEXT, context, createContextKey, type Context } from '@opentelemetry/api';
import type { RuntimeEventMessage, RuntimePodStatus } from '@splitlet/api';
import { CriError, type ContainerEventResponse, type ContainerEventStream, type RuntimeService } from '@splitlet/cri';
import { createFakeRuntime, type FakeRuntimeService } from '@splitlet/cri/testing';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing } from '@splitlet/telemetry/testing';
import { eventually } from '@splitlet/testkit';
import { createNodeFiles } from '../src/adapters/node-files.js';
import { RuntimeEventForwarder } from '../src/evented/runtime-event-forwarder.js';
import { RuntimeEventWatcher, type RuntimeEventNotice, type RuntimeEventSink } from '../src/evented/runtime-event-watcher.js';
import { RuntimeStatusReader, type ContainerEventPart } from '../src/kuberuntime/runtime-status-reader.js';
import { testPrograms } from './programs.js';

const labels = (uid: string) => ({ 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': `p-${uid}`, 'io.kubernetes.pod.namespace': 'ns' });
const quiet = () => createLogger({ service: 'test', level: 'error', stream: { write: () => undefined } });

/** Every event a runtime streams, collected in the background. */
function collect(stream: ContainerEventStream): ContainerEventResponse[] {
  const seen: ContainerEventResponse[] = [];
  void (async () => {
    for await (const e of stream) seen.push(e);
  })();
  return seen;
}

describe('RuntimeStatusReader.fromContainerEvent', () => {
  let rt: FakeRuntimeService;
  beforeEach(() => {
    rt = createFakeRuntime({ programs: testPrograms });
  });
  afterEach(() => rt.close());

  it("gives the event's sandbox and containers exactly as the relist reads the pod", async () => {
    const abort = new AbortController();
    const events = collect(rt.GetContainerEvents({}, { signal: abort.signal }));
    const reader = new RuntimeStatusReader(rt, createNodeFiles(''));
    const { podSandboxId } = await rt.RunPodSandbox({ config: { metadata: { name: 'p-a', namespace: 'ns', uid: 'a', attempt: 0 }, labels: labels('a') } });
    const start = async (name: string, command: string[]): Promise<string> => {
      const { containerId } = await rt.CreateContainer({
        podSandboxId,
        config: {
          metadata: { name, attempt: 0 },
          image: { image: 'busybox:1.36', userSpecifiedImage: 'busybox:1.36' },
          command,
          labels: { ...labels('a'), 'io.kubernetes.container.name': name },
          annotations: { 'io.kubernetes.container.hash': 'h', 'io.kubernetes.container.restartCount': '2' },
        },
      });
      await rt.StartContainer({ containerId });
      return containerId;
    };
    await start('app', ['sleep', '3600']);
    const job = await start('job', ['sh', '-c', 'sleep 0.2; exit 3']);
    await eventually(() => events.some((e) => e.containerId === job && e.containerEventType === 'CONTAINER_STOPPED_EVENT'), { message: 'job stopped' });
    abort.abort();

    let last: ContainerEventPart | undefined;
    for (const e of events) last = (await reader.fromContainerEvent(e)) ?? last;
    const [relisted] = await new RuntimeStatusReader(rt, createNodeFiles('')).relist();
    assert.ok(last !== undefined && relisted !== undefined);
    assert.equal(last.uid, 'a');
    assert.equal(last.sandboxId, podSandboxId);
    assert.deepEqual(last.status, relisted);
    assert.equal(last.status.containers.find((c) => c.id === job)?.exitCode, 3);
    assert.deepEqual(last.status.ips, relisted.ips);
    assert.ok(last.status.ips.length === 1);

    // The sandbox's own DELETED event: nothing of it is left.
    const deleted = await reader.fromContainerEvent({
      containerId: podSandboxId,
      containerEventType: 'CONTAINER_DELETED_EVENT',
      createdAt: '5000000',
      podSandboxStatus: (await rt.PodSandboxStatus({ podSandboxId })).status,
      containersStatuses: [],
    });
    assert.deepEqual(deleted?.status.sandboxes, []);
    assert.deepEqual(deleted?.status.containers, []);
    assert.equal(deleted?.observedAt, 5);
  });

  it('skips events without a sandbox status or of sandboxes that are not a pod', async () => {
    const reader = new RuntimeStatusReader(rt, createNodeFiles(''));
    assert.equal(
      await reader.fromContainerEvent({ containerId: 'x', containerEventType: 'CONTAINER_STOPPED_EVENT', createdAt: '1', podSandboxStatus: null, containersStatuses: [] }),
      undefined,
    );
    const { podSandboxId } = await rt.RunPodSandbox({ config: { metadata: { name: 'bare', namespace: 'ns', uid: 'u', attempt: 0 } } });
    const status = (await rt.PodSandboxStatus({ podSandboxId })).status;
    assert.equal(
      await reader.fromContainerEvent({
        containerId: podSandboxId,
        containerEventType: 'CONTAINER_STARTED_EVENT',
        createdAt: '1',
        podSandboxStatus: status,
        containersStatuses: [],
      }),
      undefined,
    );
  });
});

/** A sink that records what the watcher hands on. */
class RecordingSink implements RuntimeEventSink {
  readonly log: string[] = [];
  streamUp(stream: string): void {
    this.log.push(`up ${stream.length}`);
  }
  event(n: RuntimeEventNotice): void {
    this.log.push(`${n.type} ${n.part.uid}`);
  }
  streamDown(reason: string): void {
    this.log.push(`down ${reason}`);
  }
}

describe('RuntimeEventWatcher', () => {
  it('subscribes, hands on each event in order, and subscribes again after the stream broke', async () => {
    const rt = createFakeRuntime();
    const sink = new RecordingSink();
    const counts = { connected: 0, failed: 0 };
    const reader = new RuntimeStatusReader(rt, createNodeFiles(''));
    const watcher = new RuntimeEventWatcher({
      runtime: rt,
      translate: (e) => reader.fromContainerEvent(e),
      sink,
      metrics: { connected: () => counts.connected++, failed: () => counts.failed++ },
      clock: new FakeClock(0),
      logger: quiet(),
    });
    const abort = new AbortController();
    const done = watcher.run(abort.signal);
    await eventually(() => watcher.live, { message: 'live' });
    const { podSandboxId } = await rt.RunPodSandbox({ config: { metadata: { name: 'p-a', namespace: 'ns', uid: 'a', attempt: 0 }, labels: labels('a') } });
    await rt.StopPodSandbox({ podSandboxId });
    await eventually(() => sink.log.length === 4, { message: 'three events' });
    assert.deepEqual(sink.log, ['up 16', 'CONTAINER_CREATED_EVENT a', 'CONTAINER_STARTED_EVENT a', 'CONTAINER_STOPPED_EVENT a']);
    assert.equal(counts.connected, 1);
    // The runtime goes away: its streams end; the watcher reports it and keeps trying.
    await rt.close();
    await eventually(() => sink.log.length === 5, { message: 'down' });
    assert.match(sink.log[4]!, /^down the runtime ended the container event stream/);
    assert.equal(watcher.live, false);
    assert.equal(counts.failed, 1);
    abort.abort();
    await done;
  });

  it('takes Unimplemented (containerd 1.6) as no events at all: nothing is reported, and it asks again much later', async () => {
    let calls = 0;
    const runtime: Pick<RuntimeService, 'GetContainerEvents'> = {
      GetContainerEvents: () => {
        calls++;
        const established = Promise.reject(new CriError('Unimplemented', 'unknown method GetContainerEvents for service runtime.v1.RuntimeService'));
        established.catch(() => undefined);
        return { established, [Symbol.asyncIterator]: () => ({ next: () => established.then(() => ({ done: true as const, value: undefined })) }) };
      },
    };
    const sink = new RecordingSink();
    const clock = new FakeClock(0);
    const counts = { connected: 0, failed: 0 };
    const watcher = new RuntimeEventWatcher({
      runtime,
      translate: () => Promise.resolve(undefined),
      sink,
      metrics: { connected: () => counts.connected++, failed: () => counts.failed++ },
      clock,
      logger: quiet(),
      unimplementedRetryMs: 60_000,
    });
    const abort = new AbortController();
    const done = watcher.run(abort.signal);
    await eventually(() => calls === 1 && clock.pendingTimers === 1, { message: 'the first attempt' });
    await clock.advanceAsync(59_000);
    assert.equal(calls, 1);
    await clock.advanceAsync(1000);
    await eventually(() => calls === 2, { message: 'the second attempt' });
    assert.deepEqual(sink.log, []);
    assert.deepEqual(counts, { connected: 0, failed: 0 });
    abort.abort();
    await done;
  });
});

/** A publisher that records the forwarder's messages and the context of each. */
function recorder(): { sent: Array<{ msg: RuntimeEventMessage; ctx: Context | undefined }>; send: (msg: RuntimeEventMessage, ctx: Context | undefined) => void } {
  const sent: Array<{ msg: RuntimeEventMessage; ctx: Context | undefined }> = [];
  return { sent, send: (msg, ctx) => sent.push({ msg, ctx }) };
}

const status = (uid: string, tag: string): RuntimePodStatus => ({ uid, name: tag, namespace: 'ns', ips: [], sandboxes: [], containers: [] });
const notice = (uid: string, sandboxId: string, observedAt: number, tag = `${uid}@${observedAt}`): RuntimeEventNotice => ({
  part: { uid, sandboxId, status: status(uid, tag), observedAt },
  containerId: sandboxId,
  type: 'CONTAINER_STARTED_EVENT',
});
const brief = (m: RuntimeEventMessage): string => {
  switch (m.type) {
    case 'kubelet.runtime.EventStreamState.v1':
      return `${m.seq} ${m.state}`;
    case 'kubelet.runtime.ContainerEvents.v1':
      return `${m.seq} events ${m.uid}/${m.sandboxId} ${m.status.name} (${m.events.length})`;
    case 'kubelet.runtime.PodOperated.v1':
      return `${m.seq} operated ${m.uid} ${m.status.name} at ${m.timestamp}`;
  }
};

describe('RuntimeEventForwarder', () => {
  it('holds an operation’s events: creations until it ends, a running container at most holdMs (a long image pull does not hide it)', () => {
    const clock = new FakeClock(0);
    const pub = recorder();
    const f = new RuntimeEventForwarder({ publisher: pub, clock, coalesceMs: 10, heartbeatMs: 1000, holdMs: 1000 });
    f.streamUp('s');
    f.opStarted('a');
    f.event(notice('a', 's1', 10, 'sandbox created'));
    f.event(notice('a', 's1', 20, 'sandbox started'));
    f.event({ ...notice('a', 's1', 30, 'app started'), containerId: 'app', type: 'CONTAINER_STARTED_EVENT' });
    f.opStarted('b');
    f.event({ ...notice('b', 's2', 40, 'created only'), containerId: 'x', type: 'CONTAINER_CREATED_EVENT' });
    clock.advance(999);
    assert.deepEqual(
      pub.sent.map((s) => brief(s.msg)),
      ['1 live'],
    );
    // The heartbeat at 1000: a's operation is holdMs old and a container of it runs: its parts go out
    // before the state. b's has only created things: still held.
    clock.advance(1);
    assert.deepEqual(
      pub.sent.map((s) => brief(s.msg)),
      ['1 live', '2 events a/s1 app started (3)', '3 live'],
    );
    f.event(notice('a', 's1', 1500, 'container started'));
    clock.advance(10);
    assert.equal(brief(pub.sent.at(-1)!.msg), '4 events a/s1 container started (1)');
    f.opEnded('a', { status: status('a', 'read'), readAt: 1400, timestamp: 1600 });
    assert.deepEqual(
      pub.sent.slice(4).map((s) => brief(s.msg)),
      ['5 operated a read at 1601', '6 events a/s1 container started (1)'],
    );
    clock.advance(5000);
    assert.ok(!pub.sent.some((s) => s.msg.type === 'kubelet.runtime.ContainerEvents.v1' && s.msg.uid === 'b'));
    f.close();
  });

  it('numbers every message of a stream, coalesces one sandbox over the window, and sends the live state every second after what was pending', () => {
    const clock = new FakeClock(1000);
    const pub = recorder();
    const f = new RuntimeEventForwarder({ publisher: pub, clock, coalesceMs: 10, heartbeatMs: 1000 });
    assert.equal(f.live, false);
    f.streamUp('s1');
    assert.equal(f.live, true);
    f.event(notice('a', 'sa', 1000, 'a1'));
    f.event(notice('b', 'sb', 1001, 'b1'));
    f.event(notice('a', 'sa', 1002, 'a2'));
    clock.advance(10);
    f.event(notice('a', 'sa', 1015, 'a3'));
    clock.advance(990);
    assert.deepEqual(
      pub.sent.map((s) => brief(s.msg)),
      ['1 live', '2 events a/sa a2 (2)', '3 events b/sb b1 (1)', '4 events a/sa a3 (1)', '5 live'],
    );
    assert.ok(pub.sent.every((s) => s.msg.stream === 's1'));
    assert.equal((pub.sent[4]!.msg as { at: number }).at, 2000);
    // Down: what was pending first, then the state; no more heartbeats, and a new stream starts at 1.
    f.event(notice('a', 'sa', 2001, 'a4'));
    f.streamDown('the container event stream failed: boom');
    assert.equal(f.live, false);
    clock.advance(5000);
    assert.deepEqual(
      pub.sent.slice(5).map((s) => brief(s.msg)),
      ['6 events a/sa a4 (1)', '7 down'],
    );
    f.streamUp('s2');
    assert.equal(pub.sent.at(-1)!.msg.seq, 1);
    f.close();
  });

  it("after an operation: its status, stamped after its reply, then the newer events again, in the operation's trace", async () => {
    const tracing = createTestTracing({ register: true }); // the active-context manager
    after(() => tracing.shutdown());
    const clock = new FakeClock(5000);
    const pub = recorder();
    const f = new RuntimeEventForwarder({ publisher: pub, clock, coalesceMs: 10 });
    f.streamUp('s');
    const key = createContextKey('op');
    const opCtx = ROOT_CONTEXT.setValue(key, 'the operation');
    // The operation's hooks run in its context (RuntimeOperations calls them inside the pod's operation).
    context.with(opCtx, () => f.opStarted('a'));
    f.event(notice('b', 'sb', 5001, 'other pod'));
    f.event(notice('a', 's1', 5001, 'sandbox up'));
    clock.advance(10); // the other pod's part goes out; the operation's pod's parts are held
    f.event(notice('a', 's1', 5003, 'before-read'));
    f.event(notice('a', 's2', 5020, 'after-read'));
    const covered = context.with(opCtx, () => f.opEnded('a', { status: status('a', 'read'), readAt: 5015, timestamp: 5030 }));
    assert.equal(covered, true);
    clock.advance(100);
    // The read saw what happened before it (by more than the clocks' skew): those parts are dropped; the newer one follows the status.
    assert.deepEqual(
      pub.sent.map((s) => brief(s.msg)),
      ['1 live', '2 events b/sb other pod (1)', '3 operated a read at 5031', '4 events a/s2 after-read (1)'],
    );
    assert.equal(pub.sent[1]!.ctx?.getValue(key), undefined);
    assert.equal(pub.sent[2]!.ctx?.getValue(key), 'the operation');
    assert.equal(pub.sent[3]!.ctx?.getValue(key), 'the operation');
    // An event older than the operation's read that arrives after it ended (the stream lags) is not
    // sent; one within the clocks' skew of the read is (pleg settles which came first).
    f.event(notice('a', 's1', 5004, 'late'));
    clock.advance(10);
    assert.equal(pub.sent.length, 4);
    f.event(notice('a', 's1', 5010, 'late, maybe not'));
    clock.advance(10);
    assert.equal(brief(pub.sent.at(-1)!.msg), '5 events a/s1 late, maybe not (1)');
    // An operation without a status is covered while live; nothing is covered once down.
    f.opStarted('b');
    f.event(notice('b', 'sb', 5200, 'during a failed sync'));
    assert.equal(f.opEnded('b'), true);
    clock.advance(10);
    assert.equal(brief(pub.sent.at(-1)!.msg), '6 events b/sb during a failed sync (1)');
    f.streamDown('gone');
    f.opStarted('c');
    assert.equal(f.opEnded('c', { status: status('c', 'x'), readAt: 1, timestamp: 2 }), false);
    f.close();
  });
});
