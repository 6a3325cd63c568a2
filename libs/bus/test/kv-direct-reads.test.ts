/**
 * KV reads of a NatsBus against a real nats-server: DIRECT.GET where the bucket's stream allows it
 * and has one replica (no JetStream API request, no API advisory), STREAM.MSG.GET otherwise, and a
 * read after a write sees the write either way.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { Buckets } from '@splitlet/api';
import { startTestNats, eventually } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { connectBus } from '../src/index.ts';
import type { NatsBus } from '../src/index.ts';
import { readsDirect } from '../src/nats-kv.ts';

const NODE = 'node-a.example.com';
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const Value = z.object({ n: z.number().int() });

/** The JetStream API subjects published on the server, as a spy connection sees them. */
async function spyOnJsApi(url: string): Promise<{ nc: NatsConnection; subjects: string[] }> {
  const nc = await connect({ servers: url });
  const subjects: string[] = [];
  nc.subscribe('$JS.API.>', { callback: (_e, m) => void subjects.push(m.subject) });
  nc.subscribe('$JS.EVENT.ADVISORY.API', { callback: (_e, m) => void subjects.push(m.subject) });
  await nc.flush();
  return { nc, subjects };
}

test('direct reads are limited to buckets whose stream allows them and has one replica', () => {
  assert.equal(readsDirect({ allow_direct: true, num_replicas: 1 }), true);
  assert.equal(readsDirect({ allow_direct: false, num_replicas: 1 }), false);
  assert.equal(readsDirect({ allow_direct: true, num_replicas: 3 }), false, 'a follower may answer before it applied an acknowledged write');
});

describe('KV reads of a NatsBus', () => {
  let server: NatsServer;
  let bus: NatsBus;

  before(async () => {
    server = await startTestNats();
    bus = await connectBus({ servers: server.url, process: 'test-kv', node: NODE, logger: quiet });
  });

  after(async () => {
    await bus.close();
    await server.stop();
  });

  test('a provisioned bucket is read with DIRECT.GET, and every read sees the write before it', async () => {
    const kv = await bus.kv(Buckets.kill, Value);
    const spy = await spyOnJsApi(server.url);
    try {
      for (let n = 1; n <= 50; n++) {
        const revision = await kv.put(`${NODE}.1.uid-a`, { n });
        const got = await kv.get(`${NODE}.1.uid-a`);
        assert.deepEqual(got && { value: got.value, revision: got.revision }, { value: { n }, revision });
      }
      assert.equal(await kv.get(`${NODE}.1.uid-none`), null);
      await eventually(() => spy.subjects.filter((s) => s.startsWith('$JS.API.DIRECT.GET.')).length === 51);
      await bus.flush();
      await spy.nc.flush();
      assert.deepEqual(
        spy.subjects.filter((s) => !s.startsWith('$JS.API.DIRECT.GET.')),
        [],
        'no STREAM.MSG.GET, no API advisory: the puts are plain publishes',
      );
      assert.ok(spy.subjects.every((s) => s.startsWith(`$JS.API.DIRECT.GET.KV_${Buckets.kill}.$KV.${Buckets.kill}.${NODE}.1.uid-`)));
    } finally {
      await spy.nc.close();
    }
  });

  test('a bucket whose stream does not allow direct gets is read through the JetStream API', async () => {
    const stream = `KV_${Buckets.node}`;
    const { config } = await bus.jsm.streams.info(stream);
    await bus.jsm.streams.update(stream, { ...config, allow_direct: false });
    const reader = await connectBus({ servers: server.url, process: 'test-kv-2', node: NODE, logger: quiet, provision: false });
    const spy = await spyOnJsApi(server.url);
    try {
      const kv = await reader.kv(Buckets.node, Value);
      const revision = await kv.put(NODE, { n: 7 });
      assert.deepEqual((await kv.get(NODE))?.revision, revision);
      await eventually(() => spy.subjects.includes(`$JS.API.STREAM.MSG.GET.${stream}`));
      assert.ok(!spy.subjects.some((s) => s.startsWith('$JS.API.DIRECT.GET.')));
    } finally {
      await spy.nc.close();
      await reader.close();
    }
  });
});
