/**
 * Builders for tests of code that uses `@splitlet/kube` and the `@splitlet/api` pod types: pods,
 * containers, runtime statuses and API container statuses with kubelet-like defaults.
 *
 * Models the fixtures of pkg/kubelet tests (makeBasePodAndStatus, runningState, waitingState …).
 */
import type { BoundPod, Container, ContainerStatus, ObjectMeta, PodSpec, PodStatus, RuntimeContainerStatus, RuntimePodStatus, RuntimeSandboxStatus } from '@splitlet/api';
import type { AdmissionNode } from '../admission.js';
import { hashContainer } from '../hash-container.js';

/**
 * Overrides for {@link aPod}: metadata and spec are merged shallowly into the defaults.
 *
 * Models the fixtures of pkg/kubelet tests.
 */
export interface PodOverrides {
  readonly metadata?: Partial<ObjectMeta>;
  readonly spec?: Partial<PodSpec>;
  readonly status?: PodStatus;
}

/**
 * A container `foo1` running `busybox`, with `overrides` applied.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (makeBasePodAndStatus containers).
 */
export function aContainer(overrides: Partial<Container> = {}): Container {
  return { name: 'foo1', image: 'busybox', ...overrides };
}

/**
 * A bound pod `foo` in `default` with UID `12345678`, `restartPolicy: Always` and one container
 * ({@link aContainer}); `overrides.metadata` / `overrides.spec` are merged over the defaults.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (makeBasePodAndStatus).
 */
export function aPod(overrides: PodOverrides = {}): BoundPod {
  const pod: BoundPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'foo', namespace: 'default', uid: '12345678', ...overrides.metadata } as BoundPod['metadata'],
    spec: { containers: [aContainer()], restartPolicy: 'Always', ...overrides.spec },
  };
  if (overrides.status !== undefined) pod.status = overrides.status;
  return pod;
}

/**
 * A READY sandbox `sandboxID`, attempt 0, IP 10.0.0.1, created at t=1000 ms.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (the READY sandbox of makeBasePodAndStatus).
 */
