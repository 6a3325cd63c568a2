// Ports pkg/kubelet/config/config_test.go (incremental mode): TestNewPodAdded*, TestInvalidPodFiltered,
// TestNewPodAddedUpdatedRemoved, TestNewPodAddedDelete, TestNewPodAddedUpdatedSet,
// TestNewPodAddedSetReconciled, TestInitialEmptySet, TestPodUpdateAnnotations, TestPodUpdateLabels.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BoundPod } from '@splitlet/api';
import { ConfigAnnotations, PodStorage, checkAndUpdatePod, podsDifferSemantically, type MergeResult } from '../../src/index.js';
import { aContainer, aPod } from '../../src/testing/index.js';

const TEST_SOURCE = 'test';
const NOW = Date.parse('2024-05-01T10:00:00.123Z');

function createValidPod(name: string, namespace: string): BoundPod {
  return aPod({
    metadata: { uid: name + namespace, name, namespace },
    spec: {
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      containers: [aContainer({ name: 'ctr', image: 'image', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' })],
    },
  });
}

/** [op, uids] per emitted update, and every emitted pod carries the source annotation. */
function summary(r: MergeResult): Array<[string, string[]]> {
  for (const u of r.updates) for (const p of u.pods) assert.equal(p.metadata.annotations?.[ConfigAnnotations.source], u.source);
  return r.updates.map((u) => [u.op, u.pods.map((p) => p.metadata.uid).sort()]);
}

function withContainer(pod: BoundPod, name: string): BoundPod {
  const p = structuredClone(pod);
  p.spec.containers = [aContainer({ name, image: 'test', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' })];
  return p;
}

describe('PodStorage (config_test.go)', () => {
  for (const [title, ns] of [
    ['TestNewPodAdded', 'new'],
    ['TestNewPodAddedInvalidNamespace', ''],
    ['TestNewPodAddedDefaultNamespace', 'default'],
  ] as const) {
    it(title, () => {
      const s = new PodStorage();
      assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', ns)], NOW)), [['ADD', [`foo${ns}`]]]);
      assert.deepEqual(
        s.mergedState().map((p) => p.metadata.uid),
        [`foo${ns}`],
      );
    });
  }

  it('TestNewPodAddedDifferentNamespaces', () => {
    const s = new PodStorage();
    assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'default')], NOW)), [['ADD', ['foodefault']]]);
    assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW)), [['ADD', ['foonew']]]);
    assert.deepEqual(
      s
        .mergedState()
        .map((p) => p.metadata.uid)
        .sort(),
      ['foodefault', 'foonew'],
    );
  });

  it('the same pod object again is unchanged; a new object is compared; a REMOVE forgets it', () => {
    const s = new PodStorage();
    const foo = createValidPod('foo', 'new');
    const bar = createValidPod('bar', 'new');
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [foo, bar], NOW)), [['ADD', ['barnew', 'foonew']]]);
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [foo, bar], NOW)), []);
    // A new object with the same content: still nothing; with other content: an UPDATE.
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [structuredClone(foo), bar], NOW)), []);
    const foo2 = withContainer(foo, 'other');
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [foo2, bar], NOW)), [['UPDATE', ['foonew']]]);
    assert.equal(s.get(TEST_SOURCE, 'foonew')?.spec.containers[0]?.name, 'other');
    // Gone, then the old object again: an ADD, not skipped as known.
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [bar], NOW)), [['REMOVE', ['foonew']]]);
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [foo2, bar], NOW)), [['ADD', ['foonew']]]);
  });

  it('TestInvalidPodFiltered (identical ADD is ignored)', () => {
    const s = new PodStorage();
    assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW)), [['ADD', ['foonew']]]);
    assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW)), []);
  });

  it('duplicate full names in one update are dropped with a FailedValidation event', () => {
    const s = new PodStorage();
    const dup = createValidPod('foo', 'new');
    dup.metadata.uid = 'other-uid';
    const r = s.setSource(TEST_SOURCE, [createValidPod('foo', 'new'), dup], NOW);
    assert.deepEqual(summary(r), [['ADD', ['foonew']]]);
    assert.equal(r.rejections.length, 1);
    assert.equal(r.rejections[0]?.reason, 'FailedValidation');
    assert.equal(r.rejections[0]?.eventType, 'Warning');
    assert.equal(r.rejections[0]?.message, 'Error validating pod foo_new(other-uid) from test due to duplicate pod name "foo", ignoring');
  });

  it('the same name in two sources is not a duplicate', () => {
    const s = new PodStorage();
    assert.equal(s.setSource('file', [createValidPod('foo', 'new')], NOW).rejections.length, 0);
    const other = createValidPod('foo', 'new');
    other.metadata.uid = 'x';
    assert.equal(s.setSource('api', [other], NOW).rejections.length, 0);
  });

  it('TestNewPodAddedUpdatedRemoved', () => {
    const s = new PodStorage();
    assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW)), [['ADD', ['foonew']]]);
    const pod = withContainer(createValidPod('foo', 'new'), 'bar');
    const upd = s.merge(TEST_SOURCE, 'ADD', [pod], NOW);
    assert.deepEqual(summary(upd), [['UPDATE', ['foonew']]]);
    assert.equal(upd.updates[0]?.pods[0]?.spec.containers[0]?.name, 'bar');
    const rem = s.merge(TEST_SOURCE, 'REMOVE', [createValidPod('foo', 'new')], NOW);
    assert.deepEqual(summary(rem), [['REMOVE', ['foonew']]]);
    assert.equal(rem.updates[0]?.pods[0]?.spec.containers[0]?.name, 'bar');
    assert.deepEqual(s.mergedState(), []);
  });

  it('TestNewPodAddedDelete', () => {
    const s = new PodStorage();
    s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW);
    const deleted = createValidPod('foo', 'new');
    deleted.metadata.deletionTimestamp = '2024-05-01T10:01:00Z';
    const r = s.merge(TEST_SOURCE, 'DELETE', [deleted], NOW);
    assert.deepEqual(summary(r), [['DELETE', ['foonew']]]);
    assert.equal(r.updates[0]?.pods[0]?.metadata.deletionTimestamp, '2024-05-01T10:01:00Z');
  });

  it('TestNewPodAddedUpdatedSet', () => {
    const s = new PodStorage();
    assert.deepEqual(
      summary(
        s.merge(
          TEST_SOURCE,
          'ADD',
          ['foo', 'foo2', 'foo3'].map((n) => createValidPod(n, 'new')),
          NOW,
        ),
      ),
      [['ADD', ['foo2new', 'foo3new', 'foonew']]],
    );
    const pod = withContainer(createValidPod('foo2', 'new'), 'bar');
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [pod, createValidPod('foo3', 'new'), createValidPod('foo4', 'new')], NOW)), [
      ['REMOVE', ['foonew']],
      ['ADD', ['foo4new']],
      ['UPDATE', ['foo2new']],
    ]);
  });

  for (const op of ['ADD', 'SET'] as const) {
    it(`TestNewPodAddedSetReconciled (${op})`, () => {
      const newTestPods = (touchStatus: boolean, touchSpec: boolean): BoundPod[] => {
        const pods = ['changeable-pod-0', 'constant-pod-1', 'constant-pod-2'].map((n) => createValidPod(n, 'new'));
        if (touchStatus) pods[0]!.status = { message: 'touched' };
        if (touchSpec) pods[0]!.spec.containers[0]!.name = 'renamed';
        return pods;
      };
      const s = new PodStorage();
      assert.deepEqual(summary(s.setSource(TEST_SOURCE, newTestPods(false, false), NOW)), [['ADD', ['changeable-pod-0new', 'constant-pod-1new', 'constant-pod-2new']]]);
      assert.deepEqual(summary(s.merge(TEST_SOURCE, op, newTestPods(false, false), NOW)), []);
      const rec = s.merge(TEST_SOURCE, op, newTestPods(true, false), NOW);
      assert.deepEqual(summary(rec), [['RECONCILE', ['changeable-pod-0new']]]);
      assert.equal(rec.updates[0]?.pods[0]?.status?.message, 'touched');
      assert.deepEqual(summary(s.merge(TEST_SOURCE, op, newTestPods(true, true), NOW)), [['UPDATE', ['changeable-pod-0new']]]);
    });
  }

  it('TestInitialEmptySet', () => {
    const s = new PodStorage();
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [], NOW)), [['ADD', []]]);
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [], NOW)), []);
    assert.deepEqual(summary(s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW)), [['ADD', ['foonew']]]);
  });

  it('a first SET that only removes or reconciles still sends the empty ADD', () => {
    const s = new PodStorage();
    s.merge(TEST_SOURCE, 'ADD', [createValidPod('foo', 'new')], NOW);
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [], NOW)), [
      ['REMOVE', ['foonew']],
      ['ADD', []],
    ]);
  });

  it('TestPodUpdateAnnotations', () => {
    const s = new PodStorage();
    const pod = createValidPod('foo2', 'new');
    pod.metadata.annotations = { 'kubernetes.io/blah': 'blah' };
    const list = () => [createValidPod('foo1', 'new'), structuredClone(pod), createValidPod('foo3', 'new')];
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, list(), NOW)), [['ADD', ['foo1new', 'foo2new', 'foo3new']]]);
    pod.metadata.annotations['kubernetes.io/blah'] = 'superblah';
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, list(), NOW)), [['UPDATE', ['foo2new']]]);
    pod.metadata.annotations['kubernetes.io/otherblah'] = 'doh';
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, list(), NOW)), [['UPDATE', ['foo2new']]]);
    delete pod.metadata.annotations['kubernetes.io/blah'];
    const last = s.setSource(TEST_SOURCE, list(), NOW);
    assert.deepEqual(summary(last), [['UPDATE', ['foo2new']]]);
    assert.deepEqual(last.updates[0]?.pods[0]?.metadata.annotations, {
      'kubernetes.io/otherblah': 'doh',
      [ConfigAnnotations.source]: TEST_SOURCE,
      [ConfigAnnotations.seen]: '2024-05-01T10:00:00.123Z',
    });
  });

  it('TestPodUpdateLabels', () => {
    const s = new PodStorage();
    const pod = createValidPod('foo2', 'new');
    pod.metadata.labels = { key: 'value' };
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [structuredClone(pod)], NOW)), [['ADD', ['foo2new']]]);
    pod.metadata.labels = { key: 'newValue' };
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [pod], NOW)), [['UPDATE', ['foo2new']]]);
  });

  it('config.seen is stamped on ADD (RFC3339Nano) and kept on UPDATE; inputs are not mutated', () => {
    const s = new PodStorage();
    const input = createValidPod('foo', 'new');
    const add = s.setSource(TEST_SOURCE, [input], NOW);
    assert.equal(add.updates[0]?.pods[0]?.metadata.annotations?.[ConfigAnnotations.seen], '2024-05-01T10:00:00.123Z');
    assert.equal(input.metadata.annotations, undefined);
    const upd = s.setSource(TEST_SOURCE, [withContainer(input, 'bar')], NOW + 5000);
    assert.equal(upd.updates[0]?.pods[0]?.metadata.annotations?.[ConfigAnnotations.seen], '2024-05-01T10:00:00.123Z');
    upd.updates[0].pods[0].spec.containers = [];
    assert.equal(s.get(TEST_SOURCE, 'foonew')?.spec.containers[0]?.name, 'bar');
  });

  it('a merge deep-copies only what it hands out: one structuredClone per emitted pod, none for unchanged ones', (t) => {
    const s = new PodStorage();
    const a = createValidPod('a', 'ns');
    const b = createValidPod('b', 'ns');
    const clones = t.mock.method(globalThis, 'structuredClone');
    s.setSource(TEST_SOURCE, [a, b], NOW);
    assert.equal(clones.mock.callCount(), 2, 'ADD of two pods: the two emitted copies');
    const running = structuredClone(b);
    running.status = { phase: 'Running' };
    clones.mock.resetCalls();
    const r = s.setSource(TEST_SOURCE, [createValidPod('a', 'ns'), running], NOW);
    assert.deepEqual(summary(r), [['RECONCILE', ['bns']]]);
    assert.equal(clones.mock.callCount(), 1, 'a reconcile (and an equal pod) copy nothing but the emitted pod');
    // The stored pod is its own: mutating what was handed out, or the input's metadata, leaves it alone.
    r.updates[0]!.pods[0]!.status!.phase = 'Failed';
    running.metadata.annotations = { x: 'y' };
    clones.mock.restore();
    assert.equal(s.get(TEST_SOURCE, 'bns')?.status?.phase, 'Running');
    assert.deepEqual(Object.keys(s.get(TEST_SOURCE, 'bns')?.metadata.annotations ?? {}).sort(), [ConfigAnnotations.seen, ConfigAnnotations.source].sort());
    assert.equal(a.metadata.annotations, undefined, 'inputs are not mutated');
  });

  it('seenSources needs a SET from every source', () => {
    const s = new PodStorage();
    s.merge('file', 'ADD', [createValidPod('a', 'x')], NOW);
    assert.equal(s.seenSources('file'), false);
    s.setSource('file', [], NOW);
    s.setSource('http', [], NOW);
    assert.equal(s.seenSources('file', 'http'), true);
    assert.equal(s.seenSources('file', 'http', 'api'), false);
    assert.deepEqual(s.sourcesSeen(), ['file', 'http']);
  });

  it('a SET with a removed pod, an added one, an update, a delete and a reconcile emits them in kubelet order', () => {
    const s = new PodStorage();
    s.setSource(
      TEST_SOURCE,
      ['a', 'b', 'c', 'd'].map((n) => createValidPod(n, 'ns')),
      NOW,
    );
    const b = withContainer(createValidPod('b', 'ns'), 'changed');
    const c = createValidPod('c', 'ns');
    c.metadata.deletionTimestamp = '2024-05-01T11:00:00Z';
    c.metadata.deletionGracePeriodSeconds = 30;
    const d = createValidPod('d', 'ns');
    d.status = { phase: 'Running' };
    assert.deepEqual(summary(s.setSource(TEST_SOURCE, [b, c, d, createValidPod('e', 'ns')], NOW)), [
      ['REMOVE', ['ans']],
      ['ADD', ['ens']],
      ['UPDATE', ['bns']],
      ['DELETE', ['cns']],
      ['RECONCILE', ['dns']],
    ]);
  });
});

