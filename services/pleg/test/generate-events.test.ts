/**
 * Ports pkg/kubelet/pleg/generic_test.go: generateEvents for every state pair, and the
 * TestRelisting / testReportMissingContainers sequences through computePodEvents.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RuntimePodStatus } from '@splitlet/api';
import { computePodEvents, convertState, generateEvents, PlegContainerStates as S, type PlegContainerState } from '../src/pleg/generate-events.js';
import { container, pod, sandbox } from './fakes.js';

describe('generateEvents', () => {
  const cases: Array<{ old: PlegContainerState; new: PlegContainerState; want: string[] }> = [
    { old: S.nonExistent, new: S.running, want: ['ContainerStarted'] },
    { old: S.nonExistent, new: S.exited, want: ['ContainerDied'] },
    { old: S.nonExistent, new: S.unknown, want: ['ContainerChanged'] },
    { old: S.nonExistent, new: S.nonExistent, want: [] },
    { old: S.running, new: S.running, want: [] },
    { old: S.running, new: S.exited, want: ['ContainerDied'] },
    { old: S.running, new: S.unknown, want: ['ContainerChanged'] },
    { old: S.running, new: S.nonExistent, want: ['ContainerDied', 'ContainerRemoved'] },
    { old: S.exited, new: S.running, want: ['ContainerStarted'] },
    { old: S.exited, new: S.exited, want: [] },
    { old: S.exited, new: S.nonExistent, want: ['ContainerRemoved'] },
    { old: S.unknown, new: S.running, want: ['ContainerStarted'] },
    { old: S.unknown, new: S.exited, want: ['ContainerDied'] },
    { old: S.unknown, new: S.nonExistent, want: ['ContainerDied', 'ContainerRemoved'] },
  ];
  for (const c of cases) {
    it(`${c.old} → ${c.new}: ${c.want.join(', ') || 'nothing'}`, () => {
      const got = generateEvents('1234', 'c1', c.old, c.new);
      assert.deepEqual(
        got.map((e) => e.event),
        c.want,
      );
      for (const e of got) {
        assert.equal(e.uid, '1234');
        assert.equal(e.data, 'c1');
      }
    });
  }

  it('convertState: created and unknown are unknown', () => {
    assert.equal(convertState('CONTAINER_CREATED'), S.unknown);
    assert.equal(convertState('CONTAINER_UNKNOWN'), S.unknown);
    assert.equal(convertState('CONTAINER_RUNNING'), S.running);
    assert.equal(convertState('CONTAINER_EXITED'), S.exited);
  });
});

/** Events of a whole relist (old → new pod lists), sorted as verifyEvents does. */
function relistEvents(before: RuntimePodStatus[], after: RuntimePodStatus[]): string[] {
  const oldBy = new Map(before.map((p) => [p.uid, p]));
  const newBy = new Map(after.map((p) => [p.uid, p]));
  const out: string[] = [];
  for (const uid of new Set([...oldBy.keys(), ...newBy.keys()])) {
    for (const e of computePodEvents(oldBy.get(uid), newBy.get(uid))) out.push(`${e.uid}/${e.event}/${e.data}`);
  }
  return out.sort();
}

describe('computePodEvents (TestRelisting)', () => {
  const first = [
    pod('1234', [container('c1', 'CONTAINER_EXITED'), container('c2', 'CONTAINER_RUNNING'), container('c3', 'CONTAINER_UNKNOWN')]),
    pod('4567', [container('c1', 'CONTAINER_EXITED')]),
  ];
  const second = [pod('1234', [container('c2', 'CONTAINER_EXITED'), container('c3', 'CONTAINER_RUNNING')]), pod('4567', [container('c4', 'CONTAINER_RUNNING')])];

  it('the first relist reports every running and exited container', () => {
    // c3 (unknown) yields ContainerChanged, which the relist filters out before publishing.
    assert.deepEqual(relistEvents([], first), ['1234/ContainerChanged/c3', '1234/ContainerDied/c1', '1234/ContainerStarted/c2', '4567/ContainerDied/c1'].sort());
  });

  it('an unchanged relist reports nothing', () => {
    assert.deepEqual(relistEvents(first, first), []);
  });

  it('only containers that transitioned are reported', () => {
    assert.deepEqual(
      relistEvents(first, second),
      ['1234/ContainerRemoved/c1', '1234/ContainerDied/c2', '1234/ContainerStarted/c3', '4567/ContainerRemoved/c1', '4567/ContainerStarted/c4'].sort(),
    );
  });

  it('a container stopped and removed between relists is reported dead and removed (testReportMissingContainers)', () => {
    const before = [pod('1234', [container('c1', 'CONTAINER_RUNNING'), container('c2', 'CONTAINER_RUNNING'), container('c3', 'CONTAINER_EXITED')])];
    const after = [pod('1234', [container('c1', 'CONTAINER_RUNNING')])];
    assert.deepEqual(relistEvents(before, after), ['1234/ContainerDied/c2', '1234/ContainerRemoved/c2', '1234/ContainerRemoved/c3'].sort());
  });

  it('a pod that vanished reports every container', () => {
    const before = [pod('1234', [container('c1', 'CONTAINER_RUNNING'), container('c2', 'CONTAINER_EXITED')], [sandbox('s1', true)])];
    assert.deepEqual(
      relistEvents(before, []),
      ['1234/ContainerDied/c1', '1234/ContainerRemoved/c1', '1234/ContainerRemoved/c2', '1234/ContainerDied/s1', '1234/ContainerRemoved/s1'].sort(),
    );
  });

  it('sandboxes are tracked as containers (ready = running, not ready = exited)', () => {
    const a = [pod('p', [], [sandbox('s1', true)])];
    const b = [pod('p', [], [sandbox('s1', false)])];
    assert.deepEqual(relistEvents([], a), ['p/ContainerStarted/s1']);
    assert.deepEqual(relistEvents(a, b), ['p/ContainerDied/s1']);
  });

  it('carries the container name', () => {
    const events = computePodEvents(undefined, pod('p', [container('id-1', 'CONTAINER_RUNNING', 'nginx')], [sandbox('s1', true)]));
    assert.deepEqual(
      events.map((e) => [e.data, e.containerName]),
      [
        ['id-1', 'nginx'],
        ['s1', undefined],
      ],
    );
  });
});
