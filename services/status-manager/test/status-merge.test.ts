import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodStatus, PodStatusRecord, PodStatusUpdate } from '@splitlet/api';
import { aPod, aRunningStatus, aTerminatedStatus, aWaitingStatus } from '@splitlet/kube/testing';
import { applyStatusUpdate, checkContainerStateTransition, type StatusDecision } from '../src/status/status-merge.js';

const T0 = Date.UTC(2024, 4, 1, 10, 0, 0);
const pod = aPod();

function set(status: PodStatus, couldHaveRunningContainers = true, p = pod): PodStatusUpdate {
  return {
    type: 'kubelet.status.PodStatusUpdate.v1',
    kind: 'set',
    uid: p.metadata.uid,
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    pod: p,
    status,
    couldHaveRunningContainers,
    at: new Date(T0).toISOString(),
  };
}

function terminated(status?: PodStatus, p = pod): PodStatusUpdate {
  const u: PodStatusUpdate = { ...set({}, false, p), kind: 'terminated' };
  if (status === undefined) delete u.status;
  else u.status = status;
  return u;
}

function written(d: StatusDecision): PodStatusRecord {
  assert.equal(d.kind, 'write', `expected a write, got ${JSON.stringify(d)}`);
  return (d as { record: PodStatusRecord }).record;
}

/** Applies updates in order, returning the final record. */
function run(updates: Array<[PodStatusUpdate, number]>): PodStatusRecord | undefined {
  let rec: PodStatusRecord | undefined;
  for (const [u, now] of updates) {
    const d = applyStatusUpdate(rec, u, now);
    if (d.kind === 'write') rec = d.record;
    if (d.kind === 'delete') rec = undefined;
  }
  return rec;
}

const running: PodStatus = {
  phase: 'Running',
  conditions: [
    { type: 'Ready', status: 'True' },
    { type: 'PodScheduled', status: 'True' },
  ],
  containerStatuses: [aRunningStatus('foo1')],
};

describe('status merge: versions and the unchanged skip', () => {
  it('the first set is version 1; an equal set is skipped; a change is version+1', () => {
    const r1 = written(applyStatusUpdate(undefined, set(running), T0));
    assert.equal(r1.version, 1);
    assert.equal(r1.finished, false);
    assert.equal(r1.uid, pod.metadata.uid);
    assert.deepEqual(r1.pod, pod);
    assert.deepEqual(applyStatusUpdate(r1, set(running), T0 + 5000), { kind: 'skip', reason: 'unchanged' });
    const r2 = written(applyStatusUpdate(r1, set({ ...running, podIP: '10.0.0.1' }), T0 + 5000));
    assert.equal(r2.version, 2);
    assert.equal(r2.status.podIP, '10.0.0.1');
  });

  it('startTime is set once: now when the first status has none, then kept', () => {
    const r1 = written(applyStatusUpdate(undefined, set(running), T0));
    assert.equal(r1.status.startTime, '2024-05-01T10:00:00Z');
    const r2 = written(applyStatusUpdate(r1, set({ ...running, startTime: '2030-01-01T00:00:00Z', podIP: '1.1.1.1' }), T0 + 60_000));
    assert.equal(r2.status.startTime, '2024-05-01T10:00:00Z');
    const fresh = written(applyStatusUpdate(undefined, set({ ...running, startTime: '2023-01-01T00:00:00Z' }), T0));
    assert.equal(fresh.status.startTime, '2023-01-01T00:00:00Z');
  });
});

describe('status merge: lastTransitionTime', () => {
  it('is kept while a condition keeps its status and moves when it changes', () => {
    const r1 = written(applyStatusUpdate(undefined, set(running), T0));
    const ready1 = r1.status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready1?.lastTransitionTime, '2024-05-01T10:00:00Z');

    // Same status values, a new transition time proposed by the worker: kept (and nothing else changed → skip).
    const again = set({ ...running, conditions: running.conditions!.map((c) => ({ ...c, lastTransitionTime: '2024-05-01T10:09:00Z' })) });
    assert.deepEqual(applyStatusUpdate(r1, again, T0 + 10_000), { kind: 'skip', reason: 'unchanged' });

    const notReady = set({
      ...running,
      conditions: [
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady' },
        { type: 'PodScheduled', status: 'True' },
      ],
    });
    const r2 = written(applyStatusUpdate(r1, notReady, T0 + 10_000));
    assert.equal(r2.status.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime, '2024-05-01T10:00:10Z');
    assert.equal(r2.status.conditions?.find((c) => c.type === 'PodScheduled')?.lastTransitionTime, '2024-05-01T10:00:00Z');
  });
});

