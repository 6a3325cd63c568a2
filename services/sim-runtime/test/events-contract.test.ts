/**
 * GetContainerEvents over real gRPC: the simulator and the small fake of `@splitlet/cri/testing`
 * stream the same events (type, subject, the sandbox's and its containers' states as carried) for
 * the same operations, so unit tests on the fake see what the simulator (and containerd ≥ 1.7)
 * sends; and a subscriber that falls behind, or goes away, costs the simulator nothing.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GrpcRuntimeService, isCriError, type ContainerEventResponse, type ContainerEventStream, type CriInput, type PodSandboxConfig } from '@splitlet/cri';
import { startFakeCri, type FakeProgram } from '@splitlet/cri/testing';
import { eventually } from '@splitlet/testkit';
import { createSimRuntime, startSimCri } from '../src/simulator.js';

/** What an event says, with ids replaced by names (the two runtimes make different ids). */
interface SeenEvent {
  type: string;
  subject: string;
  sandbox: string;
  containers: string[];
}

/** The fake's programs: `sh -c 'exit N'` exits N on its own; everything else runs until stopped. */
const fakePrograms = (argv: readonly string[]): FakeProgram | undefined => {
  const m = argv[0] === 'sh' ? /^exit (\d+)$/.exec(argv[2] ?? '') : null;
  return m === null ? undefined : () => Number(m[1]);
};

/**
 * One pod's life on `endpoint`: a sandbox; `app` started; `job` started and exiting on its own (3);
 * `app` killed; `job` removed; `side` started; the sandbox stopped (killing `side`), then removed.
 * Returns the events the runtime streamed meanwhile, ids replaced by names.
 */
async function podLife(endpoint: string, logDir: string): Promise<SeenEvent[]> {
  const rt = await GrpcRuntimeService.connect({ endpoint, connectTimeoutMs: 5000 });
  const abort = new AbortController();
  try {
    const stream = rt.GetContainerEvents({}, { signal: abort.signal });
    await stream.established;
    const collected = collect(stream);
    const names = new Map<string, string>();
    const config: CriInput<PodSandboxConfig> = { metadata: { name: 'life', namespace: 'default', uid: 'uid-life', attempt: 0 }, logDirectory: logDir };
    const { podSandboxId } = await rt.RunPodSandbox({ config });
    names.set(podSandboxId, 'sandbox');
    const create = async (name: string, command: string[]): Promise<string> => {
      mkdirSync(path.join(logDir, name), { recursive: true });
      const { containerId } = await rt.CreateContainer({
        podSandboxId,
        sandboxConfig: config,
        config: { metadata: { name, attempt: 0 }, image: { image: 'busybox:1.36' }, command, logPath: `${name}/0.log` },
      });
      names.set(containerId, name);
      return containerId;
    };
    const exited = (id: string) =>
      eventually(async () => ((await rt.ContainerStatus({ containerId: id })).status?.state === 'CONTAINER_EXITED' ? true : undefined), {
        message: `${names.get(id)} to exit`,
        timeoutMs: 30_000,
      });
    const app = await create('app', ['sleep', '3600']);
    await rt.StartContainer({ containerId: app });
    const job = await create('job', ['sh', '-c', 'exit 3']);
    await rt.StartContainer({ containerId: job });
    await exited(job);
    await rt.StopContainer({ containerId: app, timeout: '0' });
    await rt.RemoveContainer({ containerId: job });
    const side = await create('side', ['sleep', '3600']);
    await rt.StartContainer({ containerId: side });
    await rt.StopPodSandbox({ podSandboxId });
    await rt.RemovePodSandbox({ podSandboxId });
    const events = await collected.until((e) => e.containerEventType === 'CONTAINER_DELETED_EVENT' && e.containerId === podSandboxId);
    return events.map((e) => ({
      type: e.containerEventType,
      subject: names.get(e.containerId) ?? e.containerId,
      sandbox: `${names.get(e.podSandboxStatus?.id ?? '') ?? '?'} ${e.podSandboxStatus?.state ?? 'none'}`,
      containers: e.containersStatuses.map((c) => `${names.get(c.id) ?? c.id} ${c.state}${c.state === 'CONTAINER_EXITED' ? ` ${c.exitCode}` : ''}`),
    }));
  } finally {
    abort.abort();
    rt.close();
  }
}

