/**
 * useMuxedRequests against a real nats-server: a connection's requests (its JetStream and KV calls
 * among them) reply on our own inbox, and fail as nats-core's `request()` does — TimeoutError,
 * RequestError caused by NoRespondersError or PermissionViolationError, "connection closed".
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, ClosedConnectionError, DrainingConnectionError, NoRespondersError, PermissionViolationError, RequestError, TimeoutError } from '@nats-io/transport-node';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startNatsServer, startTestNats } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { type MuxedRequests, useMuxedRequests } from '../src/muxed-requests.ts';

const text = (m: Msg): string => new TextDecoder().decode(m.data);

/** A connection whose requests are muxed, and the requester behind them. */
async function muxedConnection(url: string, opts: { user?: string; pass?: string } = {}): Promise<{ nc: NatsConnection; muxed: MuxedRequests }> {
  const nc = await connect({ servers: url, noAsyncTraces: true, ...opts });
  return { nc, muxed: useMuxedRequests(nc) };
}

describe('muxed requests', () => {
  let server: NatsServer;
  let responder: NatsConnection;
  let nc: NatsConnection;
  let muxed: MuxedRequests;
  /** Requests on `held.>` wait here until a test answers them. */
  const held: Msg[] = [];

  before(async () => {
    server = await startTestNats();
    responder = await connect({ servers: server.url });
    responder.subscribe('echo.*', { callback: (_e, m) => void m.respond(`${m.subject}:${text(m)}`) });
    responder.subscribe('held.>', { callback: (_e, m) => void held.push(m) });
    await responder.flush();
    ({ nc, muxed } = await muxedConnection(server.url));
  });

  after(async () => {
    await nc.close();
    await responder.close();
    await server.stop();
  });

  test('many concurrent requests each get their own reply, on the one inbox of the connection', async () => {
    const replies = await Promise.all(Array.from({ length: 500 }, (_, i) => nc.request(`echo.${i % 7}`, String(i), { timeout: 10_000 })));
    assert.deepEqual(
      replies.map(text),
      Array.from({ length: 500 }, (_, i) => `echo.${i % 7}:${i}`),
    );
    for (const m of replies) assert.ok(m.subject.startsWith(muxed.inbox), `${m.subject} is under ${muxed.inbox}`);
    assert.equal(muxed.pending, 0);
  });

  test('a request not answered in time fails with TimeoutError; its late reply is dropped', async () => {
    const before = held.length;
    await assert.rejects(nc.request('held.timeout', 'x', { timeout: 200 }), (e: unknown) => e instanceof TimeoutError);
    assert.equal(muxed.pending, 0);
    // It did reach the responder; answering it now must not disturb the next request.
    assert.equal(held.length, before + 1);
    held[before]!.respond('late');
    assert.equal(text(await nc.request('echo.after', 'y', { timeout: 10_000 })), 'echo.after:y');
  });

  test('a request nobody serves fails at once with a RequestError caused by NoRespondersError', async () => {
    await assert.rejects(nc.request('nobody.home', 'x', { timeout: 30_000 }), (e: unknown) => {
      assert.ok(e instanceof RequestError, `${String(e)}`);
      assert.ok(e.isNoResponders());
      assert.ok(e.cause instanceof NoRespondersError);
      assert.equal(e.cause.subject, 'nobody.home');
      return true;
    });
    assert.equal(muxed.pending, 0);
  });

  test('a bad subject is refused as nats-core refuses it, leaving nothing pending', async () => {
    await assert.rejects(nc.request('bad subject', 'x', { timeout: 30_000 }), /illegal subject/);
    assert.equal(muxed.pending, 0);
  });

  test('JetStream and KV calls of the connection go through it and keep their error semantics', async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'MUXED', subjects: ['muxed.>'] });
    const js = jetstream(nc);
    const ack = await js.publish('muxed.a', 'one');
    assert.equal(ack.stream, 'MUXED');
    // A publish to a subject no stream stores: the no-responders status jetstream turns into its own error.
    await assert.rejects(js.publish('nostream.a', 'x', { timeout: 30_000 }), (e: unknown) => {
      assert.ok(e instanceof Error);
      assert.equal(e.name, 'JetStreamNotEnabled');
      assert.ok(e.cause instanceof RequestError && e.cause.isNoResponders());
      return true;
    });
    const kv = await new Kvm(nc).create('muxed');
    const rev = await kv.put('k', 'v1');
    assert.equal((await kv.get('k'))?.string(), 'v1');
    await assert.rejects(kv.update('k', 'v2', rev + 100), /wrong last sequence/);
    // While one is in flight, it is ours to answer.
    const inFlight = js.publish('muxed.b', 'two');
    assert.equal(muxed.pending, 1);
    await inFlight;
    assert.equal(muxed.pending, 0);
  });

  test('closing the connection fails the requests still waiting; later ones fail as on any closed connection', async () => {
    const own = await muxedConnection(server.url);
    const waiting = [own.nc.request('held.close.1', 'x', { timeout: 30_000 }), own.nc.request('held.close.2', 'x', { timeout: 30_000 })];
    await own.nc.flush();
    assert.equal(own.muxed.pending, 2);
    await own.nc.close();
    for (const w of waiting) await assert.rejects(w, (e: unknown) => e instanceof RequestError && /connection closed/.test(e.message) && !e.isNoResponders());
    assert.equal(own.muxed.pending, 0);
    await assert.rejects(own.nc.request('echo.x', 'x', { timeout: 1000 }), (e: unknown) => e instanceof ClosedConnectionError);
  });

  test('draining the connection fails the requests still waiting, and refuses new ones', async () => {
    const own = await muxedConnection(server.url);
    const unanswered = own.nc.request('held.drain', 'x', { timeout: 30_000 });
    await own.nc.flush();
    const drained = own.nc.drain();
    await assert.rejects(own.nc.request('echo.x', 'x', { timeout: 1000 }), (e: unknown) => e instanceof DrainingConnectionError);
    await assert.rejects(unanswered, (e: unknown) => e instanceof RequestError && /connection closed/.test(e.message));
    await drained;
    assert.equal(own.muxed.pending, 0);
  });

  test('installing twice on one connection keeps one requester', () => {
    assert.equal(useMuxedRequests(nc), muxed);
  });
});

