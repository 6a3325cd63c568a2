import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from '@splitlet/service';
import { FakeClock } from '@splitlet/service/testing';
import type { KubeRest, KubeWatch } from '../src/api/kube-rest.js';
import { rateLimitedRest } from '../src/api/rate-limited-rest.js';

describe('rateLimitedRest', () => {
  it('sends every request after its wait, at the window after its token, in order, reporting each wait by verb; watches pass through', async () => {
    const sent: string[] = [];
    const watched: string[] = [];
    const api: KubeRest & KubeWatch = {
      request: (method, path) => {
        sent.push(`${method} ${path}`);
        return Promise.resolve({ status: 200, body: { path } });
      },
      watch: (path) => {
        watched.push(path);
        return Promise.resolve();
      },
    };
    const waits: Array<[string, number]> = [];
    // Time stands still at 1003 ms: after the burst of 1, each token is 1 ms (1000 qps) further away,
    // and a request that waits goes at the next 10 ms window.
    const clock = new FakeClock(1003);
    const limited = rateLimitedRest(api, new TokenBucket(1000, 1, clock), { observe: (verb, s) => waits.push([verb, s]), clock, windowMs: 10 });
    const answers = await Promise.all([limited.request('PATCH', '/a'), limited.request('POST', '/b'), limited.request('GET', '/c')]);
    assert.deepEqual(sent, ['PATCH /a', 'POST /b', 'GET /c']);
    assert.deepEqual(
      answers.map((a) => a.body),
      [{ path: '/a' }, { path: '/b' }, { path: '/c' }],
    );
    assert.deepEqual(waits, [
      ['PATCH', 0],
      ['POST', 0.007],
      ['GET', 0.007],
    ]);
    await limited.watch('/w', () => undefined, new AbortController().signal);
    assert.deepEqual(watched, ['/w']);
  });
});
