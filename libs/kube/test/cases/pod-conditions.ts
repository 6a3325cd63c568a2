// Ports pkg/kubelet/status/generate_test.go: TestGenerateContainersReadyCondition,
// TestGeneratePodReadyCondition, TestGeneratePodInitializedCondition,
// TestGeneratePodReadyToStartContainersCondition; and status_manager_test's lastTransitionTime rule.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, PodCondition, PodPhase, PodSpec } from '@splitlet/api';
import {
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
  updateLastTransitionTime,
} from '../../src/index.js';
import { aRunningStatus, aSandbox, aWaitingStatus } from '../../src/testing/index.js';

const readyS = (name: string): ContainerStatus => aWaitingStatus(name, undefined, { ready: true });
const notReadyS = (name: string): ContainerStatus => aWaitingStatus(name);
const startedS = (name: string): ContainerStatus => aWaitingStatus(name, undefined, { started: true });
const notStartedS = (name: string): ContainerStatus => aWaitingStatus(name, undefined, { started: false });
const c = (name: string, sidecar = false) => (sidecar ? { name, restartPolicy: 'Always' as const } : { name });
const cond = (type: string, status: 'True' | 'False', reason = '', message = ''): PodCondition => {
  const x: PodCondition = { type, status };
  if (reason !== '') x.reason = reason;
  if (message !== '') x.message = message;
  return x;
};
const sp = (containers: Array<{ name: string }>, initContainers?: Array<{ name: string; restartPolicy?: 'Always' }>, extra: Partial<PodSpec> = {}): { spec: PodSpec } => {
  const spec: PodSpec = { containers, ...extra };
  if (initContainers !== undefined) spec.initContainers = initContainers;
  return { spec };
};