describe('muxed requests under permissions', () => {
  let dir: string;
  let server: NatsServer;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'splitlet-muxed-'));
    const conf = join(dir, 'auth.conf');
    await writeFile(
      conf,
      `authorization { users: [
        { user: serve, password: serve }
        { user: ask, password: ask, permissions: { publish: { allow: ["echo.>"] }, subscribe: { allow: ["_INBOX.>"] } } }
        { user: deaf, password: deaf, permissions: { publish: { allow: ["echo.>"] }, subscribe: { allow: ["other.>"] } } }
      ] }\n`,
    );
    server = await startNatsServer({ jetstream: false, args: ['-c', conf] });
  });

  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a refused publish fails its request at once with the PermissionViolationError as cause', async () => {
    const serve = await connect({ servers: server.url, user: 'serve', pass: 'serve' });
    serve.subscribe('echo.*', { callback: (_e, m) => void m.respond('ok') });
    serve.subscribe('denied.*', { callback: (_e, m) => void m.respond('ok') });
    await serve.flush();
    const { nc, muxed } = await muxedConnection(server.url, { user: 'ask', pass: 'ask' });
    try {
      const denied = nc.request('denied.x', 'x', { timeout: 60_000 });
      const allowed = nc.request('echo.x', 'x', { timeout: 60_000 });
      await assert.rejects(denied, (e: unknown) => {
        assert.ok(e instanceof RequestError, String(e));
        assert.ok(e.cause instanceof PermissionViolationError);
        assert.equal(e.cause.operation, 'publish');
        assert.equal(e.cause.subject, 'denied.x');
        return true;
      });
      assert.equal(text(await allowed), 'ok', 'the other request is not failed by it');
      assert.equal(muxed.pending, 0);
    } finally {
      await nc.close();
      await serve.close();
    }
  });

  test('a refused inbox subscription fails every waiting request', async () => {
    const { nc, muxed } = await muxedConnection(server.url, { user: 'deaf', pass: 'deaf' });
    try {
      const waiting = [nc.request('echo.a', 'x', { timeout: 60_000 }), nc.request('echo.b', 'x', { timeout: 60_000 })];
      for (const w of waiting) {
        await assert.rejects(w, (e: unknown) => e instanceof RequestError && e.cause instanceof PermissionViolationError && e.cause.operation === 'subscription');
      }
      assert.equal(muxed.pending, 0);
    } finally {
      await nc.close();
    }
  });
});
