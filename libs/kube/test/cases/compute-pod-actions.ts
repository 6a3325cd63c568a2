// Ports pkg/kubelet/kuberuntime/kuberuntime_manager_test.go: TestComputePodActions,
// TestComputePodActionsWithInitContainers, TestComputePodActionsWithRestartableInitContainers,
// TestComputePodActionsWithInitAndEphemeralContainers (case names kept).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BoundPod, RuntimePodStatus } from '@splitlet/api';
import { computePodActions, findNextInitContainerToRun, shouldContainerBeRestarted } from '../../src/index.js';
import { aContainer, aPod, aRunningContainer, aRuntimeStatus, anExitedContainer, aSandbox } from '../../src/testing/index.js';

interface Expected {
  killPod?: boolean;
  createSandbox?: boolean;
  sandboxId?: string;
  attempt?: number;
  initContainersToStart?: number[];
  containersToStart?: number[];
  ephemeralContainersToStart?: number[];
  kill?: string[];
}

interface Case {
  name: string;
  mutatePod?: (pod: BoundPod) => void;
  mutateStatus?: (status: RuntimePodStatus, probes: MutableProbes) => void;
  expected: Expected;
}

type MutableProbes = { liveness: Record<string, 'Success' | 'Failure' | 'Unknown'>; startup: Record<string, 'Success' | 'Failure' | 'Unknown'> };

function makeBasePodAndStatus(): { pod: BoundPod; status: RuntimePodStatus } {
  const pod = aPod({
    metadata: { name: 'foo', namespace: 'foo-ns', uid: '12345678' },
    spec: { containers: [aContainer({ name: 'foo1' }), aContainer({ name: 'foo2' }), aContainer({ name: 'foo3' })] },
  });
  delete (pod.spec as { restartPolicy?: string }).restartPolicy;
  const status = aRuntimeStatus(pod, {
    sandboxes: [aSandbox({ id: 'sandboxID', attempt: 0, ip: '10.0.0.1' })],
    containers: pod.spec.containers.map((c, i) => aRunningContainer(c, { id: `id${i + 1}` })),
  });
  return { pod, status };
}

function withInitContainers(restartable: boolean): { pod: BoundPod; status: RuntimePodStatus } {
  const { pod, status } = makeBasePodAndStatus();
  if (restartable) {
    pod.spec.initContainers = [
      aContainer({ name: 'restartable-init-1', image: 'bar-image', restartPolicy: 'Always' }),
      aContainer({ name: 'restartable-init-2', image: 'bar-image', restartPolicy: 'Always', livenessProbe: {}, startupProbe: {} }),
      aContainer({ name: 'restartable-init-3', image: 'bar-image', restartPolicy: 'Always', livenessProbe: {}, startupProbe: {} }),
    ];
    status.containers = pod.spec.initContainers.map((c, i) => aRunningContainer(c, { id: `initid${i + 1}` }));
  } else {
    pod.spec.initContainers = ['init1', 'init2', 'init3'].map((name) => aContainer({ name, image: 'bar-image' }));
    status.containers = pod.spec.initContainers.map((c, i) => anExitedContainer(c, 0, { id: `initid${i + 1}` }));
  }
  return { pod, status };
}

function run(cases: Case[], make: () => { pod: BoundPod; status: RuntimePodStatus }, probesFor: () => MutableProbes): void {
  for (const tc of cases) {
    it(tc.name, () => {
      const { pod, status } = make();
      const probes = probesFor();
      tc.mutatePod?.(pod);
      tc.mutateStatus?.(status, probes);
      const actions = computePodActions(pod, status, probes);
      const e = tc.expected;
      assert.deepEqual(
        {
          killPod: actions.killPod,
          createSandbox: actions.createSandbox,
          sandboxId: actions.sandboxId,
          attempt: actions.attempt,
          initContainersToStart: actions.initContainersToStart,
          containersToStart: actions.containersToStart,
          ephemeralContainersToStart: actions.ephemeralContainersToStart,
          kill: Object.keys(actions.containersToKill).sort(),
        },
        {
          killPod: e.killPod ?? false,
          createSandbox: e.createSandbox ?? false,
          sandboxId: e.sandboxId ?? 'sandboxID',
          attempt: e.attempt ?? 0,
          initContainersToStart: e.initContainersToStart ?? [],
          containersToStart: e.containersToStart ?? [],
          ephemeralContainersToStart: e.ephemeralContainersToStart ?? [],
          kill: [...(e.kill ?? [])].sort(),
        },
      );
    });
  }
}