/** Reads a stream in the background; `until` resolves with every event up to the first that matches. */
function collect(stream: ContainerEventStream): { until: (last: (e: ContainerEventResponse) => boolean) => Promise<ContainerEventResponse[]> } {
  const seen: ContainerEventResponse[] = [];
  let failed: Error | undefined;
  void (async () => {
    try {
      for await (const e of stream) seen.push(e);
    } catch (e) {
      failed = e instanceof Error ? e : new Error(String(e));
    }
  })();
  return {
    until: (last) =>
      eventually(
        async () => {
          if (failed !== undefined) throw failed;
          const i = seen.findIndex(last);
          return i < 0 ? undefined : seen.slice(0, i + 1);
        },
        { message: 'the last event', timeoutMs: 30_000 },
      ),
  };
}

describe('GetContainerEvents: the simulator and the fake agree', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'sim-events-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('streams the same events for the same pod life, over gRPC', async () => {
    const sim = await startSimCri();
    const fake = await startFakeCri({ programs: fakePrograms });
    try {
      mkdirSync(path.join(dir, 'sim'));
      mkdirSync(path.join(dir, 'fake'));
      const fromSim = await podLife(sim.endpoint, path.join(dir, 'sim'));
      const fromFake = await podLife(fake.endpoint, path.join(dir, 'fake'));
      assert.deepEqual(fromFake, fromSim);
      // The life as containerd reports it: a sandbox's own events name the sandbox; every event
      // carries the sandbox's status and all its containers' statuses as they are after the change.
      assert.deepEqual(
        fromSim.map((e) => `${e.type} ${e.subject} | ${e.sandbox} | ${e.containers.join(', ')}`),
        [
          'CONTAINER_CREATED_EVENT sandbox | sandbox SANDBOX_READY | ',
          'CONTAINER_STARTED_EVENT sandbox | sandbox SANDBOX_READY | ',
          'CONTAINER_CREATED_EVENT app | sandbox SANDBOX_READY | app CONTAINER_CREATED',
          'CONTAINER_STARTED_EVENT app | sandbox SANDBOX_READY | app CONTAINER_RUNNING',
          'CONTAINER_CREATED_EVENT job | sandbox SANDBOX_READY | app CONTAINER_RUNNING, job CONTAINER_CREATED',
          'CONTAINER_STARTED_EVENT job | sandbox SANDBOX_READY | app CONTAINER_RUNNING, job CONTAINER_RUNNING',
          'CONTAINER_STOPPED_EVENT job | sandbox SANDBOX_READY | app CONTAINER_RUNNING, job CONTAINER_EXITED 3',
          'CONTAINER_STOPPED_EVENT app | sandbox SANDBOX_READY | app CONTAINER_EXITED 137, job CONTAINER_EXITED 3',
          'CONTAINER_DELETED_EVENT job | sandbox SANDBOX_READY | app CONTAINER_EXITED 137',
          'CONTAINER_CREATED_EVENT side | sandbox SANDBOX_READY | app CONTAINER_EXITED 137, side CONTAINER_CREATED',
          'CONTAINER_STARTED_EVENT side | sandbox SANDBOX_READY | app CONTAINER_EXITED 137, side CONTAINER_RUNNING',
          'CONTAINER_STOPPED_EVENT side | sandbox SANDBOX_READY | app CONTAINER_EXITED 137, side CONTAINER_EXITED 137',
          'CONTAINER_STOPPED_EVENT sandbox | sandbox SANDBOX_NOTREADY | app CONTAINER_EXITED 137, side CONTAINER_EXITED 137',
          'CONTAINER_DELETED_EVENT app | sandbox SANDBOX_NOTREADY | side CONTAINER_EXITED 137',
          'CONTAINER_DELETED_EVENT side | sandbox SANDBOX_NOTREADY | ',
          'CONTAINER_DELETED_EVENT sandbox | sandbox SANDBOX_NOTREADY | ',
        ],
      );
    } finally {
      await sim.close();
      await fake.close();
    }
  });
});

