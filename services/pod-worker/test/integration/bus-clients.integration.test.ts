/**
 * The pod-worker's clients of volume-manager and cri-adapter against a real nats-server: a request
 * made while its responder is not serving yet (a node starting, or the serving process restarting)
 * waits for it, within the request's deadline; every other failure is immediate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Subjects, VolumeUnmountReply, VolumeUnmountRequest } from '@splitlet/api';
import { connectBus, isBusError } from '@splitlet/bus';
import type { NatsBus } from '@splitlet/bus';
import { eventually, startNatsServer } from '@splitlet/testkit';
import type { NatsServer } from '@splitlet/testkit';
import { busVolumeClient } from '../../src/adapters/bus-clients.js';
import { silentLog } from '../fakes.js';

const NODE = 'node-1.example';

const unmount = (uid: string): VolumeUnmountRequest => ({ type: 'kubelet.volume.UnmountRequest.v1', uid, removeContent: false, fence: { partition: 0, epoch: 1 } });

describe('bus clients on a real nats-server', () => {
  let server: NatsServer;
  let client: NatsBus;
  let serving: NatsBus;
  /** The client's requests as they finished: `ok` or the BusError code. */
  const outcomes: string[] = [];

  before(async () => {
    server = await startNatsServer();
    client = await connectBus({
      servers: server.url,
      process: 'pod-worker',
      node: NODE,
      logger: silentLog,
      metrics: { delivered: () => undefined, deadLettered: () => undefined, requestFinished: (_subject, outcome) => outcomes.push(outcome) },
    });
    serving = await connectBus({ servers: server.url, process: 'volume-manager', node: NODE, logger: silentLog });
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await serving?.close().catch(() => undefined);
    await server?.stop();
  });

  /**
   * Serves unmount with `handler` until the returned `stop` resolves: then the server has the
   * unsubscription (a request sent right after an abort alone may still reach the draining
   * subscription and be answered). Counts the requests.
   */
  function serveUnmount(handler: (req: VolumeUnmountRequest) => Promise<VolumeUnmountReply>): { requests: string[]; stop: () => Promise<void> } {
    const ac = new AbortController();
    const requests: string[] = [];
    serving.serve(
      Subjects.rpc.volume(NODE, 'unmount'),
      VolumeUnmountRequest,
      VolumeUnmountReply,
      (req) => {
        requests.push(req.uid);
        return handler(req);
      },
      { queue: 'volume-manager', signal: ac.signal },
    );
    return {
      requests,
      stop: async () => {
        ac.abort();
        await serving.flush();
      },
    };
  }

  it('a request made before volume-manager serves waits for it, and is answered once it does', { timeout: 60_000 }, async () => {
    const volumes = busVolumeClient(client, NODE);
    outcomes.length = 0;
    const answer = volumes.unmount(unmount('uid-early'), 30_000);
    await eventually(() => outcomes.filter((o) => o === 'NoResponders').length >= 2, { timeoutMs: 30_000, message: 'the request is sent again while no one serves it' });
    const server = serveUnmount(async (req) => ({ type: 'kubelet.volume.UnmountReply.v1', unmounted: [req.uid] }));
    try {
      assert.deepEqual(await answer, { type: 'kubelet.volume.UnmountReply.v1', unmounted: ['uid-early'] });
      assert.deepEqual(server.requests, ['uid-early'], 'the responder saw the request once');
      assert.equal(outcomes.at(-1), 'ok');
    } finally {
      await server.stop();
    }
  });

  it('no responder until the deadline: NoResponders, naming how often and how long it asked', { timeout: 60_000 }, async () => {
    const volumes = busVolumeClient(client, NODE);
    await assert.rejects(volumes.unmount(unmount('uid-never'), 1500), (e: unknown) => {
      assert.ok(isBusError(e, 'NoResponders'), String(e));
      assert.match(e.message, /^no responder for sl\.node-1_example\.rpc\.volume\.unmount: .* \(asked [2-9]\d* times in \d+ ms\)$/);
      return true;
    });
  });

  it('the signal ends the wait', { timeout: 60_000 }, async () => {
    const volumes = busVolumeClient(client, NODE);
    const ac = new AbortController();
    outcomes.length = 0;
    const answer = volumes.unmount(unmount('uid-aborted'), 600_000, ac.signal);
    await eventually(() => outcomes.length >= 2, { timeoutMs: 30_000, message: 'the request is sent again while no one serves it' });
    ac.abort();
    // Aborted during a pause (AbortError) or during a try (its NoResponders): either way long before
    // the deadline (the test's own timeout is a tenth of it).
    await assert.rejects(answer, (e: unknown) => (e instanceof Error && e.name === 'AbortError') || isBusError(e, 'NoResponders'));
  });

  it('a failure of the responder is not retried', { timeout: 60_000 }, async () => {
    const volumes = busVolumeClient(client, NODE);
    const server = serveUnmount(async () => {
      throw new Error('unmount failed: device busy');
    });
    try {
      await assert.rejects(volumes.unmount(unmount('uid-failing'), 30_000), (e: unknown) => isBusError(e, 'Remote') && /device busy/.test((e as Error).message));
      assert.deepEqual(server.requests, ['uid-failing']);
    } finally {
      await server.stop();
    }
  });
});
