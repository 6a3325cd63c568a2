import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodStatusRecord } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import type { KubeResponse, KubeRest } from '../src/api/kube-rest.js';
import { MirrorPods } from '../src/api/mirror-pods.js';
import type { ApiPod } from '../src/api/mirror-pods.js';
import { PodStatusSyncer, reconcileReason } from '../src/api/pod-status-syncer.js';

const UID = 'uid-1';

/** An API server holding one pod; GETs wait for `release` while `hold` is set. */
class FakeApi implements KubeRest {
  readonly calls: { method: string; path: string; body?: unknown }[] = [];
  status: Record<string, unknown> = { phase: 'Pending' };
  hold: Promise<void> | undefined;
  async request(method: string, path: string, body?: unknown): Promise<KubeResponse> {
    this.calls.push({ method, path, ...(body === undefined ? {} : { body }) });
    if (method === 'GET') {
      const status = structuredClone(this.status); // as read when the request arrived
      if (this.hold !== undefined) await this.hold;
      return { status: 200, body: { metadata: { uid: UID }, status } };
    }
    if (method === 'PATCH') {
      this.status = { ...this.status, ...(body as { status: Record<string, unknown> }).status };
      return { status: 200, body: { metadata: { uid: UID }, status: this.status } };
    }
    return { status: 404, body: {} };
  }
}

function record(version: number): PodStatusRecord {
  const pod = aPod({ metadata: { name: 'web', namespace: 'default', uid: UID } });
  return {
    type: 'kubelet.status.PodStatusRecord.v1',
    uid: UID,
    name: 'web',
    namespace: 'default',
    version,
    pod,
    status: { phase: 'Running', message: `v${version}` } as never,
    finished: false,
    updatedAt: new Date(0).toISOString(),
  };
}

function setup(copy?: Map<string, ApiPod>) {
  const api = new FakeApi();
  const logger = createLogger({ service: 't', stream: { write: () => true } });
  return { api, syncer: new PodStatusSyncer(api, new MirrorPods(api, 'node-a', () => undefined), logger, copy === undefined ? undefined : { get: (uid) => copy.get(uid) }) };
}

/** The API copy of pod UID with `status`. */
const apiCopy = (status: Record<string, unknown>, extra: Partial<ApiPod['metadata']> = {}): ApiPod => ({ metadata: { uid: UID, ...extra }, status });

const count = (api: FakeApi, method: string): number => api.calls.filter((c) => c.method === method).length;

describe('PodStatusSyncer', () => {
  it('sends only the newest of the statuses written while a sync of the pod is in flight', async () => {
    const { api, syncer } = setup();
    let release!: () => void;
    api.hold = new Promise<void>((r) => (release = r));
    const first = syncer.sync(record(1));
    // Wait for the first sync's GET: it is in flight.
    while (count(api, 'GET') === 0) await new Promise((r) => setImmediate(r));
    const later = [2, 3, 4, 5, 6, 7, 8, 9].map((v) => syncer.sync(record(v)));
    release();
    api.hold = undefined;
    const outcomes = await Promise.all([first, ...later]);
    assert.deepEqual(outcomes, ['patched', ...later.map(() => 'patched')]);
    assert.equal(count(api, 'GET'), 2, 'one GET for the sync in flight, one for all the statuses written meanwhile');
    const patches = api.calls.filter((c) => c.method === 'PATCH').map((c) => (c.body as { status: { message: string } }).status.message);
    assert.deepEqual(patches, ['v1', 'v9'], 'the latest status wins');
    assert.equal(api.status['message'], 'v9');
  });

  it('syncs asked for in one turn become one; an older record does not replace a newer one', async () => {
    const { api, syncer } = setup();
    const runs = [syncer.sync(record(3)), syncer.sync(record(5)), syncer.sync(record(4))];
    assert.deepEqual(await Promise.all(runs), ['patched', 'patched', 'patched']);
    assert.equal(count(api, 'PATCH'), 1);
    assert.equal(api.status['message'], 'v5');
    // A later write of a version already sent is skipped; a forced resync still reconciles.
    assert.equal(await syncer.sync(record(5)), 'current');
    assert.equal(await syncer.sync(record(5), true), 'unchanged');
    assert.equal(count(api, 'PATCH'), 1);
  });

  it('a forced resync queued behind a sync keeps its force', async () => {
    const { api, syncer } = setup();
    await syncer.sync(record(1));
    let release!: () => void;
    api.hold = new Promise<void>((r) => (release = r));
    const inFlight = syncer.sync(record(2));
    while (count(api, 'GET') < 2) await new Promise((r) => setImmediate(r));
    api.status = { ...api.status, phase: 'Pending' }; // changed behind the kubelet's back, after the GET in flight
    const queued = [syncer.sync(record(2)), syncer.sync(record(2), true)];
    release();
    api.hold = undefined;
    await inFlight;
    assert.deepEqual(await Promise.all(queued), ['patched', 'patched']);
    assert.equal(api.status['message'], 'v2');
    assert.equal(api.status['phase'], 'Running');
  });
});