const setPolicy = (p: 'Always' | 'OnFailure' | 'Never') => (pod: BoundPod) => {
  pod.spec.restartPolicy = p;
};
const noProbes = (): MutableProbes => ({ liveness: {}, startup: {} });
const c = (status: RuntimePodStatus, i: number) => status.containers[i]!;

describe('TestComputePodActions', () => {
  run(
    [
      { name: 'everything is good; do nothing', expected: {} },
      {
        name: 'start pod sandbox and all containers for a new pod',
        mutateStatus: (s) => {
          s.sandboxes = [];
          s.containers = [];
        },
        expected: { killPod: true, createSandbox: true, sandboxId: '', attempt: 0, containersToStart: [0, 1, 2] },
      },
      {
        name: 'restart exited containers if RestartPolicy == Always',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          Object.assign(c(s, 0), { state: 'CONTAINER_EXITED', exitCode: 0 });
          Object.assign(c(s, 1), { state: 'CONTAINER_EXITED', exitCode: 111 });
        },
        expected: { containersToStart: [0, 1] },
      },
      {
        name: 'restart failed containers if RestartPolicy == OnFailure',
        mutatePod: setPolicy('OnFailure'),
        mutateStatus: (s) => {
          Object.assign(c(s, 0), { state: 'CONTAINER_EXITED', exitCode: 0 });
          Object.assign(c(s, 1), { state: 'CONTAINER_EXITED', exitCode: 111 });
        },
        expected: { containersToStart: [1] },
      },
      {
        name: 'restart created but not started containers if RestartPolicy == OnFailure',
        mutatePod: setPolicy('OnFailure'),
        mutateStatus: (s) => {
          Object.assign(c(s, 0), { state: 'CONTAINER_EXITED', exitCode: 0 });
          Object.assign(c(s, 1), { state: 'CONTAINER_CREATED' });
        },
        expected: { containersToStart: [1] },
      },
      {
        name: "don't restart containers if RestartPolicy == Never",
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          Object.assign(c(s, 0), { state: 'CONTAINER_EXITED', exitCode: 0 });
          Object.assign(c(s, 1), { state: 'CONTAINER_EXITED', exitCode: 111 });
        },
        expected: {},
      },
      {
        name: 'Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, containersToStart: [0, 1, 2] },
      },
      {
        name: 'Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead, and RestartPolicy == OnFailure',
        mutatePod: setPolicy('OnFailure'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
          Object.assign(c(s, 1), { state: 'CONTAINER_EXITED', exitCode: 0 });
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, containersToStart: [0, 2] },
      },
      {
        name: 'Kill pod and recreate all containers if the PodSandbox does not have an IP',
        mutateStatus: (s) => {
          s.sandboxes[0]!.ip = '';
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, containersToStart: [0, 1, 2] },
      },
      {
        name: "Kill and recreate the container if the container's spec changed",
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          c(s, 1).hash = '19c5e6a8';
        },
        expected: { kill: ['id2'], containersToStart: [1] },
      },
      {
        name: 'Kill and recreate the container if the liveness check has failed',
        mutatePod: setPolicy('Always'),
        mutateStatus: (_s, p) => {
          p.liveness['id2'] = 'Failure';
        },
        expected: { kill: ['id2'], containersToStart: [1] },
      },
      {
        name: 'Kill and recreate the container if the startup check has failed',
        mutatePod: setPolicy('Always'),
        mutateStatus: (_s, p) => {
          p.startup['id2'] = 'Failure';
        },
        expected: { kill: ['id2'], containersToStart: [1] },
      },
      {
        name: 'Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and all containers exited',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          Object.assign(s.sandboxes[0]!, { state: 'SANDBOX_NOTREADY', attempt: 1 });
          for (const x of s.containers) Object.assign(x, { state: 'CONTAINER_EXITED', exitCode: 0 });
        },
        expected: { attempt: 2, createSandbox: false, killPod: true },
      },
      {
        name: 'Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=OnFailure and all containers succeeded',
        mutatePod: setPolicy('OnFailure'),
        mutateStatus: (s) => {
          Object.assign(s.sandboxes[0]!, { state: 'SANDBOX_NOTREADY', attempt: 1 });
          for (const x of s.containers) Object.assign(x, { state: 'CONTAINER_EXITED', exitCode: 0 });
        },
        expected: { attempt: 2, createSandbox: false, killPod: true },
      },
      {
        name: 'Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and no containers have ever been created',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          Object.assign(s.sandboxes[0]!, { state: 'SANDBOX_NOTREADY', attempt: 2 });
          s.containers = [];
        },
        expected: { attempt: 3, createSandbox: true, killPod: true, containersToStart: [0, 1, 2] },
      },
      {
        name: 'Kill and recreate the container if the container is in unknown state',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          c(s, 1).state = 'CONTAINER_UNKNOWN';
        },
        expected: { kill: ['id2'], containersToStart: [1] },
      },
      {
        name: 'Restart the container if the container is in created state',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          c(s, 1).state = 'CONTAINER_CREATED';
        },
        expected: { containersToStart: [1] },
      },
    ],
    makeBasePodAndStatus,
    noProbes,
  );

  it('kill messages follow the kubelet', () => {
    const { pod, status } = makeBasePodAndStatus();
    c(status, 0).hash = 'changed';
    c(status, 2).state = 'CONTAINER_UNKNOWN';
    const a = computePodActions(pod, status, { liveness: { id2: 'Failure' } });
    assert.equal(a.containersToKill['id1']?.message, 'Container foo1 definition changed, will be restarted');
    assert.equal(a.containersToKill['id2']?.message, 'Container foo2 failed liveness probe, will be restarted');
    assert.equal(a.containersToKill['id2']?.reason, 'LivenessProbe');
    assert.equal(a.containersToKill['id3']?.message, 'Container is in "unknown" state, try killing it before restart');
    pod.spec.restartPolicy = 'Never';
    const b = computePodActions(pod, { ...status, containers: status.containers.slice(0, 2) }, { liveness: { id2: 'Failure' } });
    assert.equal(b.containersToKill['id2']?.message, 'Container foo2 failed liveness probe');
    assert.deepEqual(b.containersToStart, [0, 2]);
  });

  it('a sandbox whose network mode changed is replaced without an id', () => {
    const { pod, status } = makeBasePodAndStatus();
    status.sandboxes[0]!.hostNetwork = true;
    const a = computePodActions(pod, status);
    assert.equal(a.createSandbox, true);
    assert.equal(a.sandboxId, '');
    assert.equal(a.attempt, 1);
  });

  it('a pod with a deletionTimestamp restarts nothing and is killed', () => {
    const { pod, status } = makeBasePodAndStatus();
    pod.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
    for (const x of status.containers) Object.assign(x, { state: 'CONTAINER_EXITED', exitCode: 1 });
    const a = computePodActions(pod, status);
    assert.equal(a.killPod, true);
    assert.deepEqual(a.containersToStart, []);
  });
});