describe('TestGenerateContainersReadyCondition', () => {
  const rows: Array<[string, { spec: PodSpec }, ContainerStatus[] | undefined, PodPhase, PodCondition]> = [
    ['nil statuses', sp([]), undefined, 'Running', cond('ContainersReady', 'False', 'UnknownContainerStatuses')],
    ['no containers', sp([]), [], 'Running', cond('ContainersReady', 'True')],
    ['one unknown', sp([c('1234')]), [], 'Running', cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unknown status: [1234]')],
    ['all ready', sp([c('1234'), c('5678')]), [readyS('1234'), readyS('5678')], 'Running', cond('ContainersReady', 'True')],
    [
      'one unknown of two',
      sp([c('1234'), c('5678')]),
      [readyS('1234')],
      'Running',
      cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unknown status: [5678]'),
    ],
    [
      'one unready',
      sp([c('1234'), c('5678')]),
      [readyS('1234'), notReadyS('5678')],
      'Running',
      cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unready status: [5678]'),
    ],
    ['succeeded', sp([c('1234')]), [notReadyS('1234')], 'Succeeded', cond('ContainersReady', 'False', 'PodCompleted')],
    ['failed', sp([c('1234')]), [readyS('1234')], 'Failed', cond('ContainersReady', 'False', 'PodFailed')],
    [
      'sidecar unknown',
      sp([c('regular-1')], [c('restartable-init-1', true)]),
      [readyS('regular-1')],
      'Running',
      cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unknown status: [restartable-init-1]'),
    ],
    [
      'sidecars ready',
      sp([c('regular-1')], [c('restartable-init-1', true), c('restartable-init-2', true)]),
      [readyS('restartable-init-1'), readyS('restartable-init-2'), readyS('regular-1')],
      'Running',
      cond('ContainersReady', 'True'),
    ],
    [
      'second sidecar unknown',
      sp([c('regular-1')], [c('restartable-init-1', true), c('restartable-init-2', true)]),
      [readyS('restartable-init-1'), readyS('regular-1')],
      'Running',
      cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unknown status: [restartable-init-2]'),
    ],
    [
      'second sidecar unready',
      sp([c('regular-1')], [c('restartable-init-1', true), c('restartable-init-2', true)]),
      [readyS('restartable-init-1'), notReadyS('restartable-init-2'), readyS('regular-1')],
      'Running',
      cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unready status: [restartable-init-2]'),
    ],
    [
      'unknown and unready together',
      sp([c('a'), c('b'), c('c')]),
      [notReadyS('a'), notReadyS('b')],
      'Running',
      cond('ContainersReady', 'False', 'ContainersNotReady', 'containers with unknown status: [c], containers with unready status: [a b]'),
    ],
  ];
  for (const [name, pod, statuses, phase, want] of rows) it(name, () => assert.deepEqual(generateContainersReadyCondition(pod, statuses, phase), want));
});

describe('TestGeneratePodReadyCondition', () => {
  const gates = (...g: string[]) => ({ readinessGates: g.map((conditionType) => ({ conditionType })) });
  const rows: Array<[string, { spec: PodSpec }, PodCondition[], ContainerStatus[] | undefined, PodPhase, PodCondition]> = [
    ['nil statuses', sp([]), [], undefined, 'Running', cond('Ready', 'False', 'UnknownContainerStatuses')],
    ['no containers', sp([]), [], [], 'Running', cond('Ready', 'True')],
    ['unknown', sp([c('1234')]), [], [], 'Running', cond('Ready', 'False', 'ContainersNotReady', 'containers with unknown status: [1234]')],
    ['ready', sp([c('1234'), c('5678')]), [], [readyS('1234'), readyS('5678')], 'Running', cond('Ready', 'True')],
    ['one unknown', sp([c('1234'), c('5678')]), [], [readyS('1234')], 'Running', cond('Ready', 'False', 'ContainersNotReady', 'containers with unknown status: [5678]')],
    [
      'one unready',
      sp([c('1234'), c('5678')]),
      [],
      [readyS('1234'), notReadyS('5678')],
      'Running',
      cond('Ready', 'False', 'ContainersNotReady', 'containers with unready status: [5678]'),
    ],
    ['succeeded', sp([c('1234')]), [], [notReadyS('1234')], 'Succeeded', cond('Ready', 'False', 'PodCompleted')],
    [
      'gate missing',
      sp([], undefined, gates('gate1')),
      [],
      [],
      'Running',
      cond('Ready', 'False', 'ReadinessGatesNotReady', 'corresponding condition of pod readiness gate "gate1" does not exist.'),
    ],
    [
      'gate false',
      sp([], undefined, gates('gate1')),
      [cond('gate1', 'False')],
      [],
      'Running',
      cond('Ready', 'False', 'ReadinessGatesNotReady', 'the status of pod readiness gate "gate1" is not "True", but False'),
    ],
    ['gate true', sp([], undefined, gates('gate1')), [cond('gate1', 'True')], [], 'Running', cond('Ready', 'True')],
    [
      'second gate missing',
      sp([], undefined, gates('gate1', 'gate2')),
      [cond('gate1', 'True')],
      [],
      'Running',
      cond('Ready', 'False', 'ReadinessGatesNotReady', 'corresponding condition of pod readiness gate "gate2" does not exist.'),
    ],
    [
      'second gate false',
      sp([], undefined, gates('gate1', 'gate2')),
      [cond('gate1', 'True'), cond('gate2', 'False')],
      [],
      'Running',
      cond('Ready', 'False', 'ReadinessGatesNotReady', 'the status of pod readiness gate "gate2" is not "True", but False'),
    ],
    ['both gates true', sp([], undefined, gates('gate1', 'gate2')), [cond('gate1', 'True'), cond('gate2', 'True')], [], 'Running', cond('Ready', 'True')],
    [
      'gate true but container unready',
      sp([c('1234')], undefined, gates('gate1')),
      [cond('gate1', 'True')],
      [notReadyS('1234')],
      'Running',
      cond('Ready', 'False', 'ContainersNotReady', 'containers with unready status: [1234]'),
    ],
  ];
  for (const [name, pod, conditions, statuses, phase, want] of rows) {
    it(name, () => assert.deepEqual(generatePodReadyCondition(pod, conditions, statuses, phase), want));
  }
});

describe('TestGeneratePodInitializedCondition', () => {
  const noInit = sp([]);
  const oneInit = sp([c('regular')], [c('1234')]);
  const twoInit = sp([c('regular')], [c('1234'), c('5678')]);
  const oneSidecar = sp([c('regular')], [c('1234', true)]);
  const rows: Array<[string, { spec: PodSpec }, ContainerStatus[] | undefined, PodPhase, 'True' | 'False', string]> = [
    ['two init, nil statuses', twoInit, undefined, 'Running', 'False', 'UnknownContainerStatuses'],
    ['no init', noInit, [], 'Running', 'True', ''],
    ['one init, no status', oneInit, [], 'Running', 'False', 'ContainersNotInitialized'],
    ['two init, both ready', twoInit, [readyS('1234'), readyS('5678')], 'Running', 'True', ''],
    ['two init, one unknown', twoInit, [readyS('1234')], 'Running', 'False', 'ContainersNotInitialized'],
    ['two init, one not ready', twoInit, [readyS('1234'), notReadyS('5678')], 'Running', 'False', 'ContainersNotInitialized'],
    ['succeeded', oneInit, [readyS('1234')], 'Succeeded', 'True', 'PodCompleted'],
    ['sidecar not started', oneSidecar, [notStartedS('1234')], 'Pending', 'False', 'ContainersNotInitialized'],
    ['sidecar started', oneSidecar, [startedS('1234')], 'Running', 'True', ''],
    ['sidecar not started but regular running', oneSidecar, [notStartedS('1234'), aRunningStatus('regular')], 'Running', 'True', ''],
    ['init waiting but regular running', oneInit, [aWaitingStatus('1234'), aRunningStatus('regular')], 'Running', 'True', ''],
  ];
  for (const [name, pod, statuses, phase, status, reason] of rows) {
    it(name, () => {
      const got = generatePodInitializedCondition(pod, statuses, phase);
      assert.equal(got.type, 'Initialized');
      assert.equal(got.status, status);
      assert.equal(got.reason ?? '', reason);
    });
  }
  it('messages name unknown and incomplete containers', () => {
    const got = generatePodInitializedCondition(sp([c('r')], [c('a'), c('b'), c('c')]), [readyS('a'), notReadyS('b')], 'Pending');
    assert.equal(got.message, 'containers with unknown status: [c], containers with incomplete status: [b]');
  });
});

describe('TestGeneratePodReadyToStartContainersCondition', () => {
  const pod = { spec: {} };
  it('no sandbox → False', () => assert.deepEqual(generatePodReadyToStartContainersCondition(pod, { sandboxes: [] }), cond('PodReadyToStartContainers', 'False')));
  it('ready sandbox with IP → True', () =>
    assert.deepEqual(generatePodReadyToStartContainersCondition(pod, { sandboxes: [aSandbox()] }), cond('PodReadyToStartContainers', 'True')));
  it('not ready sandbox → False', () =>
    assert.deepEqual(generatePodReadyToStartContainersCondition(pod, { sandboxes: [aSandbox({ state: 'SANDBOX_NOTREADY' })] }), cond('PodReadyToStartContainers', 'False')));
});

describe('updateLastTransitionTime', () => {
  const now = Date.parse('2024-05-01T10:00:00Z');
  it('keeps the old time when the status did not change', () => {
    const old = { conditions: [{ type: 'Ready', status: 'True' as const, lastTransitionTime: '2024-01-01T00:00:00Z' }] };
    const got = updateLastTransitionTime({ conditions: [cond('Ready', 'True')] }, old, 'Ready', now);
    assert.equal(got.conditions?.[0]?.lastTransitionTime, '2024-01-01T00:00:00Z');
  });
  it('stamps now when the status changed', () => {
    const old = { conditions: [{ type: 'Ready', status: 'False' as const, lastTransitionTime: '2024-01-01T00:00:00Z' }] };
    const got = updateLastTransitionTime({ conditions: [cond('Ready', 'True')] }, old, 'Ready', now);
    assert.equal(got.conditions?.[0]?.lastTransitionTime, '2024-05-01T10:00:00Z');
  });
  it('stamps now for a new condition and leaves the input untouched', () => {
    const input = { conditions: [cond('Ready', 'True')] };
    const got = updateLastTransitionTime(input, undefined, 'Ready', now);
    assert.equal(got.conditions?.[0]?.lastTransitionTime, '2024-05-01T10:00:00Z');
    assert.equal(input.conditions[0]?.lastTransitionTime, undefined);
  });
  it('does nothing without the condition', () => {
    const input = { conditions: [cond('Ready', 'True')] };
    assert.equal(updateLastTransitionTime(input, undefined, 'Initialized', now), input);
  });
});