describe('reconcileReason (syncBatch(true): needsUpdate || needsReconcile)', () => {
  const r = record(2);
  const same = apiCopy({ phase: 'Running', message: 'v2' });

  it('does not sync a pod whose sent status the API copy has', () => {
    assert.equal(reconcileReason(r, 2, same), undefined);
  });

  it('syncs a pod never sent, or with a newer version than the one sent', () => {
    assert.equal(reconcileReason(r, undefined, same), 'not-sent');
    assert.equal(reconcileReason(r, 1, same), 'newer');
  });

  it('syncs a pod the copy does not have, or has with another UID (its GET tells whether it is gone)', () => {
    assert.equal(reconcileReason(r, 2, undefined), 'no-api-copy');
    assert.equal(reconcileReason(r, 2, { ...same, metadata: { uid: 'other' } }), 'no-api-copy');
  });

  it('syncs a pod being deleted (it is deleted once finished)', () => {
    assert.equal(reconcileReason(r, 2, apiCopy(same.status ?? {}, { deletionTimestamp: '2026-01-01T00:00:00Z' })), 'deletion-pending');
  });

  it('syncs a pod whose API status was changed behind its back', () => {
    assert.equal(reconcileReason(r, 2, apiCopy({ phase: 'Pending', message: 'v2' })), 'status-differs');
    assert.equal(reconcileReason(r, 2, apiCopy({ phase: 'Running' })), 'status-differs');
    assert.equal(reconcileReason(r, 2, { metadata: { uid: UID } }), 'status-differs');
  });

  it('does not sync a pod whose terminal API phase the computed status would not regress', () => {
    // The sync keeps Succeeded: its patch would be empty, so there is nothing to reconcile.
    const terminal = apiCopy({ phase: 'Succeeded', message: 'v2' });
    assert.equal(reconcileReason({ ...r, status: { phase: 'Running', message: 'v2' } as never }, 2, terminal), undefined);
  });

  it('checks a static pod against its mirror pod: missing, being deleted or of another version of the pod', () => {
    const pod = aPod({ metadata: { name: 'web', namespace: 'default', uid: UID, annotations: { 'kubernetes.io/config.source': 'file' } } });
    const staticRecord = { ...r, pod };
    const mirror = (annotations: Record<string, string>, extra: Partial<ApiPod['metadata']> = {}): ApiPod => ({
      metadata: { uid: 'mirror-uid', annotations, ...extra },
      status: { phase: 'Running', message: 'v2' },
    });
    const current = { 'kubernetes.io/config.mirror': UID };
    assert.equal(reconcileReason(staticRecord, 2, mirror(current)), undefined, 'the mirror pod has another UID than the static pod');
    assert.equal(reconcileReason(staticRecord, 2, undefined), 'no-api-copy');
    assert.equal(reconcileReason(staticRecord, 2, mirror(current, { deletionTimestamp: '2026-01-01T00:00:00Z' })), 'deletion-pending');
    assert.equal(reconcileReason(staticRecord, 2, mirror({ 'kubernetes.io/config.mirror': 'older-hash' })), 'mirror-outdated');
    assert.equal(reconcileReason(staticRecord, 2, { ...mirror(current), status: { phase: 'Pending' } }), 'status-differs');
  });
});