describe('checkAndUpdatePod / podsDifferSemantically', () => {
  const base = () => {
    const p = aPod();
    p.metadata.annotations = { [ConfigAnnotations.source]: 'api', [ConfigAnnotations.seen]: 'then', a: '1' };
    return p;
  };
  it('local annotations do not make a difference', () => {
    const ref = base();
    ref.metadata.annotations = { [ConfigAnnotations.source]: 'file', a: '1' };
    assert.equal(podsDifferSemantically(base(), ref), false);
  });
  it('missing and empty label maps are equal', () => {
    const ref = base();
    ref.metadata.labels = {};
    assert.equal(podsDifferSemantically(base(), ref), false);
  });
  const rows: Array<[string, (p: BoundPod) => void, { needUpdate: boolean; needReconcile: boolean; needGracefulDelete: boolean }]> = [
    ['no change', () => {}, { needUpdate: false, needReconcile: false, needGracefulDelete: false }],
    ['status only → reconcile', (p) => (p.status = { phase: 'Running' }), { needUpdate: false, needReconcile: true, needGracefulDelete: false }],
    ['spec → update', (p) => (p.spec.activeDeadlineSeconds = 5), { needUpdate: true, needReconcile: false, needGracefulDelete: false }],
    ['annotation → update', (p) => (p.metadata.annotations!['a'] = '2'), { needUpdate: true, needReconcile: false, needGracefulDelete: false }],
    ['deletionTimestamp → graceful delete', (p) => (p.metadata.deletionTimestamp = 'now'), { needUpdate: false, needReconcile: false, needGracefulDelete: true }],
    ['deletionGracePeriodSeconds → update', (p) => (p.metadata.deletionGracePeriodSeconds = 3), { needUpdate: true, needReconcile: false, needGracefulDelete: false }],
  ];
  for (const [name, mutate, want] of rows) {
    it(name, () => {
      const existing = base();
      const ref = base();
      mutate(ref);
      assert.deepEqual(checkAndUpdatePod(existing, ref), want);
      if (want.needUpdate || want.needGracefulDelete) assert.equal(existing.metadata.annotations?.[ConfigAnnotations.seen], 'then');
    });
  }
});