describe('TestComputePodActionsWithInitContainers', () => {
  run(
    [
      { name: 'initialization completed; start all containers', expected: { containersToStart: [0, 1, 2] } },
      {
        name: 'no init containers have been started; start the first one',
        mutateStatus: (s) => {
          s.containers = [];
        },
        expected: { initContainersToStart: [0] },
      },
      {
        name: 'initialization in progress; do nothing',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          c(s, 2).state = 'CONTAINER_RUNNING';
        },
        expected: {},
      },
      {
        name: 'Kill pod and restart the first init container if the pod sandbox is dead',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
      },
      ...(['Always', 'OnFailure'] as const).map((p) => ({
        name: `initialization failed; restart the last init container if RestartPolicy == ${p}`,
        mutatePod: setPolicy(p),
        mutateStatus: (s: RuntimePodStatus) => {
          c(s, 2).exitCode = 137;
        },
        expected: { initContainersToStart: [2] },
      })),
      {
        name: 'initialization failed; kill pod if RestartPolicy == Never',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          c(s, 2).exitCode = 137;
        },
        expected: { killPod: true },
      },
      ...(['Always', 'OnFailure'] as const).map((p) => ({
        name: `init container state unknown; kill and recreate the last init container if RestartPolicy == ${p}`,
        mutatePod: setPolicy(p),
        mutateStatus: (s: RuntimePodStatus) => {
          c(s, 2).state = 'CONTAINER_UNKNOWN';
        },
        expected: { initContainersToStart: [2], kill: ['initid3'] },
      })),
      {
        name: 'init container state unknown; kill pod if RestartPolicy == Never',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          c(s, 2).state = 'CONTAINER_UNKNOWN';
        },
        expected: { killPod: true },
      },
      {
        name: 'Pod sandbox not ready, init container failed, but RestartPolicy == Never; kill pod only',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        },
        expected: { killPod: true, createSandbox: false, attempt: 1 },
      },
      {
        name: 'Pod sandbox not ready, and RestartPolicy == Never, but no visible init containers;  create a new pod sandbox',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
          s.containers = [];
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
      },
      {
        name: 'Pod sandbox not ready, init container failed, and RestartPolicy == OnFailure; create a new pod sandbox',
        mutatePod: setPolicy('OnFailure'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
          c(s, 2).exitCode = 137;
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
      },
      {
        name: "some of the init container statuses are missing but the last init container is running, don't restart preceding ones",
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          c(s, 2).state = 'CONTAINER_RUNNING';
          s.containers = s.containers.slice(2);
        },
        expected: {},
      },
      {
        name: 'an init container is in the created state due to an unknown error when starting container; restart it',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          c(s, 2).state = 'CONTAINER_CREATED';
        },
        expected: { initContainersToStart: [2] },
      },
    ],
    () => withInitContainers(false),
    noProbes,
  );
});

