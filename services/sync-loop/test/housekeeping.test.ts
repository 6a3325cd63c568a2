import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DesiredPod, KillRequest } from '@splitlet/api';
import { planHousekeeping } from '../src/sync-loop/housekeeping.js';
import { killGracePeriod, shortenedKill } from '../src/sync-loop/kill-grace.js';
import { admissionRejectionLabel } from '../src/sync-loop/admission.js';
import { pod, runtimeEntry, START, worker } from './fakes.js';

function desired(uid: string, o: Partial<DesiredPod> = {}): DesiredPod {
  return { type: 'kubelet.podworker.DesiredPod.v1', pod: pod(uid), updateType: 'create', startTime: new Date(START).toISOString(), ...o };
}
function kills(...ks: KillRequest[]): { get(uid: string): KillRequest | undefined } {
  const m = new Map(ks.map((k) => [k.uid, k]));
  return { get: (uid) => m.get(uid) };
}
const kill = (uid: string, reason: KillRequest['reason'] = 'removed'): KillRequest => ({ type: 'kubelet.podworker.KillRequest.v1', uid, reason, requestedAt: 'x' });

describe('planHousekeeping: orphan decisions', () => {
  const cases: Array<{ name: string; desired: boolean; worker: boolean; kill: boolean; running: boolean; orphan: boolean; removed: boolean }> = [
    { name: 'running, unknown everywhere → orphaned', desired: false, worker: false, kill: false, running: true, orphan: true, removed: false },
    { name: 'not running, unknown → nothing', desired: false, worker: false, kill: false, running: false, orphan: false, removed: false },
    { name: 'running, desired → nothing', desired: true, worker: false, kill: false, running: true, orphan: false, removed: false },
    { name: 'running, worker known, undesired → removed (the worker kills it)', desired: false, worker: true, kill: false, running: true, orphan: false, removed: true },
    { name: 'running, worker known, kill pending → nothing', desired: false, worker: true, kill: true, running: true, orphan: false, removed: false },
    { name: 'running, kill pending, no worker yet → nothing', desired: false, worker: false, kill: true, running: true, orphan: false, removed: false },
    { name: 'desired with worker → nothing', desired: true, worker: true, kill: false, running: true, orphan: false, removed: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planHousekeeping({
        desired: c.desired ? [desired('p')] : [],
        workers: c.worker ? [worker('p')] : [],
        runtime: [runtimeEntry('p', c.running)],
        kills: c.kill ? kills(kill('p')) : kills(),
        now: START,
      });
      assert.equal(plan.killOrphaned.length, c.orphan ? 1 : 0, 'orphaned');
      assert.equal(plan.killRemoved.length, c.removed ? 1 : 0, 'removed');
    });
  }

  it('a running container (sandbox not ready) also counts as running', () => {
    const e = runtimeEntry('p', false);
    e.status.containers.push({ id: 'c', name: 'c', sandboxId: 's', state: 'CONTAINER_RUNNING', createdAt: 1, image: 'i', imageRef: 'r', hash: 'h', restartCount: 0 });
    assert.equal(planHousekeeping({ desired: [], workers: [], runtime: [e], kills: kills(), now: START }).killOrphaned.length, 1);
  });

  it('keep = desired ∪ workers not finished-and-undesired ∪ running runtime pods', () => {
    const plan = planHousekeeping({
      desired: [desired('d'), desired('df')],
      workers: [worker('df', { finished: true, state: 'terminated' }), worker('t', { state: 'terminating' }), worker('f', { finished: true, state: 'terminated' })],
      runtime: [runtimeEntry('r', true), runtimeEntry('stopped', false)],
      kills: kills(kill('f')),
      now: START,
    });
    assert.deepEqual(plan.keep, ['d', 'df', 'r', 't']);
  });

  it('restarts only active desired pods without a worker, after restartAfterMs', () => {
    const input = {
      desired: [desired('new'), desired('rejected', { rejected: { reason: 'OutOfcpu', message: 'm' } }), desired('known'), desired('killing')],
      workers: [worker('known')],
      runtime: [],
      kills: kills(kill('killing')),
    };
    assert.deepEqual(planHousekeeping({ ...input, now: START + 9_999 }).restart, []);
    assert.deepEqual(
      planHousekeeping({ ...input, now: START + 10_000 }).restart.map((d) => d.pod.metadata.uid),
      ['new'],
    );
  });

  it('sends a pod that stays unknown `create` again only restartAfterMs after the last time, not at every pass', () => {
    const input = { desired: [desired('new')], workers: [], runtime: [], kills: kills() };
    const restartedAt = new Map([['new', START + 10_000]]);
    for (const now of [START + 12_000, START + 19_999]) assert.deepEqual(planHousekeeping({ ...input, restartedAt, now }).restart, [], `at +${now - START} ms`);
    assert.deepEqual(
      planHousekeeping({ ...input, restartedAt, now: START + 20_000 }).restart.map((d) => d.pod.metadata.uid),
      ['new'],
    );
  });
});

describe('kill grace', () => {
  it('is the override, else the deletion grace, else the spec, never below 1', () => {
    assert.equal(killGracePeriod({ ...kill('a'), pod: pod('a', { grace: 30 }) }), 30);
    assert.equal(killGracePeriod({ ...kill('a'), pod: pod('a', { grace: 30, deletionGrace: 7 }) }), 7);
    assert.equal(killGracePeriod({ ...kill('a'), pod: pod('a', { grace: 30 }), gracePeriodOverride: 3 }), 3);
    assert.equal(killGracePeriod({ ...kill('a'), pod: pod('a', { grace: 0 }) }), 1);
    assert.equal(killGracePeriod({ ...kill('a', 'orphaned'), gracePeriodOverride: 1 }), 1);
  });

  it('only shrinks', () => {
    const pending: KillRequest = { ...kill('a'), pod: pod('a', { grace: 30 }) };
    assert.equal(shortenedKill(pending, { ...kill('a'), pod: pod('a', { grace: 30 }) }), undefined);
    assert.equal(shortenedKill(pending, { ...kill('a'), pod: pod('a', { grace: 60 }) }), undefined);
    const shorter = shortenedKill(pending, { ...kill('a', 'removed'), pod: pod('a', { grace: 30, deletionGrace: 2 }) });
    assert.equal(shorter?.gracePeriodOverride, 2);
    assert.equal(shorter?.reason, 'removed');
  });
});

describe('admission rejection metric label', () => {
  it('keeps known reasons, folds other OutOf… and the rest', () => {
    assert.equal(admissionRejectionLabel('OutOfcpu'), 'OutOfcpu');
    assert.equal(admissionRejectionLabel('OutOfpods'), 'OutOfpods');
    assert.equal(admissionRejectionLabel('OutOfnvidia.com/gpu'), 'OutOfExtendedResources');
    assert.equal(admissionRejectionLabel('NodeAffinity'), 'Other');
    assert.equal(admissionRejectionLabel('PodOSNotSupported'), 'PodOSNotSupported');
  });
});
