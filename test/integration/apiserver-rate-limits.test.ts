/**
 * The kubelet's client-side rate limits, on the real status-manager process against the real embedded
 * API server and nats-server: with eventRecordQPS 2 / eventBurst 1 the node's events reach the API
 * server no faster than 2 a second, and every one of them arrives; with kubeAPIQPS 2 / kubeAPIBurst 1
 * a pod's quick run of statuses is reported with its newest one. The waits show in
 * rest_client_rate_limiter_duration_seconds. Only lower bounds on time are asserted: a loaded machine
 * can only stretch them.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { KubeEvent, PodStatusUpdate, Subjects, type BoundPod } from '@splitlet/api';
import { connectBus, type NatsBus } from '@splitlet/bus';
import { aRunningStatus } from '@splitlet/kube/testing';
import { createLogger } from '@splitlet/telemetry';
import { eventually, type SpawnedProcess } from '@splitlet/testkit';
import { startApiServer, startStatusManager, statusManagerPortFile, type ApiServerUnderTest } from './apiserver/harness.js';

const NODE = 'node-limits';
const SLOW = { timeoutMs: 60_000 };

describe('status-manager → API server: kubeAPIQPS and eventRecordQPS (integration)', () => {
  let api: ApiServerUnderTest;
  let bus: NatsBus;
  let proc: SpawnedProcess;

  before(async () => {
    api = await startApiServer();
    bus = await connectBus({ servers: api.nats.url, process: 'test', node: NODE, logger: createLogger({ service: 'test', stream: { write: () => true } }) });
    proc = await startStatusManager(api, NODE, { KUBE_API_QPS: '2', KUBE_API_BURST: '1', EVENT_RECORD_QPS: '2', EVENT_BURST: '1' });
  });

  after(async () => {
    const code = await proc?.stop();
    await bus?.close();
    await api?.stop();
    assert.equal(code, 0, `status-manager exited with ${code}:\n${proc?.tail(30)}`);
  });

  /** rest_client_rate_limiter_duration_seconds of `verb`: its count and sum. */
  async function limiterWaits(verb: string): Promise<{ count: number; sum: number }> {
    const port = (await readFile(statusManagerPortFile(api), 'utf8')).trim();
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const value = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`rest_client_rate_limiter_duration_seconds_${series}{`) && l.includes(`verb="${verb}"`));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    return { count: value('count'), sum: value('sum') };
  }

  it('posts every event, no faster than eventRecordQPS allows after the burst', async () => {
    const uid = 'uid-limited';
    const reasons = ['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started'];
    const seen = new Map<string, number>();
    const t0 = Date.now();
    for (const reason of reasons) {
      await bus.publish(KubeEvent, Subjects.events(NODE, uid), {
        type: 'kubelet.events.Event.v1',
        eventType: 'Normal',
        reason,
        message: `${reason} message`,
        involvedObject: { kind: 'Pod', name: 'web-limited', namespace: 'default', uid },
        source: { component: 'kubelet', host: NODE },
        timestamp: new Date().toISOString(),
      });
    }
    await eventually(
      async () => {
        const r = await api.request('GET', `/api/v1/namespaces/default/events?fieldSelector=involvedObject.uid%3D${uid}`);
        for (const e of (r.body?.items as any[] | undefined) ?? []) if (!seen.has(e.reason)) seen.set(e.reason, Date.now());
        return seen.size === reasons.length ? true : undefined;
      },
      { ...SLOW, intervalMs: 50, message: 'every event posted' },
    );
    // 5 events at 2 a second with a burst of 1: the last is posted at least 2 s after the first, which
    // was published after t0.
    const last = Math.max(...seen.values()) - t0;
    assert.ok(last >= 2000, `the last event was in the API server ${last} ms after the first was published, expected at least 2000 ms at eventRecordQPS 2`);
    const waits = await limiterWaits('POST');
    assert.ok(waits.count >= reasons.length, `the rate limiter saw ${waits.count} POSTs`);
    assert.ok(waits.sum > 0, 'POSTs waited for their tokens');
  });

  it('reports the newest of a quick run of pod statuses, its patches no faster than kubeAPIQPS', async () => {
    const created = await api.request('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-qps' },
      spec: { nodeName: NODE, containers: [{ name: 'foo1', image: 'busybox' }], restartPolicy: 'Never' },
    });
    assert.equal(created.status, 201, created.text);
    const pod = created.body as BoundPod;
    pod.metadata.annotations = { ...pod.metadata.annotations, 'kubernetes.io/config.source': 'api' };
    const before = await limiterWaits('PATCH');
    const t0 = Date.now();
    for (let i = 1; i <= 6; i++) {
      const u: PodStatusUpdate = {
        type: 'kubelet.status.PodStatusUpdate.v1',
        kind: 'set',
        uid: pod.metadata.uid,
        name: pod.metadata.name,
        namespace: 'default',
        pod,
        couldHaveRunningContainers: true,
        at: new Date().toISOString(),
        status: { phase: 'Running', message: `status-${i}`, containerStatuses: [aRunningStatus('foo1')] },
      };
      await bus.publish(PodStatusUpdate, Subjects.status(NODE, pod.metadata.uid), u);
    }
    await eventually(async () => ((await api.request('GET', '/api/v1/namespaces/default/pods/web-qps')).body?.status?.message === 'status-6' ? true : undefined), {
      ...SLOW,
      message: 'the newest status reported',
    });
    const elapsed = Date.now() - t0;
    const after = await limiterWaits('PATCH');
    const patches = after.count - before.count;
    // One sync per pod at a time, the statuses published meanwhile folded into the next: fewer
    // patches than statuses, each after the first one token (500 ms) after the one before.
    assert.ok(patches >= 1 && patches < 6, `${patches} patches for 6 statuses`);
    assert.ok(elapsed >= 500 * (patches - 1), `${patches} patches within ${elapsed} ms at kubeAPIQPS 2`);
  });
});