describe('TestComputePodActionsWithRestartableInitContainers', () => {
  const probes = (): MutableProbes => ({
    liveness: { initid2: 'Success', initid3: 'Success' },
    startup: { initid2: 'Success', initid3: 'Success' },
  });
  const restartableCases: Case[] = [
    { name: 'initialization completed; start all containers', expected: { containersToStart: [0, 1, 2] } },
    {
      name: 'no init containers have been started; start the first one',
      mutateStatus: (s) => {
        s.containers = [];
      },
      expected: { initContainersToStart: [0] },
    },
    {
      name: 'an init container is stuck in the created state; restart it',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        c(s, 2).state = 'CONTAINER_CREATED';
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: 'restartable init container has started; start the next',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        s.containers = s.containers.slice(0, 1);
      },
      expected: { initContainersToStart: [1] },
    },
    {
      name: 'livenessProbe has not been run; start the nothing',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s, p) => {
        delete p.liveness['initid2'];
        s.containers = s.containers.slice(0, 2);
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: 'livenessProbe in progress; start the next',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s, p) => {
        p.liveness['initid2'] = 'Unknown';
        s.containers = s.containers.slice(0, 2);
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: 'livenessProbe has completed; start the next',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        s.containers = s.containers.slice(0, 2);
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: 'kill and recreate the restartable init container if the liveness check has failed',
      mutatePod: setPolicy('Always'),
      mutateStatus: (_s, p) => {
        p.liveness['initid3'] = 'Failure';
      },
      expected: { initContainersToStart: [2], kill: ['initid3'], containersToStart: [0, 1, 2] },
    },
    {
      name: 'startupProbe has not been run; do nothing',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s, p) => {
        delete p.startup['initid2'];
        s.containers = s.containers.slice(0, 2);
      },
      expected: {},
    },
    {
      name: 'startupProbe in progress; do nothing',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s, p) => {
        p.startup['initid2'] = 'Unknown';
        s.containers = s.containers.slice(0, 2);
      },
      expected: {},
    },
    {
      name: 'startupProbe has completed; start the next',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        s.containers = s.containers.slice(0, 2);
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: 'kill and recreate the restartable init container if the startup check has failed',
      mutatePod: setPolicy('Always'),
      mutateStatus: (_s, p) => {
        p.startup['initid3'] = 'Failure';
      },
      expected: { initContainersToStart: [2], kill: ['initid3'] },
    },
    {
      name: 'kill and recreate the restartable init container if the container definition changes',
      mutatePod: (pod) => {
        pod.spec.restartPolicy = 'Always';
        pod.spec.initContainers![2]!.image = 'foo-image';
      },
      expected: { initContainersToStart: [2], kill: ['initid3'], containersToStart: [0, 1, 2] },
    },
    {
      name: 'restart terminated restartable init container and next init container',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        c(s, 0).state = 'CONTAINER_EXITED';
        c(s, 2).state = 'CONTAINER_EXITED';
      },
      expected: { initContainersToStart: [0, 2] },
    },
    {
      name: 'restart terminated restartable init container and regular containers',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        c(s, 0).state = 'CONTAINER_EXITED';
      },
      expected: { initContainersToStart: [0], containersToStart: [0, 1, 2] },
    },
    {
      name: 'Pod sandbox not ready, restartable init container failed, but RestartPolicy == Never; kill pod only',
      mutatePod: setPolicy('Never'),
      mutateStatus: (s) => {
        s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        Object.assign(c(s, 2), { state: 'CONTAINER_EXITED', exitCode: 137 });
      },
      expected: { killPod: true, createSandbox: false, attempt: 1 },
    },
    {
      name: 'Pod sandbox not ready, and RestartPolicy == Never, but no visible restartable init containers;  create a new pod sandbox',
      mutatePod: setPolicy('Never'),
      mutateStatus: (s) => {
        s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        s.containers = [];
      },
      expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
    },
    ...(['OnFailure', 'Always'] as const).map((p) => ({
      name: `Pod sandbox not ready, restartable init container failed, and RestartPolicy == ${p}; create a new pod sandbox`,
      mutatePod: setPolicy(p),
      mutateStatus: (s: RuntimePodStatus) => {
        s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        Object.assign(c(s, 2), { state: 'CONTAINER_EXITED', exitCode: 137 });
      },
      expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
    })),
    {
      name: "initialization failed; restart the last restartable init container even if pod's RestartPolicy == Never",
      mutatePod: setPolicy('Never'),
      mutateStatus: (s) => {
        Object.assign(c(s, 2), { state: 'CONTAINER_EXITED', exitCode: 137 });
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: "restartable init container state unknown; kill and recreate the last restartable init container even if pod's RestartPolicy == Never",
      mutatePod: setPolicy('Never'),
      mutateStatus: (s) => {
        c(s, 2).state = 'CONTAINER_UNKNOWN';
      },
      expected: { initContainersToStart: [2], kill: ['initid3'] },
    },
    {
      name: "restart restartable init container if regular containers are running even if pod's RestartPolicy == Never",
      mutatePod: setPolicy('Never'),
      mutateStatus: (s) => {
        Object.assign(c(s, 2), { state: 'CONTAINER_EXITED', exitCode: 137 });
      },
      expected: { initContainersToStart: [2] },
    },
    {
      name: "kill the pod if all main containers succeeded if pod's RestartPolicy == Never",
      mutatePod: setPolicy('Never'),
      expected: { killPod: true },
    },
    {
      name: 'some of the init container statuses are missing but the last init container is running, restart restartable init and regular containers',
      mutatePod: setPolicy('Always'),
      mutateStatus: (s) => {
        s.containers = s.containers.slice(2);
      },
      expected: { initContainersToStart: [0, 1], containersToStart: [0, 1, 2] },
    },
  ];
  run(
    restartableCases.map((tc): Case => {
      // The two "main containers" cases add regular container statuses, as the Go test does.
      if (tc.name.startsWith('restart restartable init container if regular containers are running')) {
        const prev = tc.mutateStatus;
        return {
          ...tc,
          mutateStatus: (s: RuntimePodStatus, p: MutableProbes) => {
            prev?.(s, p);
            const { pod } = makeBasePodAndStatus();
            pod.spec.containers.forEach((ct, i) => s.containers.push(aRunningContainer(ct, { id: `id${i + 1}` })));
          },
        };
      }
      if (tc.name.startsWith('kill the pod if all main containers succeeded')) {
        return {
          ...tc,
          mutateStatus: (s: RuntimePodStatus) => {
            const { pod } = makeBasePodAndStatus();
            pod.spec.containers.forEach((ct, i) => s.containers.push(anExitedContainer(ct, 0, { id: `id${i + 1}` })));
          },
        };
      }
      return tc;
    }),
    () => withInitContainers(true),
    probes,
  );
});

