import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DesiredPod, KillRequest, WorkerRecord } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { classify, nextWorkerState } from '../src/sync/worker-decisions.js';
import { runtimeSyncError, updateReasons } from '../src/sync/sync-results.js';
import { canRunPod } from '../src/sync/can-run-pod.js';
import type { Versioned } from '../src/ports.js';

const desired = (over: Partial<DesiredPod> = {}, revision = 10): Versioned<DesiredPod> => ({
  revision,
  value: { type: 'kubelet.podworker.DesiredPod.v1', pod: aPod(), updateType: 'create', startTime: '2026-01-01T00:00:00Z', ...over },
});
const kill = (over: Partial<KillRequest> = {}, revision = 20): Versioned<KillRequest> => ({
  revision,
  value: { type: 'kubelet.podworker.KillRequest.v1', uid: '12345678', reason: 'removed', requestedAt: '2026-01-01T00:00:00Z', pod: aPod(), ...over },
});
const record = (over: Partial<WorkerRecord> = {}): WorkerRecord => ({
  type: 'kubelet.podworker.WorkerRecord.v1',
  uid: '12345678',
  name: 'foo',
  namespace: 'default',
  state: 'sync',
  finished: false,
  reasons: {},
  ...over,
});
const empty = { uid: '12345678', name: 'foo', namespace: 'default', ips: [], sandboxes: [], containers: [] };

describe('classify', () => {
  const cases: [string, WorkerRecord | undefined, Versioned<DesiredPod> | null, Versioned<KillRequest> | null, string][] = [
    ['nothing known', undefined, null, null, 'none'],
    ['desired', undefined, desired(), null, 'run'],
    ['rejected', undefined, desired({ rejected: { reason: 'OutOfcpu', message: 'x' } }), null, 'none'],
    ['rejected then killed', undefined, null, kill(), 'run'],
    ['finished, still desired', record({ finished: true }), desired(), kill(), 'none'],
    ['finished, killed, not desired', record({ finished: true }), null, kill(), 'remove'],
    ['orphan', undefined, null, kill({ pod: undefined, runningPod: { uid: 'o', name: 'o', namespace: 'd' } }), 'terminateRuntimePod'],
  ];
  for (const [name, rec, d, k, want] of cases) {
    it(name, () => assert.equal(classify(rec, d, k).action, want));
  }
});

describe('nextWorkerState', () => {
  const base = { uid: '12345678', pod: aPod(), apiPhase: undefined, runtimeStatus: empty, now: 1000, epoch: 3 };

  it('labels a sync by the desired record it has not seen yet, else `sync`', () => {
    assert.equal(nextWorkerState({ ...base, record: undefined, desired: desired(), kill: null }).updateType, 'create');
    assert.equal(nextWorkerState({ ...base, record: record({ syncedRevision: 10 }), desired: desired({ updateType: 'update' }, 11), kill: null }).updateType, 'update');
    assert.equal(nextWorkerState({ ...base, record: record({ syncedRevision: 11 }), desired: desired({ updateType: 'update' }, 11), kill: null }).updateType, 'sync');
  });

  it('enters terminating on a kill, a deletionTimestamp or a terminal API phase', () => {
    const k = nextWorkerState({ ...base, record: record(), desired: desired(), kill: kill({ evict: true }) });
    assert.equal(k.record.state, 'terminating');
    assert.equal(k.enteredTerminating, true);
    assert.equal(k.record.evicted, true);
    assert.equal(k.updateType, 'kill');
    const delPod = aPod({ metadata: { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 10 } });
    const d = nextWorkerState({ ...base, pod: delPod, record: record(), desired: desired({ pod: delPod }), kill: null });
    assert.equal(d.record.state, 'terminating');
    assert.equal(d.record.deleted, true);
    assert.equal(d.record.gracePeriod, 10);
    const failedPod = aPod({ status: { phase: 'Failed' } });
    const f = nextWorkerState({ ...base, pod: failedPod, record: record(), desired: desired({ pod: failedPod }), kill: null });
    assert.equal(f.record.state, 'terminating');
  });

  it('the grace period only ever decreases, with a floor of 1 s', () => {
    const steps: [number | undefined, number | null | undefined, number][] = [
      // [kill override, deletionGracePeriodSeconds, expected grace]
      [undefined, undefined, 30],
      [20, undefined, 20],
      [25, 40, 20],
      [undefined, 5, 5],
      [10, 60, 5],
      [0, undefined, 1],
      [30, undefined, 1],
    ];
    let rec: WorkerRecord = record({ state: 'terminating' });
    for (const [override, deletion, want] of steps) {
      const pod = aPod({ metadata: deletion === undefined ? {} : { deletionGracePeriodSeconds: deletion }, spec: { terminationGracePeriodSeconds: 30 } });
      const k = kill(override === undefined ? { pod } : { pod, gracePeriodOverride: override });
      rec = nextWorkerState({ ...base, pod, record: rec, desired: null, kill: k }).record;
      assert.equal(rec.gracePeriod, want, `override ${override}, deletion ${deletion}`);
    }
  });

  it('first sight of a terminal pod with nothing running starts terminated; with a running container it terminates normally', () => {
    const pod = aPod({ status: { phase: 'Succeeded' } });
    const idle = nextWorkerState({ ...base, pod, record: undefined, desired: desired({ pod }), kill: null });
    assert.equal(idle.record.state, 'terminated');
    const busy = nextWorkerState({
      ...base,
      pod,
      record: undefined,
      desired: desired({ pod }),
      kill: null,
      runtimeStatus: { ...empty, sandboxes: [{ id: 's', state: 'SANDBOX_READY', createdAt: 1, attempt: 0 }] },
    });
    assert.equal(busy.record.state, 'terminating');
  });
});

