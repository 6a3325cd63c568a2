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
  /** The pod's resourceVersion: every PATCH (and {@link FakeApi.change}) makes a new one. */
  rv = 1;
  deletionTimestamp: string | undefined;
  hold: Promise<void> | undefined;
  async request(method: string, path: string, body?: unknown): Promise<KubeResponse> {
    this.calls.push({ method, path, ...(body === undefined ? {} : { body }) });
    if (method === 'GET') {
      const pod = this.pod(); // as read when the request arrived
      if (this.hold !== undefined) await this.hold;
      return { status: 200, body: pod };
    }
    if (method === 'PATCH') {
      const patch = body as { metadata: { resourceVersion?: string }; status: Record<string, unknown> };
      const rv = patch.metadata.resourceVersion;
      if (rv !== undefined && rv !== String(this.rv)) return { status: 409, body: { message: 'the object has been modified' } };
      this.change({ ...this.status, ...patch.status });
      return { status: 200, body: this.pod() };
    }
    return { status: 404, body: {} };
  }
  /** Someone writes the pod's status. */
  change(status: Record<string, unknown>): void {
    this.status = status;
    this.rv++;
  }
  /** The pod as a GET (or a watch event) has it now. */
  pod(): ApiPod {
    const metadata = { uid: UID, resourceVersion: String(this.rv), ...(this.deletionTimestamp === undefined ? {} : { deletionTimestamp: this.deletionTimestamp }) };
    return { metadata, status: structuredClone(this.status) };
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
    assert.equal(syncer.pending, 1, 'one pod with a sync in flight and one waiting');
    release();
    api.hold = undefined;
    const outcomes = await Promise.all([first, ...later]);
    assert.equal(syncer.pending, 0);
    assert.deepEqual(outcomes, ['patched', ...later.map(() => 'patched')]);
    assert.equal(count(api, 'GET'), 1, 'one GET for the sync in flight; the statuses written meanwhile are patched against what it wrote');
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
    api.change({ phase: 'Running', message: 'v1' });
    let release!: () => void;
    api.hold = new Promise<void>((r) => (release = r));
    const inFlight = syncer.sync(record(2));
    while (count(api, 'GET') < 1) await new Promise((r) => setImmediate(r));
    api.change({ ...api.status, phase: 'Pending' }); // changed behind the kubelet's back, after the GET in flight
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
    api.change({ ...api.status, phase: 'Pending' });
    copy.set(UID, apiCopy({ ...api.status }));
    await syncer.resync([record(1)]);
    assert.deepEqual(
      api.calls.slice(calls).map((c) => c.method),
      ['GET', 'PATCH'],
    );
    assert.equal(api.status['phase'], 'Running');
  });

  it("compares a pod found in sync again only when its record or its API copy is a new object (the copy's status is not read again)", async () => {
    const copy = new Map<string, ApiPod>();
    const { api, syncer } = setup(copy);
    const r1 = record(1);
    assert.equal(await syncer.sync(r1), 'patched');
    let statusReads = 0;
    const counted = (status: Record<string, unknown>): ApiPod => {
      const pod = apiCopy(status);
      return Object.defineProperty(pod, 'status', {
        get: () => {
          statusReads++;
          return status;
        },
      });
    };
    copy.set(UID, counted({ ...api.status }));
    const calls = api.calls.length;
    await syncer.resync([r1]);
    assert.ok(statusReads > 0, 'the first resync compares the status');
    statusReads = 0;
    for (let i = 0; i < 3; i++) await syncer.resync([r1]);
    assert.equal(statusReads, 0, 'the same record and copy: not compared again');
    assert.equal(api.calls.length, calls, 'in sync: no request');
    // Someone changes the pod's status: the watch brings a new copy, which is compared and reconciled.
    api.change({ ...api.status, phase: 'Pending' });
    copy.set(UID, counted({ ...api.status }));
    await syncer.resync([r1]);
    assert.ok(statusReads > 0);
    assert.deepEqual(
      api.calls.slice(calls).map((c) => c.method),
      ['GET', 'PATCH'],
    );
    assert.equal(api.status['phase'], 'Running');
  });

  it('patches against the pod it last wrote, on condition of its resourceVersion; reads the pod only when that is refused', async () => {
    const { api, syncer } = setup();
    const methods = (from: number): string[] =>
      api.calls.slice(from).map((c) => (c.method === 'PATCH' ? `PATCH@${(c.body as { metadata: { resourceVersion?: string } }).metadata.resourceVersion ?? '-'}` : c.method));
    assert.equal(await syncer.sync(record(1)), 'patched');
    assert.deepEqual(methods(0), ['GET', 'PATCH@-'], 'the first sync reads the pod and patches as the kubelet does');
    assert.equal(await syncer.sync(record(2)), 'patched');
    assert.deepEqual(methods(2), ['PATCH@2'], 'the next one patches against what the first wrote (resourceVersion 2)');
    assert.equal(api.status['message'], 'v2');
    // Someone else writes the pod: the conditional patch is refused, the pod read, the status patched.
    api.change({ ...api.status, phase: 'Pending', message: 'theirs' });
    assert.equal(await syncer.sync(record(3)), 'patched');
    assert.deepEqual(methods(3), ['PATCH@3', 'GET', 'PATCH@-']);
    assert.deepEqual([api.status['phase'], api.status['message']], ['Running', 'v3']);
    // A forced resync of the version sent: nothing to patch against the assumed pod proves nothing,
    // so the pod is read (it may be being deleted) — and nothing is written.
    const calls = api.calls.length;
    assert.equal(await syncer.sync(record(3), true), 'unchanged');
    assert.deepEqual(methods(calls), ['GET']);
  });

  it('a pod deleted since the last patch is read, then deleted once terminal and finished — also when its status was sent already', async () => {
    const terminal = (version: number, finished: boolean): PodStatusRecord => ({ ...record(version), status: { phase: 'Succeeded' } as never, finished });
    for (const sentBefore of [false, true]) {
      const { api, syncer } = setup();
      assert.equal(await syncer.sync(sentBefore ? terminal(1, false) : record(1)), 'patched');
      // The pod is deleted (deletionTimestamp, a new resourceVersion) after that patch.
      api.deletionTimestamp = '2026-12-03T00:00:00Z';
      api.change({ ...api.status });
      const from = api.calls.length;
      assert.equal(await syncer.sync(terminal(2, true)), 'deleted', `sent before: ${sentBefore}`);
      assert.deepEqual(
        api.calls.slice(from).map((c) => c.method),
        sentBefore ? ['GET', 'DELETE'] : ['PATCH', 'GET', 'PATCH', 'DELETE'],
        `sent before: ${sentBefore}`,
      );
      assert.equal(api.status['phase'], 'Succeeded');
    }
  });

  it('the first sync patches against the watched copy when there is one; an outdated copy costs a refused patch and a read', async () => {
    const copy = new Map<string, ApiPod>();
    const { api, syncer } = setup(copy);
    copy.set(UID, api.pod());
    assert.equal(await syncer.sync(record(1)), 'patched');
    assert.deepEqual(
      api.calls.map((c) => c.method),
      ['PATCH'],
    );
    const other = setup(copy);
    other.api.change({ phase: 'Pending', message: 'newer than the copy' });
    assert.equal(await other.syncer.sync(record(1)), 'patched');
    assert.deepEqual(
      other.api.calls.map((c) => c.method),
      ['PATCH', 'GET', 'PATCH'],
    );
    assert.equal(other.api.status['message'], 'v1');
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
  /**
   * An API server holding mirror pods by name; a GET answers with what is there once `hold` is
   * released. With `versions`, its pods have resourceVersions, which a patch may set as a precondition.
   */
  class MirrorApi implements KubeRest {
    readonly pods = new Map<string, { metadata: { uid: string; annotations: Record<string, string>; resourceVersion?: string }; status: Record<string, unknown> }>();
    readonly calls: string[] = [];
    hold: Promise<void> | undefined;
    #n = 0;
    #rv = 0;
    constructor(readonly versions = false) {}
    #version(): { resourceVersion?: string } {
      return this.versions ? { resourceVersion: String(++this.#rv) } : {};
    }
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
        if (this.pods.has(b.metadata.name)) return { status: 409, body: { reason: 'AlreadyExists' } };
        const created = { metadata: { uid: `mirror-${++this.#n}`, annotations: b.metadata.annotations, ...this.#version() }, status: {} };
        this.pods.set(b.metadata.name, created);
        return { status: 201, body: structuredClone(created) };
      }
      if (method === 'PATCH') {
        const p = this.pods.get(name);
        if (p === undefined) return { status: 404, body: {} };
        const patch = body as { metadata: { uid: string; resourceVersion?: string }; status: Record<string, unknown> };
        if (patch.metadata.uid !== p.metadata.uid || (patch.metadata.resourceVersion !== undefined && patch.metadata.resourceVersion !== p.metadata.resourceVersion))
          return { status: 409, body: {} };
        p.status = { ...p.status, ...patch.status };
        Object.assign(p.metadata, this.#version());
        return { status: 200, body: structuredClone(p) };
      }
      if (method === 'DELETE') this.pods.delete(name);
      return { status: 200, body: {} };
    }
  }

  it('patches the mirror pod it last wrote without reading it; a mirror pod deleted meanwhile is created again', async () => {
    const api = new MirrorApi(true);
    const syncer = new PodStatusSyncer(api, new MirrorPods(api, 'node-a', () => 'node-uid'), createLogger({ service: 't', stream: { write: () => true } }));
    const pod = aPod({ metadata: { name: 'web-node-a', namespace: 'default', uid: UID, annotations: { 'kubernetes.io/config.source': 'file' } } });
    const staticRecord = (version: number, p = pod): PodStatusRecord => ({ ...record(version), name: 'web-node-a', pod: p });
    assert.equal(await syncer.sync(staticRecord(1)), 'patched');
    assert.deepEqual(api.calls, ['POST', 'PATCH'], 'the mirror pod created at once, not read first');
    assert.equal(await syncer.sync(staticRecord(2)), 'patched');
    assert.deepEqual(api.calls.slice(2), ['PATCH'], 'against the mirror pod the last patch wrote');
    api.pods.delete('web-node-a'); // someone deleted the mirror pod
    assert.equal(await syncer.sync(staticRecord(3)), 'patched');
    assert.deepEqual(api.calls.slice(3), ['PATCH', 'POST', 'PATCH'], 'the refused patch (404) sends the sync to the read path, which creates the mirror pod');
    assert.equal(api.pods.get('web-node-a')?.status['message'], 'v3');
    // A new version of the static pod (another hash): its outdated mirror pod is not patched but replaced.
    const changed = aPod({ metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, 'kubernetes.io/config.hash': 'h2' } } });
    assert.equal(await syncer.sync(staticRecord(4, changed)), 'patched');
    assert.deepEqual(api.calls.slice(6), ['POST', 'GET', 'DELETE', 'POST', 'PATCH'], 'its create refused, the outdated mirror pod is read and replaced');
    assert.equal(api.pods.get('web-node-a')?.metadata.annotations['kubernetes.io/config.mirror'], 'h2');
  });

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
    while (!api.calls.includes('GET')) await new Promise((r) => setImmediate(r)); // its create refused (409), the sync reads the mirror pod
    const forgotten = syncer.forget(UID);
    release();
    api.hold = undefined;
    await Promise.all([inFlight, forgotten]);
    assert.equal(api.pods.has('web-node-a'), false, 'the mirror pod is gone, not created again');
    assert.deepEqual(api.calls.slice(-3), ['GET', 'PATCH', 'DELETE']);
  });
});