describe('PodStatusSyncer.resync with an API copy', () => {
  it('GETs and patches only the pods whose API copy differs', async () => {
    const copy = new Map<string, ApiPod>();
    const { api, syncer } = setup(copy);
    assert.equal(await syncer.sync(record(1)), 'patched');
    const calls = api.calls.length;
    copy.set(UID, apiCopy({ ...api.status }));
    await syncer.resync([record(1)]);
    assert.equal(api.calls.length, calls, 'in sync: no request');
    // Changed on the API server (the watch saw it): reconciled with a GET and a PATCH.
    api.status = { ...api.status, phase: 'Pending' };
    copy.set(UID, apiCopy({ ...api.status }));
    await syncer.resync([record(1)]);
    assert.deepEqual(
      api.calls.slice(calls).map((c) => c.method),
      ['GET', 'PATCH'],
    );
    assert.equal(api.status['phase'], 'Running');
  });

  it('without a copy of the pod (not listed yet), reconciles it with a GET as before', async () => {
    const { api, syncer } = setup(new Map());
    await syncer.sync(record(1));
    const calls = api.calls.length;
    await syncer.resync([record(1)]);
    assert.deepEqual(
      api.calls.slice(calls).map((c) => c.method),
      ['GET'],
    );
  });
});

describe('PodStatusSyncer and mirror pods', () => {
  /** An API server holding mirror pods by name; a GET answers with what is there once `hold` is released. */
  class MirrorApi implements KubeRest {
    readonly pods = new Map<string, { metadata: { uid: string; annotations: Record<string, string> }; status: Record<string, unknown> }>();
    readonly calls: string[] = [];
    hold: Promise<void> | undefined;
    #n = 0;
    async request(method: string, path: string, body?: unknown): Promise<KubeResponse> {
      this.calls.push(method);
      const name = path.split('/').at(path.endsWith('/status') ? -2 : -1) ?? '';
      if (method === 'GET') {
        if (this.hold !== undefined) await this.hold;
        const p = this.pods.get(name);
        return p === undefined ? { status: 404, body: {} } : { status: 200, body: structuredClone(p) };
      }
      if (method === 'POST') {
        const b = body as { metadata: { name: string; annotations: Record<string, string> } };
        const created = { metadata: { uid: `mirror-${++this.#n}`, annotations: b.metadata.annotations }, status: {} };
        this.pods.set(b.metadata.name, created);
        return { status: 201, body: structuredClone(created) };
      }
      if (method === 'PATCH') {
        const p = this.pods.get(name);
        if (p === undefined) return { status: 404, body: {} };
        p.status = { ...p.status, ...(body as { status: Record<string, unknown> }).status };
        return { status: 200, body: structuredClone(p) };
      }
      if (method === 'DELETE') this.pods.delete(name);
      return { status: 200, body: {} };
    }
  }

  it("deletes a static pod's mirror pod after the pod's sync in flight, so that sync cannot create it again", async () => {
    const api = new MirrorApi();
    const syncer = new PodStatusSyncer(api, new MirrorPods(api, 'node-a', () => 'node-uid'), createLogger({ service: 't', stream: { write: () => true } }));
    const pod = aPod({ metadata: { name: 'web-node-a', namespace: 'default', uid: UID, annotations: { 'kubernetes.io/config.source': 'file' } } });
    const staticRecord = (version: number): PodStatusRecord => ({ ...record(version), name: 'web-node-a', pod });
    assert.equal(await syncer.sync(staticRecord(1)), 'patched');
    assert.ok(api.pods.has('web-node-a'));
    let release!: () => void;
    api.hold = new Promise<void>((r) => (release = r));
    const inFlight = syncer.sync(staticRecord(2));
    while (api.calls.filter((c) => c === 'GET').length < 2) await new Promise((r) => setImmediate(r));
    const forgotten = syncer.forget(UID);
    release();
    api.hold = undefined;
    await Promise.all([inFlight, forgotten]);
    assert.equal(api.pods.has('web-node-a'), false, 'the mirror pod is gone, not created again');
    assert.deepEqual(api.calls.slice(-3), ['GET', 'PATCH', 'DELETE']);
  });
});