describe('sync results', () => {
  it('backoff-only failures are not errors; the rest are, in the kubelet format', () => {
    assert.equal(
      runtimeSyncError([
        { action: 'StartContainer', target: 'a', error: 'CrashLoopBackOff', message: 'm' },
        { action: 'StartContainer', target: 'b', error: 'ImagePullBackOff', message: 'm' },
      ]),
      undefined,
    );
    assert.equal(runtimeSyncError([{ action: 'StartContainer', target: 'a' }]), undefined);
    assert.equal(
      runtimeSyncError([{ action: 'StartContainer', target: 'a', error: 'ErrImagePull', message: 'not found' }]),
      'failed to "StartContainer" for "a" with ErrImagePull: "not found"',
    );
    assert.equal(
      runtimeSyncError([
        { action: 'StartContainer', target: 'a', error: 'CrashLoopBackOff', message: 'x' },
        { action: 'StartContainer', target: 'b', error: 'RunContainerError', message: 'y' },
      ]),
      '[failed to "StartContainer" for "a" with CrashLoopBackOff: "x", failed to "StartContainer" for "b" with RunContainerError: "y"]',
    );
  });

  it('updates the reasons cache from start results only', () => {
    const r = updateReasons({ a: { reason: 'ErrImagePull', message: 'x' }, c: { reason: 'CrashLoopBackOff', message: 'z' } }, [
      { action: 'StartContainer', target: 'a' },
      { action: 'InitContainer', target: 'b', error: 'RunContainerError', message: 'y' },
      { action: 'KillContainer', target: 'c' },
    ]);
    assert.deepEqual(r, { b: { reason: 'RunContainerError', message: 'y' }, c: { reason: 'CrashLoopBackOff', message: 'z' } });
  });
});

describe('canRunPod', () => {
  const cases: [string, Parameters<typeof aPod>[0], string | undefined][] = [
    ['plain', {}, undefined],
    ['privileged', { spec: { containers: [{ name: 'c', securityContext: { privileged: true } }] } }, 'privileged container'],
    ['privileged init', { spec: { containers: [{ name: 'c' }], initContainers: [{ name: 'i', securityContext: { privileged: true } }] } }, 'privileged init container'],
    ['hostNetwork', { spec: { hostNetwork: true } }, 'host networking'],
    ['hostPID', { spec: { hostPID: true } }, 'host PID'],
    ['hostIPC', { spec: { hostIPC: true } }, 'host ipc'],
  ];
  for (const [name, over, what] of cases) {
    it(name, () => {
      const r = canRunPod(aPod(over), false);
      if (what === undefined) assert.equal(r.admit, true);
      else assert.deepEqual(r, { admit: false, reason: 'Forbidden', message: `pod with UID "12345678" specified ${what}, but is disallowed` });
      assert.equal(canRunPod(aPod(over), true).admit, true);
    });
  }
});
