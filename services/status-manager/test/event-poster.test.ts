/**
 * The event poster's handling of SL_EVENTS messages against an API server stand-in: a list's
 * events are posted one by one in order, and a failed post is retried from that event on, with
 * its first name, so nothing is posted twice.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KubeEventMessage, Subjects, type KubeEvent } from '@splitlet/api';
import { InMemoryBus } from '@splitlet/bus/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually } from '@splitlet/testkit';
import { postEventsToApi } from '../src/api/event-poster.js';
import type { KubeResponse, KubeRest } from '../src/api/kube-rest.js';

const NODE = 'node-1';

const event = (reason: string, i: number): KubeEvent => ({
  type: 'kubelet.events.Event.v1',
  eventType: 'Normal',
  reason,
  message: `${reason} container app`,
  involvedObject: { kind: 'Pod', name: 'web', namespace: 'default', uid: 'uid-1', fieldPath: 'spec.containers{app}' },
  source: { component: 'kubelet', host: NODE },
  timestamp: new Date(Date.parse('2026-12-05T10:00:00Z') + i).toISOString(),
});

/** Records every request; answers 201 with the posted Event, or `fail` for the posts it names. */
function apiStandIn(fail: (reason: string, attempt: number) => KubeResponse | undefined): KubeRest & { readonly posts: Array<{ reason: string; name: string }> } {
  const posts: Array<{ reason: string; name: string }> = [];
  const attempts = new Map<string, number>();
  return {
    posts,
    request(method, path, body) {
      assert.equal(`${method} ${path}`, 'POST /api/v1/namespaces/default/events');
      const ev = body as { reason: string; metadata: { name: string } };
      posts.push({ reason: ev.reason, name: ev.metadata.name });
      const n = (attempts.get(ev.reason) ?? 0) + 1;
      attempts.set(ev.reason, n);
      return Promise.resolve(fail(ev.reason, n) ?? { status: 201, body: { ...ev, metadata: { ...ev.metadata, resourceVersion: String(posts.length) } } });
    },
  };
}

describe('postEventsToApi', () => {
  let bus: InMemoryBus;
  let ac: AbortController;
  beforeEach(() => {
    bus = new InMemoryBus({ node: NODE });
    ac = new AbortController();
  });
  afterEach(async () => {
    ac.abort();
    await bus.close();
  });
  const logger = createLogger({ service: 'test', level: 'error', stream: { write: () => undefined } });

  it("posts a list's events in order, one Event each", async () => {
    const api = apiStandIn(() => undefined);
    await postEventsToApi(bus, api, { node: NODE, logger, signal: ac.signal });
    await bus.publish(KubeEventMessage, Subjects.events(NODE, 'uid-1'), { type: 'kubelet.events.EventList.v1', items: ['Pulled', 'Created', 'Started'].map(event) });
    await bus.publish(KubeEventMessage, Subjects.events(NODE, 'uid-1'), event('Killing', 3));
    await eventually(() => api.posts.length === 4, { message: 'four posts', timeoutMs: 30_000 });
    assert.deepEqual(
      api.posts.map((p) => p.reason),
      ['Pulled', 'Created', 'Started', 'Killing'],
    );
    assert.equal(new Set(api.posts.map((p) => p.name)).size, 4, 'each its own Event');
  });

  it('retries a list from the event whose post failed, with the same Event name; the ones before are not posted again', async () => {
    const api = apiStandIn((reason, attempt) => (reason === 'Created' && attempt === 1 ? { status: 503, body: { message: 'the server is overloaded' } } : undefined));
    await postEventsToApi(bus, api, { node: NODE, logger, signal: ac.signal });
    await bus.publish(KubeEventMessage, Subjects.events(NODE, 'uid-1'), { type: 'kubelet.events.EventList.v1', items: ['Pulled', 'Created', 'Started'].map(event) });
    await eventually(() => api.posts.length === 4, { message: 'four posts', timeoutMs: 30_000 });
    assert.deepEqual(
      api.posts.map((p) => p.reason),
      ['Pulled', 'Created', 'Created', 'Started'],
    );
    assert.equal(api.posts[1]!.name, api.posts[2]!.name, 'the retry posts the Event it first tried');
  });
});
