/**
 * KvMemberStore against a real nats-server 2.9: the balance rounds read the node's members from
 * one watch (no consumer per round), a removed member is gone at once, and a member that stopped
 * heartbeating is gone once its last heartbeat is older than the bucket's TTL, although the
 * server's expiry of its key is silent.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Buckets, DeadLetter, Keys, MemberHeartbeat, Subjects } from '@splitlet/api';
import { BUCKETS, connectBus } from '@splitlet/bus';
import type { NatsBus } from '@splitlet/bus';
import { eventually, startNatsServer } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { KvMemberStore } from '../../src/adapters/kv-stores.js';
import { silentLog } from '../fakes.js';

const NODE = 'node-1.example';
const TTL_MS = BUCKETS.find((b) => b.name === Buckets.members)!.ttlMs!;

describe('KvMemberStore on a real nats-server', () => {
  let server: NatsServer;
  let bus: NatsBus;
  const ac = new AbortController();

  before(async () => {
    server = await startNatsServer();
    bus = await connectBus({ servers: server.url, process: 'pod-worker', node: NODE, logger: silentLog });
  });

  after(async () => {
    ac.abort();
    await bus?.close().catch(() => undefined);
    await server?.stop();
  });

  it('serves every round from one watch; a removed member is gone at once, a silent one after the TTL', { timeout: 120_000 }, async () => {
    const consumers = async (): Promise<number> => (await bus.jsm.streams.info(`KV_${Buckets.members}`)).state.consumer_count;
    const members = await KvMemberStore.open(bus, NODE, Date.now, { signal: ac.signal });
    const elsewhere = await KvMemberStore.open(bus, 'node-2.example', Date.now, { signal: ac.signal });
    await members.heartbeat('pw-a');
    const bBefore = Date.now();
    await members.heartbeat('pw-b');
    await members.heartbeat('pw-c');
    await elsewhere.heartbeat('pw-z');

    const none = await consumers();
    assert.deepEqual((await members.live()).sort(), ['pw-a', 'pw-b', 'pw-c'], "the node's members, not another node's");
    assert.equal(await consumers(), none + 1, 'the first round opens the watch');
    for (let i = 0; i < 20; i++) await members.live();
    assert.equal(await consumers(), none + 1, 'later rounds open no consumer');

    await members.remove('pw-c');
    await eventually(async () => !(await members.live()).includes('pw-c'), { timeoutMs: 30_000, message: 'a removed member leaves at once' });

    // pw-a keeps heartbeating, pw-b stops: its key expires silently on the server, and the watch
    // (which sees no marker) drops it by its heartbeat's age.
    const kv = await bus.kv(Buckets.members, MemberHeartbeat);
    const beat = setInterval(() => void members.heartbeat('pw-a'), 1000);
    try {
      await eventually(async () => (await members.live()).join() === 'pw-a', { timeoutMs: TTL_MS + 30_000, message: 'a silent member leaves after the TTL' });
      const age = Date.now() - bBefore;
      assert.ok(age >= TTL_MS, `pw-b counted until its heartbeat was ${TTL_MS} ms old (left ${age} ms after it)`);
      // It heartbeats again: it is back.
      await members.heartbeat('pw-b');
      await eventually(async () => (await members.live()).sort().join() === 'pw-a,pw-b', { timeoutMs: 30_000, message: 'a member heartbeating again is back' });
    } finally {
      clearInterval(beat);
    }
    assert.ok((await kv.get(Keys.member(NODE, 'pw-a'))) !== null, 'a heartbeating member keeps its key');
  });

  it('a heartbeat that is not one is dead-lettered, naming its key; the members and the watch go on', { timeout: 60_000 }, async () => {
    const dead: DeadLetter[] = [];
    bus.subscribeCore(
      Subjects.deadLetter(NODE, 'pod-worker'),
      (d) => {
        const p = DeadLetter.safeParse(d);
        if (p.success) dead.push(p.data);
      },
      ac.signal,
    );
    const members = await KvMemberStore.open(bus, NODE, Date.now, { signal: ac.signal });
    await members.heartbeat('pw-d');
    assert.ok((await members.live()).includes('pw-d'));
    const kv = await bus.typedKv(Buckets.members, MemberHeartbeat);
    const bad = Keys.member(NODE, 'pw-bad');
    await kv.raw.put(bad, new TextEncoder().encode('{"type":"not-a-heartbeat"}'));
    await eventually(() => dead.some((d) => d.subject.endsWith(bad)), { timeoutMs: 30_000, message: 'the invalid heartbeat dead-lettered' });
    await members.heartbeat('pw-e');
    await eventually(async () => (await members.live()).includes('pw-e'), { timeoutMs: 30_000, message: 'a later heartbeat still counts' });
    const live = await members.live();
    assert.ok(live.includes('pw-d') && !live.includes('pw-bad'), `live: ${live.join(', ')}`);
  });
});