describe('status merge: terminal phases', () => {
  const failed: PodStatus = {
    phase: 'Failed',
    reason: 'DeadlineExceeded',
    message: 'Pod was active on the node longer than the specified deadline',
    containerStatuses: [aRunningStatus('foo1')],
  };

  it('holds a new terminal phase back while containers could still run (everything else updates)', () => {
    const r1 = written(applyStatusUpdate(undefined, set(running), T0));
    const r2 = written(applyStatusUpdate(r1, set({ ...failed, podIP: '10.0.0.9' }), T0 + 1000));
    assert.equal(r2.status.phase, 'Running');
    assert.equal(r2.status.reason, undefined);
    assert.equal(r2.status.podIP, '10.0.0.9');
    assert.deepEqual(r2.heldTerminal, { phase: 'Failed', reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' });
    assert.equal(r2.version, 2);

    // The worker reports no running container any more: the terminal phase is written.
    const r3 = written(applyStatusUpdate(r2, set({ ...failed, containerStatuses: [aTerminatedStatus('foo1', 137)] }, false), T0 + 2000));
    assert.equal(r3.status.phase, 'Failed');
    assert.equal(r3.status.reason, 'DeadlineExceeded');
    assert.equal(r3.heldTerminal, undefined);
  });

  it('a terminal phase is written at once when no container can run', () => {
    const r1 = written(applyStatusUpdate(undefined, set(running), T0));
    const r2 = written(applyStatusUpdate(r1, set({ phase: 'Succeeded', containerStatuses: [aTerminatedStatus('foo1', 0)] }, false), T0 + 1000));
    assert.equal(r2.status.phase, 'Succeeded');
  });

  it('a terminal phase is never left, neither cached nor held back', () => {
    const rec = run([
      [set(running), T0],
      [set({ phase: 'Failed', reason: 'Evicted', message: 'm', containerStatuses: [aTerminatedStatus('foo1', 1)] }, false), T0 + 1000],
      [set({ ...running, containerStatuses: [aTerminatedStatus('foo1', 1)] }, false), T0 + 2000],
    ]);
    assert.equal(rec?.status.phase, 'Failed');
    assert.equal(rec?.status.reason, 'Evicted');

    // Held (cache terminal), then a non-terminal set: stays held, the record stays Running.
    const held = run([
      [set(running), T0],
      [set(failed), T0 + 1000],
      [set(running), T0 + 2000],
    ]);
    assert.equal(held?.status.phase, 'Running');
    assert.equal(held?.heldTerminal?.phase, 'Failed');
  });

  it('terminated applies a held-back terminal phase and marks the pod finished', () => {
    const r = run([
      [set(running), T0],
      [set(failed), T0 + 1000],
      [terminated(), T0 + 2000],
    ]);
    assert.equal(r?.finished, true);
    assert.equal(r?.status.phase, 'Failed');
    assert.equal(r?.status.reason, 'DeadlineExceeded');
    assert.equal(r?.heldTerminal, undefined);
    assert.equal(r?.version, 3);
  });

  it('TerminatePod: a non-terminal pod becomes Failed and unterminated containers ContainerStatusUnknown', () => {
    const r = run([
      [set(running), T0],
      [terminated(), T0 + 1000],
    ]);
    assert.equal(r?.status.phase, 'Failed');
    assert.deepEqual(r?.status.containerStatuses?.[0]?.state, {
      terminated: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', exitCode: 137 },
    });
    // Replaying the same terminated is a no-op.
    assert.deepEqual(applyStatusUpdate(r, terminated(), T0 + 5000), { kind: 'skip', reason: 'unchanged' });
  });

  it("TerminatePod leaves a static pod's phase alone", () => {
    const staticPod = aPod({ metadata: { annotations: { 'kubernetes.io/config.source': 'file' } } });
    const r = run([
      [set(running, true, staticPod), T0],
      [terminated(undefined, staticPod), T0 + 1000],
    ]);
    assert.equal(r?.status.phase, 'Running');
    assert.equal(r?.finished, true);
  });

  it('TerminatePod keeps waiting regular containers of a pod that never initialized', () => {
    const withInit = aPod({ spec: { initContainers: [{ name: 'init', image: 'busybox' }] } });
    const r = run([
      [set({ phase: 'Pending', initContainerStatuses: [aRunningStatus('init')], containerStatuses: [aWaitingStatus('foo1', 'PodInitializing')] }, true, withInit), T0],
      [terminated(undefined, withInit), T0 + 1000],
    ]);
    assert.equal(r?.status.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
    assert.equal(r?.status.initContainerStatuses?.[0]?.state?.terminated?.reason, 'ContainerStatusUnknown');
    assert.equal(r?.status.phase, 'Failed');
  });

  it('a terminated update carrying a status applies it as the final set', () => {
    const r = run([
      [set(running), T0],
      [terminated({ phase: 'Succeeded', containerStatuses: [aTerminatedStatus('foo1', 0)] }), T0 + 1000],
    ]);
    assert.equal(r?.status.phase, 'Succeeded');
    assert.equal(r?.status.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    assert.equal(r?.finished, true);
  });

  it('stays finished after later sets', () => {
    const r = run([
      [set(running), T0],
      [terminated(), T0 + 1000],
      [set({ phase: 'Failed', message: 'later', containerStatuses: [aTerminatedStatus('foo1', 137)] }, false), T0 + 2000],
    ]);
    assert.equal(r?.finished, true);
    assert.equal(r?.status.message, 'later');
  });
});

describe('status merge: container state transitions', () => {
  it('rejects terminated → running under restartPolicy Never', () => {
    const never = aPod({ spec: { restartPolicy: 'Never' } });
    const r1 = written(applyStatusUpdate(undefined, set({ phase: 'Running', containerStatuses: [aTerminatedStatus('foo1', 0)] }, true, never), T0));
    const d = applyStatusUpdate(r1, set({ phase: 'Running', containerStatuses: [aRunningStatus('foo1')] }, true, never), T0 + 1000);
    assert.equal(d.kind, 'skip');
    assert.equal((d as { reason: string }).reason, 'illegal-transition');
  });

  it('checkContainerStateTransition follows the restart policy', () => {
    const old = [aTerminatedStatus('a', 1)];
    const next = [aRunningStatus('a')];
    assert.equal(checkContainerStateTransition(old, next, 'Always'), undefined);
    assert.equal(checkContainerStateTransition(old, next, 'OnFailure'), undefined);
    assert.match(checkContainerStateTransition([aTerminatedStatus('a', 0)], next, 'OnFailure') ?? '', /illegal transition/);
    assert.match(checkContainerStateTransition(old, next, 'Never') ?? '', /terminated container a attempted illegal transition to non-terminated state/);
  });
});

describe('status merge: removed and malformed', () => {
  it('removed deletes', () => {
    assert.deepEqual(applyStatusUpdate(undefined, { ...set(running), kind: 'removed' }, T0), { kind: 'delete' });
  });
  it('a set without a status throws', () => {
    const u = set(running);
    delete u.status;
    assert.throws(() => applyStatusUpdate(undefined, u, T0), /carries no status/);
  });
  it('a set without a pod uses the cached pod, and throws without one', () => {
    const r1 = written(applyStatusUpdate(undefined, set(running), T0));
    const u = set({ ...running, podIP: '1.2.3.4' });
    delete u.pod;
    assert.equal(written(applyStatusUpdate(r1, u, T0)).pod.metadata.uid, pod.metadata.uid);
    assert.throws(() => applyStatusUpdate(undefined, u, T0), /no pod/);
  });
  it('terminated for an unknown pod without a pod is skipped', () => {
    const u = terminated();
    delete u.pod;
    assert.equal(applyStatusUpdate(undefined, u, T0).kind, 'skip');
  });
});
