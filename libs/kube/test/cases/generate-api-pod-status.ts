// Covers pkg/kubelet/kubelet_pods.go generateAPIPodStatus / convertToAPIContainerStatuses
// (ports TestConvertToAPIContainerStatuses and the phase/reason rules of Test_generateAPIPodStatus).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodStatus } from '@splitlet/api';
import { generateAPIPodStatus, type GenerateStatusInput } from '../../src/index.js';
import { aContainer, anEmptyRuntimeStatus, anExitedContainer, anUnknownContainer, aPod, aRunningContainer, aRuntimeStatus } from '../../src/testing/index.js';

const NOW = Date.parse('2024-05-01T10:00:00Z');
const T = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const gen = (i: Omit<GenerateStatusInput, 'runtimeName' | 'now'> & Partial<GenerateStatusInput>) => generateAPIPodStatus({ runtimeName: 'containerd', now: NOW, ...i });
const condOf = (s: PodStatus, type: string) => s.conditions?.find((c) => c.type === type);

describe('generateAPIPodStatus', () => {
  it('a new pod: Pending, ContainerCreating, conditions in kubelet order', () => {
    const pod = aPod();
    const s = gen({ pod, runtimeStatus: anEmptyRuntimeStatus(pod) });
    assert.equal(s.phase, 'Pending');
    assert.equal(s.qosClass, 'BestEffort');
    assert.equal(s.startTime, '2024-05-01T10:00:00Z');
    assert.equal(s.podIP, undefined);
    assert.deepEqual(s.containerStatuses, [
      { name: 'foo1', image: 'busybox', imageID: '', ready: false, restartCount: 0, started: false, state: { waiting: { reason: 'ContainerCreating' } } },
    ]);
    assert.deepEqual(
      s.conditions?.map((c) => [c.type, c.status, c.reason ?? '', c.message ?? '', c.lastTransitionTime]),
      [
        ['PodReadyToStartContainers', 'False', '', '', '2024-05-01T10:00:00Z'],
        ['Initialized', 'True', '', '', '2024-05-01T10:00:00Z'],
        ['Ready', 'False', 'ContainersNotReady', 'containers with unready status: [foo1]', '2024-05-01T10:00:00Z'],
        ['ContainersReady', 'False', 'ContainersNotReady', 'containers with unready status: [foo1]', '2024-05-01T10:00:00Z'],
        ['PodScheduled', 'True', '', '', '2024-05-01T10:00:00Z'],
      ],
    );
  });

  it('init containers: PodInitializing default reason and ContainersNotInitialized', () => {
    const pod = aPod({ spec: { initContainers: [aContainer({ name: 'init1' })], containers: [aContainer({ name: 'app' })] } });
    const s = gen({ pod, runtimeStatus: aRuntimeStatus(pod) });
    assert.equal(s.initContainerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
    assert.equal(s.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
    const init = condOf(s, 'Initialized');
    assert.equal(init?.reason, 'ContainersNotInitialized');
    assert.equal(init?.message, 'containers with incomplete status: [init1]');
    assert.equal(condOf(s, 'PodReadyToStartContainers')?.status, 'True');
  });

  it('running: containerID, image, started, ready, podIP, all conditions True', () => {
    const pod = aPod();
    const rs = aRuntimeStatus(pod, { containers: [aRunningContainer(pod.spec.containers[0]!, { id: 'abc', restartCount: 2 })] });
    const s = gen({ pod, runtimeStatus: rs, hostIPs: ['192.168.1.10'] });
    assert.equal(s.phase, 'Running');
    assert.equal(s.podIP, '10.0.0.1');
    assert.deepEqual(s.podIPs, [{ ip: '10.0.0.1' }]);
    assert.equal(s.hostIP, '192.168.1.10');
    assert.deepEqual(s.hostIPs, [{ ip: '192.168.1.10' }]);
    assert.deepEqual(s.containerStatuses?.[0], {
      name: 'foo1',
      restartCount: 2,
      image: 'busybox',
      imageID: 'sha256:busybox',
      containerID: 'containerd://abc',
      ready: true,
      started: true,
      state: { running: { startedAt: T(3000) } },
    });
    for (const t of ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled']) assert.equal(condOf(s, t)?.status, 'True', t);
  });

  it('readiness and startup probes gate ready and started', () => {
    const ct = aContainer({ readinessProbe: { exec: { command: ['true'] } }, startupProbe: { exec: { command: ['true'] } } });
    const pod = aPod({ spec: { containers: [ct] } });
    const rs = aRuntimeStatus(pod, { containers: [aRunningContainer(ct, { id: 'abc' })] });
    let s = gen({ pod, runtimeStatus: rs });
    assert.equal(s.containerStatuses?.[0]?.started, false);
    assert.equal(s.containerStatuses?.[0]?.ready, false);
    s = gen({ pod, runtimeStatus: rs, probes: { startup: { abc: 'Success' } } });
    assert.equal(s.containerStatuses?.[0]?.started, true);
    assert.equal(s.containerStatuses?.[0]?.ready, false);
    s = gen({ pod, runtimeStatus: rs, probes: { startup: { abc: 'Success' }, readiness: { abc: 'Success' } } });
    assert.equal(s.containerStatuses?.[0]?.ready, true);
    assert.equal(condOf(s, 'Ready')?.status, 'True');
  });

  it('crash loop: reasonCache waiting reason, lastState from the terminated instance', () => {
    const pod = aPod();
    const ct = pod.spec.containers[0]!;
    const rs = aRuntimeStatus(pod, {
      containers: [
        anExitedContainer(ct, 1, { id: 'old', createdAt: 1000, restartCount: 0 }),
        anExitedContainer(ct, 2, { id: 'new', createdAt: 5000, restartCount: 1, message: 'boom', startedAt: 6000, finishedAt: 7000 }),
      ],
    });
    const msg = 'back-off 10s restarting failed container=foo1 pod=foo_default(12345678)';
    const s = gen({ pod, runtimeStatus: rs, reasons: { foo1: { reason: 'CrashLoopBackOff', message: msg } } });
    const cs = s.containerStatuses?.[0];
    assert.deepEqual(cs?.state, { waiting: { reason: 'CrashLoopBackOff', message: msg } });
    assert.deepEqual(cs?.lastState, {
      terminated: { exitCode: 2, reason: 'Error', message: 'boom', startedAt: T(6000), finishedAt: T(7000), containerID: 'containerd://new' },
    });
    assert.equal(cs?.restartCount, 1);
    assert.equal(cs?.containerID, 'containerd://new');
    assert.equal(s.phase, 'Running');
  });

  it('lastState comes from the previous instance when the newest runs', () => {
    const pod = aPod();
    const ct = pod.spec.containers[0]!;
    const rs = aRuntimeStatus(pod, {
      containers: [anExitedContainer(ct, 137, { id: 'old', createdAt: 1000, reason: 'OOMKilled' }), aRunningContainer(ct, { id: 'new', createdAt: 5000, restartCount: 1 })],
    });
    const cs = gen({ pod, runtimeStatus: rs }).containerStatuses?.[0];
    assert.ok(cs?.state?.running !== undefined);
    assert.equal(cs?.lastState?.terminated?.reason, 'OOMKilled');
    assert.equal(cs?.lastState?.terminated?.exitCode, 137);
  });

  it('reasonCache is ignored for a container that will not be restarted', () => {
    const pod = aPod({ spec: { restartPolicy: 'Never' } });
    const rs = aRuntimeStatus(pod, { containers: [anExitedContainer(pod.spec.containers[0]!, 1)] });
    const s = gen({ pod, runtimeStatus: rs, reasons: { foo1: { reason: 'CrashLoopBackOff', message: 'x' } } });
    assert.equal(s.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    assert.equal(s.phase, 'Failed');
  });

  it('ErrImagePull on a container that never started', () => {
    const pod = aPod();
    const s = gen({ pod, runtimeStatus: aRuntimeStatus(pod), reasons: { foo1: { reason: 'ErrImagePull', message: 'pull failed' } } });
    assert.deepEqual(s.containerStatuses?.[0]?.state, { waiting: { reason: 'ErrImagePull', message: 'pull failed' } });
    assert.equal(s.phase, 'Pending');
  });

  it('a terminal phase in oldStatus is never left', () => {
    const pod = aPod();
    const rs = aRuntimeStatus(pod, { containers: [aRunningContainer(pod.spec.containers[0]!)] });
    const s = gen({ pod, runtimeStatus: rs, oldStatus: { phase: 'Failed', reason: 'DeadlineExceeded', message: 'too long' } });
    assert.equal(s.phase, 'Failed');
    assert.equal(s.reason, 'DeadlineExceeded');
    assert.equal(s.message, 'too long');
  });

  it('a terminal API phase is never left', () => {
    const pod = aPod({ status: { phase: 'Succeeded' } });
    const rs = aRuntimeStatus(pod, { containers: [aRunningContainer(pod.spec.containers[0]!)] });
    assert.equal(gen({ pod, runtimeStatus: rs, oldStatus: { phase: 'Running' } }).phase, 'Succeeded');
  });

  it('an unchanged phase keeps its reason and message; a new phase drops them', () => {
    const pod = aPod();
    const rs = aRuntimeStatus(pod);
    const kept = gen({ pod, runtimeStatus: rs, oldStatus: { phase: 'Pending', reason: 'R', message: 'M' } });
    assert.equal(kept.reason, 'R');
    assert.equal(kept.message, 'M');
    const dropped = gen({ pod, runtimeStatus: aRuntimeStatus(pod, { containers: [aRunningContainer(pod.spec.containers[0]!)] }), oldStatus: { phase: 'Pending', reason: 'R' } });
    assert.equal(dropped.phase, 'Running');
    assert.equal(dropped.reason, undefined);
  });

  it('startTime and unchanged lastTransitionTime are kept from oldStatus', () => {
    const pod = aPod();
    const first = gen({ pod, runtimeStatus: aRuntimeStatus(pod), now: Date.parse('2024-01-01T00:00:00Z') });
    const second = gen({ pod, runtimeStatus: aRuntimeStatus(pod, { containers: [aRunningContainer(pod.spec.containers[0]!)] }), oldStatus: first });
    assert.equal(second.startTime, '2024-01-01T00:00:00Z');
    assert.equal(condOf(second, 'PodScheduled')?.lastTransitionTime, '2024-01-01T00:00:00Z');
    assert.equal(condOf(second, 'PodReadyToStartContainers')?.lastTransitionTime, '2024-01-01T00:00:00Z');
    assert.equal(condOf(second, 'Ready')?.lastTransitionTime, '2024-05-01T10:00:00Z');
  });

  it('podIsTerminal turns an Always pod whose containers stopped into Succeeded/Failed', () => {
    const pod = aPod();
    const rs = aRuntimeStatus(pod, { containers: [anExitedContainer(pod.spec.containers[0]!, 0)] });
    assert.equal(gen({ pod, runtimeStatus: rs }).phase, 'Running');
    const s = gen({ pod, runtimeStatus: rs, podIsTerminal: true });
    assert.equal(s.phase, 'Succeeded');
    assert.equal(condOf(s, 'Ready')?.reason, 'PodCompleted');
    assert.equal(condOf(s, 'Initialized')?.reason, 'PodCompleted');
  });

  it('unknown runtime state after running → terminated ContainerStatusUnknown, restartCount + 1', () => {
    const pod = aPod();
    const rs = aRuntimeStatus(pod, { containers: [anUnknownContainer(pod.spec.containers[0]!, { id: 'u' })] });
    const old: PodStatus = { phase: 'Running', containerStatuses: [{ name: 'foo1', image: 'busybox', imageID: '', ready: true, restartCount: 3, state: { running: {} } }] };
    const cs = gen({ pod, runtimeStatus: rs, oldStatus: old }).containerStatuses?.[0];
    assert.deepEqual(cs?.state, { terminated: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', exitCode: 137 } });
    assert.equal(cs?.restartCount, 4);
  });

  // TestConvertToAPIContainerStatuses
  for (const [name, deleted, restarts] of [
    ['no current status, with previous statuses and deletion', true, 0],
    ['no current status, with previous statuses and no deletion', false, 1],
  ] as const) {
    it(name, () => {
      const pod = aPod({ spec: { containers: [aContainer({ name: 'containerA' }), aContainer({ name: 'containerB' })] } });
      if (deleted) pod.metadata.deletionTimestamp = '2024-05-01T09:00:00Z';
      const running = (n: string) => ({ name: n, image: '', imageID: '', ready: false, restartCount: 0, state: { running: {} } });
      const s = gen({ pod, runtimeStatus: anEmptyRuntimeStatus(pod), oldStatus: { containerStatuses: [running('containerA'), running('containerB')] } });
      for (const cs of s.containerStatuses ?? []) {
        assert.deepEqual(cs.state, { waiting: { reason: 'ContainerCreating' } });
        assert.deepEqual(cs.lastState, {
          terminated: {
            reason: 'ContainerStatusUnknown',
            message: 'The container could not be located when the pod was deleted.  The container used to be Running',
            exitCode: 137,
          },
        });
        assert.equal(cs.restartCount, restarts);
      }
    });
  }

  it('regular statuses are sorted by name, init statuses keep spec order; init exited 0 is ready', () => {
    const pod = aPod({
      spec: {
        initContainers: [aContainer({ name: 'z-init' }), aContainer({ name: 'a-init' })],
        containers: [aContainer({ name: 'b' }), aContainer({ name: 'a' })],
      },
    });
    const rs = aRuntimeStatus(pod, { containers: [anExitedContainer(pod.spec.initContainers![0]!, 0), anExitedContainer(pod.spec.initContainers![1]!, 0)] });
    const s = gen({ pod, runtimeStatus: rs, reasons: { 'z-init': { reason: 'CrashLoopBackOff', message: 'x' } } });
    assert.deepEqual(
      s.containerStatuses?.map((c) => c.name),
      ['a', 'b'],
    );
    assert.deepEqual(
      s.initContainerStatuses?.map((c) => c.name),
      ['z-init', 'a-init'],
    );
    assert.deepEqual(
      s.initContainerStatuses?.map((c) => c.ready),
      [true, true],
    );
    assert.equal(s.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    assert.equal(condOf(s, 'Initialized')?.status, 'True');
    assert.equal(s.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
  });

  it('preserves non-kubelet conditions and DisruptionTarget; evict forces Failed', () => {
    const pod = aPod({
      status: {
        conditions: [
          { type: 'example.com/gate', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
    const s = gen({
      pod,
      runtimeStatus: aRuntimeStatus(pod),
      oldStatus: { conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }] },
      evict: { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' },
    });
    assert.deepEqual(
      s.conditions?.map((c) => c.type),
      ['example.com/gate', 'DisruptionTarget', 'PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'],
    );
    assert.equal(s.phase, 'Failed');
    assert.equal(s.reason, 'DeadlineExceeded');
    assert.equal(condOf(s, 'ContainersReady')?.reason, 'PodFailed');
  });

  it('hostNetwork pods take the node IPs; dual-stack pod IPs are ordered by the node family', () => {
    const hn = aPod({ spec: { hostNetwork: true } });
    const s = gen({ pod: hn, runtimeStatus: aRuntimeStatus(hn, { ips: [], sandboxes: [] }), hostIPs: ['192.168.1.10', 'fd00::10'] });
    assert.equal(s.podIP, '192.168.1.10');
    assert.deepEqual(s.podIPs, [{ ip: '192.168.1.10' }, { ip: 'fd00::10' }]);
    const pod = aPod();
    const d = gen({ pod, runtimeStatus: aRuntimeStatus(pod, { ips: ['fd00::1', '10.0.0.1'] }), hostIPs: ['192.168.1.10'] });
    assert.deepEqual(d.podIPs, [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }]);
  });
});

describe('generated statuses are valid bus payloads', () => {
  it('parse with the @splitlet/api PodStatus schema', async () => {
    const { PodStatus: PodStatusSchema } = await import('@splitlet/api');
    const pod = aPod({ spec: { initContainers: [aContainer({ name: 'init' })] } });
    const ct = pod.spec.containers[0]!;
    const statuses = [
      gen({ pod, runtimeStatus: anEmptyRuntimeStatus(pod) }),
      gen({
        pod,
        runtimeStatus: aRuntimeStatus(pod, {
          containers: [anExitedContainer(pod.spec.initContainers![0]!, 0), anExitedContainer(ct, 1, { createdAt: 1 }), aRunningContainer(ct, { createdAt: 9 })],
        }),
      }),
      gen({ pod, runtimeStatus: aRuntimeStatus(pod), reasons: { foo1: { reason: 'CrashLoopBackOff', message: 'm' } }, podIsTerminal: true }),
    ];
    for (const s of statuses) PodStatusSchema.parse(s);
  });
});