export function aSandbox(overrides: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus {
  return { id: 'sandboxID', state: 'SANDBOX_READY', createdAt: 1000, attempt: 0, ip: '10.0.0.1', ...overrides };
}

/**
 * The runtime view of `pod` (default {@link aPod}): one READY sandbox, IP 10.0.0.1, no containers.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (makeBasePodAndStatus status).
 */
export function aRuntimeStatus(pod: BoundPod = aPod(), overrides: Partial<RuntimePodStatus> = {}): RuntimePodStatus {
  return {
    uid: pod.metadata.uid,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    ips: ['10.0.0.1'],
    sandboxes: [aSandbox()],
    containers: [],
    ...overrides,
  };
}

/**
 * A runtime pod status with no sandbox and no container (a pod never started).
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager_test.go ("start pod sandbox and all containers for a new pod").
 */
export function anEmptyRuntimeStatus(pod: BoundPod = aPod()): RuntimePodStatus {
  return aRuntimeStatus(pod, { ips: [], sandboxes: [], containers: [] });
}

function base(container: Container, overrides: Partial<RuntimeContainerStatus>): RuntimeContainerStatus {
  return {
    id: `id-${container.name}`,
    name: container.name,
    sandboxId: 'sandboxID',
    state: 'CONTAINER_RUNNING',
    createdAt: 2000,
    image: container.image ?? '',
    imageRef: `sha256:${container.image ?? ''}`,
    hash: hashContainer(container),
    restartCount: 0,
    ...overrides,
  };
}

/**
 * A running instance of `container` (hash matching its spec), started at t=3000 ms.
 *
 * Models pkg/kubelet/container/runtime.go (Status with ContainerStateRunning).
 */
export function aRunningContainer(container: Container, overrides: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return base(container, { state: 'CONTAINER_RUNNING', startedAt: 3000, ...overrides });
}

/**
 * An exited instance of `container` with `exitCode` (reason Completed / Error like containerd).
 *
 * Models pkg/kubelet/container/runtime.go (Status with ContainerStateExited).
 */
export function anExitedContainer(container: Container, exitCode = 0, overrides: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return base(container, {
    state: 'CONTAINER_EXITED',
    exitCode,
    reason: exitCode === 0 ? 'Completed' : 'Error',
    startedAt: 3000,
    finishedAt: 4000,
    ...overrides,
  });
}

/**
 * A created-but-not-started instance of `container`.
 *
 * Models pkg/kubelet/container/runtime.go (Status with ContainerStateCreated).
 */
export function aCreatedContainer(container: Container, overrides: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return base(container, { state: 'CONTAINER_CREATED', ...overrides });
}

/**
 * An instance of `container` in the unknown state.
 *
 * Models pkg/kubelet/container/runtime.go (Status with ContainerStateUnknown).
 */
export function anUnknownContainer(container: Container, overrides: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return base(container, { state: 'CONTAINER_UNKNOWN', ...overrides });
}

/**
 * An API container status in `running` state (kubelet_pods_test runningState).
 *
 * Models pkg/kubelet/kubelet_pods_test.go (runningState).
 */
export function aRunningStatus(name: string, overrides: Partial<ContainerStatus> = {}): ContainerStatus {
  return { name, image: '', imageID: '', ready: false, restartCount: 0, state: { running: {} }, ...overrides };
}

/**
 * A running API status with `started: true` (startedState).
 *
 * Models pkg/kubelet/kubelet_pods_test.go (startedState).
 */
export function aStartedStatus(name: string): ContainerStatus {
  return aRunningStatus(name, { started: true });
}

/**
 * An API container status waiting with `reason` (waitingState / waitingStateWithReason).
 *
 * Models pkg/kubelet/kubelet_pods_test.go (waitingState, waitingStateWithReason).
 */
export function aWaitingStatus(name: string, reason?: string, overrides: Partial<ContainerStatus> = {}): ContainerStatus {
  return { name, image: '', imageID: '', ready: false, restartCount: 0, state: { waiting: reason === undefined ? {} : { reason } }, ...overrides };
}

/**
 * A waiting API status whose last termination exited with `exitCode` (waitingStateWithLastTermination).
 *
 * Models pkg/kubelet/kubelet_pods_test.go (waitingStateWithLastTermination, waitingStateWithNonZeroTermination).
 */
export function aWaitingStatusWithLastTermination(name: string, exitCode = 0): ContainerStatus {
  return aWaitingStatus(name, undefined, { lastState: { terminated: { exitCode } } });
}

/**
 * A terminated API status (succeededState for 0, failedState for -1).
 *
 * Models pkg/kubelet/kubelet_pods_test.go (succeededState, failedState, stoppedState).
 */
export function aTerminatedStatus(name: string, exitCode = 0, overrides: Partial<ContainerStatus> = {}): ContainerStatus {
  return { name, image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode } }, ...overrides };
}

/**
 * A Linux node `node-1` with 2 CPUs, 4Gi memory, 20Gi ephemeral storage and 110 pods allocatable.
 *
 * Models pkg/kubelet/lifecycle/predicate_test.go (makeTestNode).
 */
export function aNode(overrides: Partial<AdmissionNode> = {}): AdmissionNode {
  return {
    name: 'node-1',
    labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': 'node-1' },
    allocatable: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '20Gi', pods: '110' },
    ...overrides,
  };
}

/**
 * A deterministic [0, 1) generator (mulberry32) for jitter in tests.
 *
 * Models the seeded rand.Rand the kubelet tests inject (no kubelet file).
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A settable clock `{now(), set(ms), advance(ms)}` for Backoff and PodStorage tests.
 *
 * Models k8s.io/utils/clock/testing (FakeClock).
 */
export function aManualClock(startMs = 0): { now(): number; set(ms: number): void; advance(ms: number): void } {
  let t = startMs;
  return {
    now: () => t,
    set: (ms) => {
      t = ms;
    },
    advance: (ms) => {
      t += ms;
    },
  };
}
