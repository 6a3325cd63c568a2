/**
 * Every stream and bucket is bounded (age, bytes, messages / value size) with its discard policy,
 * on a real nats-server: a fresh store gets the declared limits, a store provisioned before the
 * limits is updated in place, and the bounds act (a full discard-new stream refuses the publish, a
 * message over the size bound is refused); the operator's max ages (`STREAM_MAX_AGE`) are applied
 * and updated in place.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jetstream, jetstreamManager, DiscardPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { eventually, startTestNats } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { Buckets, Streams } from '@splitlet/api';
import { BUCKETS, STREAMS, connectBus, ensureStream, ensureTopology, streamSpecs } from '../src/index.ts';

describe('topology limits (real nats-server)', () => {
  let server: NatsServer;
  let nc: NatsConnection;
  before(async () => {
    server = await startTestNats();
    nc = await connect({ servers: server.url });
  });
  after(async () => {
    await nc?.close();
    await server?.stop();
  });
  const testBusOptions = (): Parameters<typeof connectBus>[0] => ({
    servers: server.url,
    process: 'test',
    node: 'n',
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    failFast: true,
  });
  const testBus = (): ReturnType<typeof connectBus> => connectBus(testBusOptions());

  test('a store from before the limits is updated in place; every stream and bucket then carries its bounds', async () => {
    const jsm = await jetstreamManager(nc);
    // The old, unbounded declarations: SL_WORK discarding old, a bucket without size bounds.
    await jsm.streams.add({
      name: Streams.work,
      subjects: ['sl.*.work.*.*'],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: nanos(86_400_000),
    });
    await new Kvm(nc).create(Buckets.status, { history: 1 });
    await ensureTopology(nc, jsm);
    for (const spec of STREAMS) {
      const { config } = await jsm.streams.info(spec.name);
      assert.equal(config.max_age, nanos(spec.maxAgeMs), `${spec.name} max_age`);
      assert.equal(config.max_bytes, spec.maxBytes, `${spec.name} max_bytes`);
      assert.equal(config.max_msgs, spec.maxMsgs, `${spec.name} max_msgs`);
      assert.equal(config.max_msg_size, spec.maxMsgSize, `${spec.name} max_msg_size`);
      assert.equal(config.discard, spec.discard === 'new' ? DiscardPolicy.New : DiscardPolicy.Old, `${spec.name} discard`);
      assert.ok(config.max_bytes > 0 && config.max_msgs > 0 && config.max_msg_size > 0, `${spec.name} is bounded`);
    }
    assert.equal((await jsm.streams.info(Streams.work)).config.discard, DiscardPolicy.New, 'the work queue refuses new work when full rather than dropping queued work');
    for (const b of BUCKETS) {
      const { config } = await jsm.streams.info(`KV_${b.name}`);
      assert.equal(config.max_bytes, b.maxBytes, `${b.name} max_bytes`);
      assert.equal(config.max_msg_size, b.maxValueSize, `${b.name} max value size`);
      assert.equal(config.max_msgs_per_subject, b.history, `${b.name} history`);
      assert.equal(config.discard, DiscardPolicy.New, `${b.name} refuses writes when full`);
    }
    // Idempotent: a second pass changes nothing and does not fail.
    await ensureTopology(nc, jsm);
  });

  test('the bounds act: a full discard-new stream refuses the publish; a message over its size bound is refused', async () => {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await ensureStream(jsm, {
      name: 'SL_TEST_FULL',
      subjects: ['test.full.*'],
      retention: 'workqueue',
      maxAgeMs: 60_000,
      maxBytes: 1024 * 1024,
      maxMsgs: 3,
      maxMsgSize: 1024,
      discard: 'new',
    });
    for (let i = 0; i < 3; i++) await js.publish(`test.full.${i}`, 'x');
    await assert.rejects(js.publish('test.full.9', 'x'), /maximum messages exceeded/);
    await assert.rejects(js.publish('test.full.8', 'x'.repeat(2048)), /message size exceeds maximum allowed/);
  });

  test('old delete markers are removed, newer values and re-created keys are kept', async () => {
    const bus = await testBus();
    try {
      const kv = await new Kvm(nc).open(Buckets.volumes);
      await kv.put('n.gone', 'a');
      await kv.delete('n.gone');
      await kv.put('n.kept', 'b');
      await kv.put('n.back', 'c');
      await kv.delete('n.back');
      await kv.put('n.back', 'c2');
      const jsm = await jetstreamManager(nc);
      const before = (await jsm.streams.info(`KV_${Buckets.volumes}`)).state.messages;
      assert.equal(await bus.compactDeleteMarkers(Buckets.volumes, 60_000), 0, 'markers younger than the age are kept');
      assert.equal(await bus.compactDeleteMarkers(Buckets.volumes, 0), 1, "only n.gone's marker is removed");
      const after = (await jsm.streams.info(`KV_${Buckets.volumes}`)).state.messages;
      assert.equal(after, before - 1);
      assert.equal(await kv.get('n.gone'), null);
      assert.equal((await kv.get('n.kept'))?.string(), 'b');
      assert.equal((await kv.get('n.back'))?.string(), 'c2');
      assert.equal(await bus.compactDeleteMarkers(Buckets.volumes, 0), 0, 'idempotent');
    } finally {
      await bus.close();
    }
  });

  test("removing markers loses no other key's update for a KV watch behind by a few messages", async () => {
    // nats-server 2.9 moves every consumer past a filtered purge's subject: a watch that had not yet
    // delivered the writes made around it lost them (every round, 11-20 of 20, before the fix).
    const bus = await testBus();
    const kv = await new Kvm(nc).open(Buckets.status);
    try {
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 20; i++) {
          await kv.put(`r${round}.old${i}`, 'x');
          await kv.delete(`r${round}.old${i}`);
        }
        const from = (await (await jetstreamManager(nc)).streams.info(`KV_${Buckets.status}`)).state.last_seq;
        const w = await kv.watch({ key: `r${round}.>`, include: KvWatchInclude.AllHistory, resumeFromRevision: from + 1 });
        const seen = new Set<number>();
        const reading = (async () => {
          for await (const e of w) seen.add(e.revision);
        })();
        // Batches of writes in flight while the markers go, so the watch is always a few behind.
        const puts: number[] = [];
        let compacting = true;
        const writing = (async () => {
          for (let b = 0; compacting || b < 3; b++) {
            await Promise.all(Array.from({ length: 10 }, (_, i) => kv.put(`r${round}.new${b}-${i}`, 'y').then((r) => void puts.push(r))));
          }
        })();
        assert.equal(await bus.compactDeleteMarkers(Buckets.status, 0), 20);
        compacting = false;
        await writing;
        await eventually(
          () => (
            assert.deepEqual(
              puts.filter((r) => !seen.has(r)),
              [],
              `round ${round}: updates the watch never delivered`,
            ),
            true
          ),
          { timeoutMs: 10_000 },
        );
        w.stop();
        await reading;
      }
    } finally {
      await bus.close();
    }
  });

  test("the operator's max ages (STREAM_MAX_AGE): a stream is created with them, a process given others updates it in place, a bad one is refused", async () => {
    const jsm = await jetstreamManager(nc);
    const maxAge = async (name: string): Promise<number> => (await jsm.streams.info(name)).config.max_age;
    const declared = (name: string): number => nanos(STREAMS.find((s) => s.name === name)!.maxAgeMs);
    await jsm.streams.delete(Streams.spans);
    await ensureTopology(nc, jsm, { streamMaxAges: { [Streams.spans]: 90_000, [Streams.config]: 120_000 } });
    assert.equal(await maxAge(Streams.spans), nanos(90_000), 'created with the override');
    assert.equal(await maxAge(Streams.config), nanos(120_000), 'updated in place with the override');
    assert.equal(await maxAge(Streams.status), declared(Streams.status), 'a stream not named keeps its declared max age');
    await jetstream(nc).publish('sl.n.spans.x', 'kept');
    const seq = (await jsm.streams.info(Streams.spans)).state.last_seq;

    // A process started with other limits (connectBus provisions at start) updates the stream, keeping its messages.
    const other = await connectBus({ ...testBusOptions(), streamMaxAges: { [Streams.spans]: 600_000 } });
    await other.close();
    const after = await jsm.streams.info(Streams.spans);
    assert.equal(after.config.max_age, nanos(600_000));
    assert.equal(after.state.last_seq, seq, 'the same stream, updated in place');
    assert.equal(after.state.messages, 1);
    assert.equal(await maxAge(Streams.config), declared(Streams.config), 'a process without the override restores the declared max age');

    // Refused before anything is touched: an unknown stream, a work stream under its floor.
    await assert.rejects(ensureTopology(nc, jsm, { streamMaxAges: { SL_NOPE: 90_000 } }), /unknown stream "SL_NOPE"/);
    await assert.rejects(connectBus({ ...testBusOptions(), streamMaxAges: { [Streams.work]: 10_000 } }), /SL_WORK: a max age of 10 s is below the shortest allowed, 120 s/);
    assert.equal(await maxAge(Streams.work), declared(Streams.work));
    assert.throws(() => streamSpecs({ [Streams.pleg]: 1.5 }), /SL_PLEG: the max age must be a positive duration/);
    assert.equal(streamSpecs({ [Streams.pleg]: 60_000 }).find((s) => s.name === Streams.pleg)?.maxAgeMs, 60_000);
    await ensureTopology(nc, jsm);
    assert.equal(await maxAge(Streams.spans), declared(Streams.spans));
  });
});
