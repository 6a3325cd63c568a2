import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '@splitlet/telemetry';
import type { KubeResponse, KubeRest, KubeWatch, KubeWatchEvent } from '../src/api/kube-rest.js';
import { NodePods } from '../src/api/node-pods.js';

const pod = (uid: string, rv: string, phase: string, extra: Record<string, unknown> = {}): unknown => ({
  metadata: { uid, name: uid, namespace: 'default', resourceVersion: rv, ...extra },
  spec: { nodeName: 'node-a' },
  status: { phase },
});

/** An API server whose watches are played from `streams` (one list of events per watch), then hang until aborted. */
class FakeApi implements KubeRest, KubeWatch {
  readonly paths: string[] = [];
  readonly lists: unknown[][];
  readonly streams: KubeWatchEvent[][];
  constructor(lists: unknown[][], streams: KubeWatchEvent[][]) {
    this.lists = lists;
    this.streams = streams;
  }
  request(_method: string, path: string): Promise<KubeResponse> {
    this.paths.push(path);
    const items = this.lists.shift() ?? [];
    return Promise.resolve({ status: 200, body: { kind: 'PodList', metadata: { resourceVersion: `L${this.paths.length}` }, items } });
  }
  async watch(path: string, onEvent: (e: KubeWatchEvent) => void, signal: AbortSignal): Promise<void> {
    this.paths.push(path);
    const events = this.streams.shift();
    if (events === undefined) return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    for (const e of events) onEvent(e);
  }
}

const quiet = createLogger({ service: 't', stream: { write: () => true } });

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

describe('NodePods (list+watch of the node pods)', () => {
  it('knows no pod before the list, then follows ADDED, MODIFIED and DELETED; resumes a watch from the last resourceVersion', async () => {
    const api = new FakeApi(
      [[pod('a', '1', 'Pending')]],
      [
        [
          { type: 'MODIFIED', object: pod('a', '2', 'Running') },
          { type: 'ADDED', object: pod('b', '3', 'Pending') },
        ],
        [
          { type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } },
          { type: 'DELETED', object: pod('b', '8', 'Pending') },
          { type: 'MODIFIED', object: pod('a', '9', 'Running', { deletionTimestamp: '2026-01-01T00:00:00Z' }) },
        ],
      ],
    );
    const pods = new NodePods(api, 'node-a', quiet);
    assert.equal(pods.get('a'), undefined);
    const ctl = new AbortController();
    const done = pods.run(ctl.signal);
    await until(() => api.paths.length === 4);
    ctl.abort();
    await done;
    assert.deepEqual(api.paths, [
      '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a',
      '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&watch=true&allowWatchBookmarks=true&resourceVersion=L1',
      '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&watch=true&allowWatchBookmarks=true&resourceVersion=3',
      '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&watch=true&allowWatchBookmarks=true&resourceVersion=9',
    ]);
    assert.deepEqual(pods.get('a'), { metadata: { uid: 'a', resourceVersion: '9', deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { phase: 'Running' } });
    assert.equal(pods.get('b'), undefined);
  });

  it('relists after an ERROR event (410 Expired), replacing the copy', async () => {
    const api = new FakeApi(
      [[pod('a', '1', 'Pending'), pod('b', '1', 'Pending')], [pod('a', '5', 'Running')]],
      [[{ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } }]],
    );
    const pods = new NodePods(api, 'node-a', quiet);
    const ctl = new AbortController();
    const done = pods.run(ctl.signal);
    await until(() => api.paths.length === 4);
    ctl.abort();
    await done;
    assert.equal(api.paths.filter((p) => !p.includes('watch=true')).length, 2);
    assert.deepEqual(pods.get('a')?.status, { phase: 'Running' });
    assert.equal(pods.get('b'), undefined, 'gone from the relist');
  });
});