describe('TestComputePodActionsWithInitAndEphemeralContainers', () => {
  const make = (): { pod: BoundPod; status: RuntimePodStatus } => {
    const { pod, status } = makeBasePodAndStatus();
    pod.spec.initContainers = [aContainer({ name: 'init1', image: 'bar-image' })];
    pod.spec.ephemeralContainers = [{ name: 'debug', image: 'busybox' }];
    status.containers.push(anExitedContainer(pod.spec.initContainers[0]!, 0, { id: 'initid1' }));
    status.containers.push(aRunningContainer(aContainer({ name: 'debug' }), { id: 'debug1' }));
    return { pod, status };
  };
  run(
    [
      { name: 'steady state; do nothing; ignore ephemeral container', expected: {} },
      {
        name: 'No ephemeral containers running; start one',
        mutateStatus: (s) => {
          s.containers = s.containers.slice(0, 4);
        },
        expected: { ephemeralContainersToStart: [0] },
      },
      {
        name: 'Start second ephemeral container',
        mutatePod: (pod) => {
          pod.spec.ephemeralContainers!.push({ name: 'debug2', image: 'busybox' });
        },
        expected: { ephemeralContainersToStart: [1] },
      },
      {
        name: 'Ephemeral container exited; do not restart',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          c(s, 4).state = 'CONTAINER_EXITED';
        },
        expected: {},
      },
      {
        name: 'initialization in progress; start ephemeral container',
        mutateStatus: (s) => {
          c(s, 3).state = 'CONTAINER_RUNNING';
          s.containers = s.containers.slice(0, 4);
        },
        expected: { ephemeralContainersToStart: [0] },
      },
      {
        name: 'Create a new pod sandbox if the pod sandbox is dead, init container failed and RestartPolicy == OnFailure',
        mutatePod: setPolicy('OnFailure'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
          s.containers = s.containers.slice(3);
          c(s, 0).exitCode = 137;
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
      },
      {
        name: 'Kill pod and do not restart ephemeral container if the pod sandbox is dead',
        mutatePod: setPolicy('Always'),
        mutateStatus: (s) => {
          s.sandboxes[0]!.state = 'SANDBOX_NOTREADY';
        },
        expected: { killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] },
      },
      {
        name: 'Kill pod if all containers exited except ephemeral container',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          for (let i = 0; i < 3; i++) Object.assign(c(s, i), { state: 'CONTAINER_EXITED', exitCode: 0 });
        },
        expected: { killPod: true },
      },
      {
        name: 'Ephemeral container is in unknown state; leave it alone',
        mutatePod: setPolicy('Never'),
        mutateStatus: (s) => {
          c(s, 4).state = 'CONTAINER_UNKNOWN';
        },
        expected: {},
      },
    ],
    make,
    noProbes,
  );
});

