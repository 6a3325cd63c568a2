/**
 * What the API server reads from its bucket, against a real nats-server: a patch reads the object
 * once; the embedded scheduler, given a signal, reads the pods from a watch-maintained cache (no pod
 * read from the store while nothing is pending), binds by allocatable and counts the pods it bound
 * before the watch shows them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { eventually, startNatsServer, type NatsServer } from '@splitlet/testkit';
import { createLogger } from '@splitlet/telemetry';
import { findResource, type ResourceDef } from '../src/registry/resources.js';
import { RestStorage } from '../src/registry/rest-storage.js';
import { Scheduler } from '../src/scheduler/scheduler.js';
import { ensureBootstrapObjects } from '../src/storage/bootstrap.js';
import { ObjectStore } from '../src/storage/object-store.js';

const BUCKET = 'sl_api_sched';
const pods = findResource('', 'v1', 'pods') as ResourceDef;
const nodes = findResource('', 'v1', 'nodes') as ResourceDef;
const events = findResource('', 'v1', 'events') as ResourceDef;
const pod = (name: string, cpu: string, nodeName?: string): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu } } }], ...(nodeName === undefined ? {} : { nodeName }) },
});

describe('API server store reads (real nats-server)', { timeout: 120_000 }, () => {
  let nats: NatsServer;
  let nc: NatsConnection;
  let storage: RestStorage;
  const ctl = new AbortController();
  /** Pod reads from the bucket (DIRECT.GET of a pods key). */
  let podReads = 0;
  before(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    storage = new RestStorage(await ObjectStore.open(nc, await jetstreamManager(nc), BUCKET));
    await ensureBootstrapObjects(storage);
    nc.subscribe(`$JS.API.DIRECT.GET.KV_${BUCKET}.>`, { callback: (_e, m) => void (m.subject.includes(`.$KV.${BUCKET}.pods.`) && podReads++) });
    await storage.create(nodes, undefined, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
    await storage.patch(
      nodes,
      undefined,
      'node-a',
      'application/merge-patch+json',
      {
        status: { allocatable: { cpu: '1', memory: '1Gi', pods: '110' }, conditions: [{ type: 'Ready', status: 'True' }] },
      },
      'status',
    );
  });
  after(async () => {
    ctl.abort();
    await nc?.close();
    await nats?.stop();
  });

  it('a patch reads the object once; its preconditions and conflicts still hold', async () => {
    const created = await storage.create(pods, 'default', pod('patched', '0', 'node-a'));
    const uid = created.object.metadata?.['uid'] as string;
    await nc.flush();
    podReads = 0;
    const patched = await storage.patch(pods, 'default', 'patched', 'application/strategic-merge-patch+json', { metadata: { uid }, status: { phase: 'Running' } }, 'status');
    await nc.flush();
    assert.equal(podReads, 1, 'one read of the pod for a status patch');
    assert.equal((patched.object['status'] as { phase?: string }).phase, 'Running');
    assert.equal(patched.revision > created.revision, true);
    const stale = { metadata: { resourceVersion: String(created.revision) }, status: { phase: 'Failed' } };
    await assert.rejects(storage.patch(pods, 'default', 'patched', 'application/merge-patch+json', stale, 'status'), /Conflict|modified/);
    await assert.rejects(storage.patch(pods, 'default', 'patched', 'application/merge-patch+json', { metadata: { uid: 'other' }, status: {} }, 'status'), /Precondition failed/);
    await assert.rejects(storage.patch(pods, 'default', 'absent', 'application/merge-patch+json', { status: {} }, 'status'), /not found/);
    // Concurrent patches of one object: every one lands (a lost compare-and-swap reads again; one wins each round, five retries).
    await Promise.all(Array.from({ length: 5 }, (_, i) => storage.patch(pods, 'default', 'patched', 'application/merge-patch+json', { metadata: { labels: { [`l${i}`]: 'x' } } })));
    const labels = (await storage.get(pods, 'default', 'patched')).object.metadata?.['labels'] as Record<string, string>;
    assert.deepEqual(Object.keys(labels).sort(), ['l0', 'l1', 'l2', 'l3', 'l4']);
    // A read's object is the caller's own (decoded for it, not shared): changing it changes no other read.
    const one = await storage.get(pods, 'default', 'patched');
    (one.object.metadata as Record<string, unknown>)['labels'] = { changed: 'y' };
    const two = await storage.get(pods, 'default', 'patched');
    assert.deepEqual(Object.keys(two.object.metadata?.['labels'] as object).sort(), ['l0', 'l1', 'l2', 'l3', 'l4']);
    assert.equal(two.object.metadata?.['resourceVersion'], String(two.revision));
    await storage.delete(pods, 'default', 'patched', { gracePeriodSeconds: 0 });
  });

  it('reads no pod from the store while none is pending; binds what fits, counting its own bindings', async () => {
    for (let i = 0; i < 30; i++) await storage.create(pods, 'default', pod(`bound-${i}`, '0', 'node-a'));
    const scheduler = new Scheduler({ storage, nodeName: 'node-a', logger: createLogger({ service: 't', stream: { write: () => true } }), signal: ctl.signal });
    // The cache is listed and watching once a pod created now is bound by a pass without a listing.
    await storage.create(pods, 'default', pod('first', '100m'));
    await eventually(
      async () =>
        (await scheduler.pass()) === 0 &&
        (await storage.get(pods, 'default', 'first')).object['spec'] !== undefined &&
        ((await storage.get(pods, 'default', 'first')).object['spec'] as { nodeName?: string }).nodeName === 'node-a',
      { timeoutMs: 30_000 },
    );
    await nc.flush();
    podReads = 0;
    for (let i = 0; i < 5; i++) assert.equal(await scheduler.pass(), 0);
    await nc.flush();
    assert.equal(podReads, 0, 'five passes over 31 bound pods read none of them');

    // 100m is taken; three of 400m: two fit, in one pass or over several, however late the watch.
    for (const n of ['a', 'b', 'c']) await storage.create(pods, 'default', pod(n, '400m'));
    const nodeOf = async (n: string): Promise<string | undefined> => ((await storage.get(pods, 'default', n)).object['spec'] as { nodeName?: string }).nodeName;
    let bound = 0;
    await eventually(
      async () => {
        bound += await scheduler.pass();
        bound += await scheduler.pass();
        return (await Promise.all(['a', 'b', 'c'].map(nodeOf))).filter((x) => x === 'node-a').length === 2;
      },
      { timeoutMs: 30_000 },
    );
    for (let i = 0; i < 5; i++) bound += await scheduler.pass();
    assert.equal(bound, 2);
    const placed = await Promise.all(['a', 'b', 'c'].map(nodeOf));
    assert.equal(placed.filter((x) => x === 'node-a').length, 2, `two of a, b, c bound: ${JSON.stringify(placed)}`);
    const unplaced = ['a', 'b', 'c'][placed.indexOf(undefined)] as string;
    const listed = await storage.list(events, 'default', { labelSelector: null, fieldSelector: `involvedObject.name=${unplaced}` });
    assert.deepEqual(
      listed.items.map((e) => `${String(e['reason'])}: ${String(e['message'])}`),
      ['FailedScheduling: 0/1 nodes are available: 1 Insufficient cpu.'],
    );

    // A deleted pod frees its share once the watch shows the deletion.
    await storage.delete(pods, 'default', placed[0] === 'node-a' ? 'a' : 'b', { gracePeriodSeconds: 0 });
    await eventually(async () => (await scheduler.pass()) === 1, { timeoutMs: 30_000 });
    assert.equal(await nodeOf(unplaced), 'node-a');
  });
});
