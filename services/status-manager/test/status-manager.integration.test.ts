/**
 * status-manager against a real nats-server: the real process (src/main.ts through tsx), status
 * updates published on `SL_STATUS`, records read from `sl_status`, and dead letters.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Buckets, DeadLetter, Keys, PodStatusRecord, PodStatusUpdate, Streams, Subjects } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aPod, aRunningStatus, aTerminatedStatus } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, makeTempDir, spawnProcess, startNatsServer, type NatsServer, type SpawnedProcess, type TempDir } from '@splitlet/testkit';

const NODE = 'node-b';
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

function update(uid: string, status: PodStatusUpdate['status'], couldHaveRunningContainers = true, kind: PodStatusUpdate['kind'] = 'set'): PodStatusUpdate {
  const pod = aPod({ metadata: { uid, name: `web-${uid}` } });
  const u: PodStatusUpdate = {
    type: 'kubelet.status.PodStatusUpdate.v1',
    kind,
    uid,
    name: pod.metadata.name,
    namespace: 'default',
    pod,
    couldHaveRunningContainers,
    at: new Date().toISOString(),
  };
  if (status !== undefined) u.status = status;
  return u;
}

describe('status-manager (integration)', () => {
  let nats: NatsServer;
  let bus: NatsBus;
  let dir: TempDir;
  let proc: SpawnedProcess;
  const ac = new AbortController();
  const deadLetters: DeadLetter[] = [];

  before(async () => {
    nats = await startNatsServer();
    dir = await makeTempDir('status-manager-it-');
    bus = await connectBus({ servers: nats.url, process: 'test', node: NODE, logger: createLogger({ service: 'test', stream: { write: () => true } }) });
    await bus.consume(DeadLetter, { stream: Streams.deadLetter, durable: 'test-dlq', filterSubject: Subjects.deadLetter(NODE, 'status-manager'), signal: ac.signal }, async (d) => {
      deadLetters.push(d.data);
    });
    proc = await spawnProcess({
      cmd: process.execPath,
      args: ['--import', 'tsx', join(repoRoot, 'services/status-manager/src/main.ts')],
      cwd: repoRoot,
      name: 'status-manager',
      env: { NATS_URL: nats.url, NODE_NAME: NODE, HEALTH_PORT: '0', HEALTH_PORT_FILE: join(dir.path, 'port'), OTEL_SDK_DISABLED: 'true' },
    });
    await proc.waitForLine('status-manager started', 20_000);
  });

  after(async () => {
    const code = await proc?.stop();
    ac.abort();
    await bus?.close();
    await nats?.stop();
    await dir?.cleanup();
    assert.equal(code, 0, `status-manager exited with ${code}:\n${proc?.tail(30)}`);
  });

  async function record(uid: string): Promise<PodStatusRecord | undefined> {
    const kv = await bus.kv(Buckets.status, PodStatusRecord);
    return (await kv.get(Keys.pod(NODE, uid)))?.value ?? undefined;
  }

  it('a set becomes a versioned record in sl_status', async () => {
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, 'uid-1'), update('uid-1', { phase: 'Running', containerStatuses: [aRunningStatus('foo1')] }));
    const r = await eventually(() => record('uid-1'), { message: 'record for uid-1' });
    assert.equal(r.version, 1);
    assert.equal(r.status.phase, 'Running');
    assert.ok(r.status.startTime !== undefined);
    assert.equal(r.finished, false);
  });

  it('holds a terminal phase back until terminated, in order', async () => {
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, 'uid-1'), update('uid-1', { phase: 'Failed', reason: 'Evicted', containerStatuses: [aRunningStatus('foo1')] }));
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, 'uid-1'), update('uid-1', undefined, false, 'terminated'));
    const r = await eventually(
      async () => {
        const rec = await record('uid-1');
        return rec?.finished === true ? rec : undefined;
      },
      { message: 'finished record' },
    );
    assert.equal(r.status.phase, 'Failed');
    assert.equal(r.status.reason, 'Evicted');
    assert.equal(r.version, 3);
    assert.deepEqual(r.status.containerStatuses?.[0]?.state?.terminated?.reason, 'ContainerStatusUnknown');
  });

  it('a malformed status is dead-lettered with a reason naming the subject, and the manager keeps working', async () => {
    const subject = Subjects.status(NODE, 'uid-bad');
    await bus.js.publish(subject, JSON.stringify({ type: 'kubelet.status.PodStatusUpdate.v1', kind: 'set', uid: 'uid-bad' }));
    await bus.js.publish(Subjects.status(NODE, 'uid-x'), '{not json');
    const dl = await eventually(() => (deadLetters.length >= 2 ? deadLetters : undefined), { message: 'two dead letters' });
    assert.equal(dl[0]?.subject, subject);
    assert.match(dl[0]?.reason ?? '', new RegExp(`message on ${subject.replaceAll('.', '\\.')} does not match its schema`));
    assert.equal(dl[0]?.process, 'status-manager');
    assert.match(dl[1]?.reason ?? '', /is not valid JSON/);

    // A valid message whose uid does not match its subject is dead-lettered too.
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, 'uid-other'), update('uid-2', { phase: 'Running' }));
    await eventually(() => deadLetters.length >= 3, { message: 'third dead letter' });
    assert.match(deadLetters[2]?.reason ?? '', /is for pod uid-2, not uid-other/);

    await bus.publish(PodStatusUpdate, Subjects.status(NODE, 'uid-3'), update('uid-3', { phase: 'Succeeded', containerStatuses: [aTerminatedStatus('foo1', 0)] }, false));
    const r = await eventually(() => record('uid-3'), { message: 'record for uid-3 after the poison messages' });
    assert.equal(r.status.phase, 'Succeeded');
  });

  it('removed deletes the record', async () => {
    await bus.publish(PodStatusUpdate, Subjects.status(NODE, 'uid-3'), update('uid-3', undefined, false, 'removed'));
    await eventually(async () => (await record('uid-3')) === undefined, { message: 'record removed' });
  });
});