describe('GetContainerEvents: subscribers', () => {
  it('serves several subscribers the same events', async () => {
    const sim = await startSimCri();
    const a = await GrpcRuntimeService.connect({ endpoint: sim.endpoint, connectTimeoutMs: 5000 });
    const b = await GrpcRuntimeService.connect({ endpoint: sim.endpoint, connectTimeoutMs: 5000 });
    const abort = new AbortController();
    try {
      const sa = a.GetContainerEvents({}, { signal: abort.signal });
      const sb = b.GetContainerEvents({}, { signal: abort.signal });
      await Promise.all([sa.established, sb.established]);
      const [ca, cb] = [collect(sa), collect(sb)];
      const { podSandboxId } = await a.RunPodSandbox({ config: { metadata: { name: 'two', namespace: 'default', uid: 'uid-two', attempt: 0 } } });
      await b.RemovePodSandbox({ podSandboxId });
      const isLast = (e: ContainerEventResponse): boolean => e.containerEventType === 'CONTAINER_DELETED_EVENT';
      const [ea, eb] = await Promise.all([ca.until(isLast), cb.until(isLast)]);
      const kinds = (es: ContainerEventResponse[]) => es.map((e) => `${e.containerEventType} ${e.containerId === podSandboxId}`);
      assert.deepEqual(kinds(ea), kinds(eb));
      assert.equal(ea.length, 4); // created, started, stopped, deleted
    } finally {
      abort.abort();
      a.close();
      b.close();
      await sim.close();
    }
  });

  it('cuts off a subscriber that leaves too many events untaken, and keeps serving the others', async () => {
    const sim = createSimRuntime({ maxEventBacklog: 8 });
    const abort = new AbortController();
    try {
      const stuck = sim.GetContainerEvents({}, { signal: abort.signal });
      const live = sim.GetContainerEvents({}, { signal: abort.signal });
      const kept = collect(live);
      for (let i = 0; i < 5; i++) {
        const { podSandboxId } = await sim.RunPodSandbox({ config: { metadata: { name: `p${i}`, namespace: 'default', uid: `uid-${i}`, attempt: 0 } } });
        await sim.RemovePodSandbox({ podSandboxId });
      }
      // 20 events: the one that read none was cut off after 8, with the reason, and holds nothing.
      await assert.rejects(
        (async () => {
          for await (const e of stuck) void e;
        })(),
        (e: unknown) => isCriError(e, 'ResourceExhausted') && /subscriber too slow: 8 events not taken/.test((e as Error).message),
      );
      const all = await kept.until((e) => e.podSandboxStatus?.metadata?.uid === 'uid-4' && e.containerEventType === 'CONTAINER_DELETED_EVENT');
      assert.equal(all.length, 20);
    } finally {
      abort.abort();
      await sim.close();
    }
  });

  it('forgets a subscriber that went away (cancelled over gRPC), and later ones still get every event', async () => {
    const sim = await startSimCri();
    const client = await GrpcRuntimeService.connect({ endpoint: sim.endpoint, connectTimeoutMs: 5000 });
    try {
      for (let i = 0; i < 3; i++) {
        const abort = new AbortController();
        const s = client.GetContainerEvents({}, { signal: abort.signal });
        await s.established;
        abort.abort();
      }
      const abort = new AbortController();
      const s = client.GetContainerEvents({}, { signal: abort.signal });
      await s.established;
      const seen = collect(s);
      const { podSandboxId } = await client.RunPodSandbox({ config: { metadata: { name: 'gone', namespace: 'default', uid: 'uid-gone', attempt: 0 } } });
      const events = await seen.until((e) => e.containerEventType === 'CONTAINER_STARTED_EVENT' && e.containerId === podSandboxId);
      assert.equal(events.length, 2);
      abort.abort();
      // The simulator's subscriber set empties once the server sees the cancels (no leak: events to nobody are not even built).
      await eventually(async () => (sim.sim.eventSubscribers === 0 ? true : undefined), { message: 'every subscriber to be gone', timeoutMs: 30_000 });
    } finally {
      client.close();
      await sim.close();
    }
  });
});
