/**
 * The api source: apply creates (random UID, creationTimestamp, name kept, bound to the node),
 * re-apply is unchanged or an allowed update (same UID), forbidden spec changes and invalid pods
 * are refused with nothing changed, delete removes; every change is one full SET of source `api`,
 * and a restart starts from the store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiPodRecord, Pod } from '@splitlet/api';
import type { Clock } from '@splitlet/service';
import { ApiSource, type ApiPodStore } from '../src/sources/api-source.js';
import type { SourceListing } from '../src/sources/listing.js';
import { memoryLogger } from './helpers.js';

let now = Date.parse('2026-01-01T00:00:00Z');
const clock: Clock = { now: () => now, setTimeout: () => ({}), clearTimeout: () => undefined };

function memoryStore(): ApiPodStore & { records: Map<string, ApiPodRecord> } {
  const records = new Map<string, ApiPodRecord>();
  return {
    records,
    list: async () => [...records.values()],
    put: async (r) => void records.set(`${r.pod.metadata.namespace}/${r.pod.metadata.name}`, structuredClone(r)),
    delete: async (ns, name) => void records.delete(`${ns}/${name}`),
  };
}

function pod(name: string, image = 'busybox:1.36', extra: Partial<Pod['spec']> = {}): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image, command: ['sleep', '3600'] }], ...extra } };
}

function setup(store = memoryStore()): { source: ApiSource; store: ReturnType<typeof memoryStore>; listings: SourceListing[] } {
  const listings: SourceListing[] = [];
  let n = 0;
  const source = new ApiSource({
    nodeName: 'node-a',
    store,
    clock,
    logger: memoryLogger().logger,
    onListing: async (l) => void listings.push(structuredClone(l)),
    newUid: () => `uid-${++n}`,
  });
  return { source, store, listings };
}

const apply = (source: ApiSource, ...pods: Pod[]): ReturnType<ApiSource['apply']> => source.apply({ type: 'kubelet.config.ApplyPods.v1', pods, origin: 'web.yaml' });

describe('ApiSource', () => {
  it('start sends the stored pods as a SET, also when there are none (the source is seen)', async () => {
    const { source, listings } = setup();
    await source.start();
    assert.deepEqual(listings, [{ source: 'bus', pods: [], errors: [] }]);
  });

  it('apply creates a bound pod, keeps its name, and re-applying it changes nothing', async () => {
    const { source, store, listings } = setup();
    await source.start();
    const r = await apply(source, pod('web'));
    assert.deepEqual(r.results, [{ namespace: 'default', name: 'web', uid: 'uid-1', outcome: 'created' }]);
    const stored = store.records.get('default/web')!;
    assert.equal(stored.pod.metadata.uid, 'uid-1');
    assert.equal(stored.pod.spec.nodeName, 'node-a');
    assert.equal((stored.pod.metadata as Record<string, unknown>)['creationTimestamp'], '2026-01-01T00:00:00.000Z');
    assert.equal(stored.pod.spec.restartPolicy, 'Always', 'API defaults applied');
    assert.equal(listings.length, 2);
    assert.deepEqual(
      listings[1]!.pods!.map((p) => [p.pod.metadata.name, p.origin]),
      [['web', 'api:default/web']],
    );

    now += 1000;
    assert.deepEqual(
      (await apply(source, pod('web'))).results.map((x) => x.outcome),
      ['unchanged'],
    );
    assert.equal(listings.length, 2, 'no SET for an unchanged apply');
  });

  it('an image change is an update with the same UID; other spec changes are Forbidden and change nothing', async () => {
    const { source, store, listings } = setup();
    await source.start();
    await apply(source, pod('web'));
    const updated = await apply(source, pod('web', 'busybox:1.37'));
    assert.deepEqual(updated.results, [{ namespace: 'default', name: 'web', uid: 'uid-1', outcome: 'configured' }]);
    assert.equal(store.records.get('default/web')!.pod.spec.containers[0]!.image, 'busybox:1.37');
    const before = listings.length;
    await assert.rejects(
      apply(source, pod('web', 'busybox:1.37', { restartPolicy: 'Never' })),
      (e: { code?: string; message: string }) => e.code === 'Forbidden' && /pod updates may not change fields/.test(e.message),
    );
    assert.equal(listings.length, before);
    assert.equal(store.records.get('default/web')!.pod.spec.restartPolicy, 'Always');
  });

  it('one invalid pod refuses the whole request (nothing stored, no SET)', async () => {
    const { source, store, listings } = setup();
    await source.start();
    const bad = pod('bad');
    bad.spec.containers[0]!.name = 'Not_A_Name';
    await assert.rejects(
      apply(source, pod('good'), bad),
      (e: { code?: string; message: string }) => e.code === 'Invalid' && /The Pod "bad" is invalid: .*spec\.containers\[0\]\.name/.test(e.message),
    );
    await assert.rejects(apply(source, pod('twice'), pod('twice')), /given twice/);
    assert.equal(store.records.size, 0);
    assert.equal(listings.length, 1);
  });

  it('delete removes the pod (a SET without it); an unknown pod is NotFound', async () => {
    const { source, store, listings } = setup();
    await source.start();
    await apply(source, pod('web'), pod('db'));
    assert.deepEqual(await source.delete({ type: 'kubelet.config.DeletePod.v1', namespace: 'default', name: 'web' }), { type: 'kubelet.config.DeletePodResult.v1', uid: 'uid-1' });
    assert.deepEqual([...store.records.keys()], ['default/db']);
    assert.deepEqual(
      listings.at(-1)!.pods!.map((p) => p.pod.metadata.name),
      ['db'],
    );
    await assert.rejects(source.delete({ type: 'kubelet.config.DeletePod.v1', namespace: 'default', name: 'web' }), (e: { code?: string }) => e.code === 'NotFound');
  });

  it('delete publishes the removal before it deletes the record; a failed record delete keeps the pod for a retry', async () => {
    const store = memoryStore();
    const { source, listings } = setup(store);
    await source.start();
    await apply(source, pod('web'));
    const order: string[] = [];
    const inner = store.delete.bind(store);
    let fail = true;
    store.delete = async (ns, name) => {
      order.push(`delete record (listing had web: ${listings.at(-1)!.pods!.some((p) => p.pod.metadata.name === 'web')})`);
      if (fail) throw new Error('NATS went away');
      await inner(ns, name);
    };
    // A crash after the listing went out leaves the record: the restarted source lists the pod
    // again and the client, who got no reply, retries.
    await assert.rejects(source.delete({ type: 'kubelet.config.DeletePod.v1', namespace: 'default', name: 'web' }), /NATS went away/);
    assert.deepEqual(order, ['delete record (listing had web: false)']);
    assert.ok(store.records.has('default/web'));
    fail = false;
    assert.equal((await source.delete({ type: 'kubelet.config.DeletePod.v1', namespace: 'default', name: 'web' })).uid, 'uid-1');
    assert.equal(store.records.size, 0);
  });

  it('a restarted source starts from its store: same pods, same UIDs', async () => {
    const first = setup();
    await first.source.start();
    await apply(first.source, pod('web'));
    const second = setup(first.store);
    await second.source.start();
    assert.deepEqual(
      second.listings[0]!.pods!.map((p) => p.pod.metadata.uid),
      ['uid-1'],
    );
    assert.deepEqual(
      (await apply(second.source, pod('web'))).results.map((x) => x.outcome),
      ['unchanged'],
    );
  });
});