describe('findNextInitContainerToRun', () => {
  const base = () => withInitContainers(false);
  it('all init containers done', () => {
    const { pod, status } = base();
    assert.deepEqual(findNextInitContainerToRun(pod, status), { done: true });
  });
  it('no init container run yet → the first', () => {
    const { pod, status } = base();
    status.containers = [];
    assert.deepEqual(findNextInitContainerToRun(pod, status), { next: 0, done: false });
  });
  it('after the first succeeded → the second', () => {
    const { pod, status } = base();
    status.containers = status.containers.slice(0, 1);
    assert.deepEqual(findNextInitContainerToRun(pod, status), { next: 1, done: false });
  });
  it('a failed init container is returned with its status', () => {
    const { pod, status } = base();
    c(status, 1).exitCode = 1;
    const r = findNextInitContainerToRun(pod, status);
    assert.equal(r.next, 1);
    assert.equal(r.failed?.id, 'initid2');
    assert.equal(r.done, false);
  });
  it('one still running → wait', () => {
    const { pod, status } = base();
    c(status, 2).state = 'CONTAINER_RUNNING';
    assert.deepEqual(findNextInitContainerToRun(pod, status), { done: false });
  });
  it('a running regular container means done', () => {
    const { pod, status } = base();
    status.containers = [aRunningContainer(pod.spec.containers[0]!)];
    assert.deepEqual(findNextInitContainerToRun(pod, status), { done: true });
  });
});

describe('shouldContainerBeRestarted', () => {
  const pod = aPod();
  const ct = pod.spec.containers[0]!;
  const table: Array<[string, 'Always' | 'OnFailure' | 'Never', RuntimePodStatus['containers'], boolean]> = [
    ['no status', 'Never', [], true],
    ['running', 'Always', [aRunningContainer(ct)], false],
    ['created', 'Never', [aRunningContainer(ct, { state: 'CONTAINER_CREATED' })], true],
    ['unknown', 'Never', [aRunningContainer(ct, { state: 'CONTAINER_UNKNOWN' })], true],
    ['exited 0, Always', 'Always', [anExitedContainer(ct, 0)], true],
    ['exited 0, OnFailure', 'OnFailure', [anExitedContainer(ct, 0)], false],
    ['exited 1, OnFailure', 'OnFailure', [anExitedContainer(ct, 1)], true],
    ['exited 1, Never', 'Never', [anExitedContainer(ct, 1)], false],
    ['latest instance wins', 'OnFailure', [anExitedContainer(ct, 1, { createdAt: 1 }), anExitedContainer(ct, 0, { createdAt: 2 })], false],
  ];
  for (const [name, policy, containers, want] of table) {
    it(name, () => {
      const p = aPod({ spec: { restartPolicy: policy } });
      assert.equal(shouldContainerBeRestarted(ct, p, { containers }), want);
    });
  }
});
