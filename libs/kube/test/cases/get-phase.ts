// Ports pkg/kubelet/kubelet_pods_test.go: TestPodPhaseWithRestartAlways, …InitContainers,
// …RestartableInitContainers, …AndPodHasRun, TestPodPhaseWithRestartNever, …InitContainers,
// …RestartableInitContainers, TestPodPhaseWithRestartOnFailure (case names kept).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, PodPhase, PodSpec } from '@splitlet/api';
import { getPhase } from '../../src/index.js';
import { aContainer, aRunningStatus as running, aStartedStatus as started, aTerminatedStatus, aWaitingStatus, aWaitingStatusWithLastTermination } from '../../src/testing/index.js';

const waiting = (n: string) => aWaitingStatus(n);
const stopped = (n: string) => aTerminatedStatus(n, 0);
const succeeded = (n: string) => aTerminatedStatus(n, 0);
const failed = (n: string) => aTerminatedStatus(n, -1);
const waitingLastTerm = (n: string) => aWaitingStatusWithLastTermination(n, 0);
const waitingNonZero = (n: string) => aWaitingStatusWithLastTermination(n, -1);

type Row = [name: string, statuses: ContainerStatus[], want: PodPhase, podIsTerminal?: boolean];

function spec(policy: PodSpec['restartPolicy'], init: Array<{ name: string; sidecar?: boolean }> = [], containers = ['containerA', 'containerB']): PodSpec {
  const s: PodSpec = { nodeName: 'machine', restartPolicy: policy, containers: containers.map((name) => aContainer({ name })) };
  if (init.length > 0) s.initContainers = init.map((c) => aContainer(c.sidecar === true ? { name: c.name, restartPolicy: 'Always' } : { name: c.name }));
  return s;
}

function table(title: string, podSpec: PodSpec, rows: Row[], annotations?: Record<string, string>): void {
  describe(title, () => {
    for (const [name, statuses, want, terminal] of rows) {
      it(name, () => {
        const pod = { metadata: annotations === undefined ? {} : { annotations }, spec: podSpec };
        assert.equal(getPhase(pod, statuses, terminal ?? false), want);
      });
    }
  });
}

table('TestPodPhaseWithRestartAlways', spec('Always'), [
  ['waiting', [], 'Pending'],
  ['all running', [running('containerA'), running('containerB')], 'Running'],
  ['all stopped with restart always', [stopped('containerA'), stopped('containerB')], 'Running'],
  ['all succeeded with restart always, but the pod is terminal', [succeeded('containerA'), succeeded('containerB')], 'Succeeded', true],
  ['all stopped with restart always, but the pod is terminal', [succeeded('containerA'), failed('containerB')], 'Failed', true],
  ['mixed state #1 with restart always', [running('containerA'), stopped('containerB')], 'Running'],
  ['mixed state #2 with restart always', [running('containerA')], 'Pending'],
  ['mixed state #3 with restart always', [running('containerA'), waiting('containerB')], 'Pending'],
  ['backoff crashloop container with restart always', [running('containerA'), waitingLastTerm('containerB')], 'Running'],
]);

table(
  'TestPodPhaseWithRestartAlways (static pod stays Running when terminal)',
  spec('Always'),
  [['static pod, all succeeded, terminal', [succeeded('containerA'), succeeded('containerB')], 'Running', true]],
  { 'kubernetes.io/config.source': 'file' },
);

table('TestPodPhaseWithRestartAlwaysInitContainers', spec('Always', [{ name: 'containerX' }]), [
  ['empty, waiting', [], 'Pending'],
  ['init container running', [running('containerX')], 'Pending'],
  ['init container terminated non-zero', [failed('containerX')], 'Pending'],
  ['init container waiting, terminated zero', [waitingLastTerm('containerX')], 'Pending'],
  ['init container waiting, terminated non-zero', [waitingNonZero('containerX')], 'Pending'],
  ['init container waiting, not terminated', [waiting('containerX')], 'Pending'],
  ['init container succeeded', [succeeded('containerX'), running('containerA'), running('containerB')], 'Running'],
]);

table('TestPodPhaseWithRestartAlwaysRestartableInitContainers', spec('Always', [{ name: 'containerX', sidecar: true }]), [
  ['empty, waiting', [], 'Pending'],
  ['restartable init container running', [running('containerX')], 'Pending'],
  ['restartable init container stopped', [stopped('containerX')], 'Pending'],
  ['restartable init container waiting, terminated zero', [waitingLastTerm('containerX')], 'Pending'],
  ['restartable init container waiting, terminated non-zero', [waitingNonZero('containerX')], 'Pending'],
  ['restartable init container waiting, not terminated', [waiting('containerX')], 'Pending'],
  ['restartable init container started, 1/2 regular container running', [started('containerX'), running('containerA')], 'Pending'],
  ['restartable init container started, all regular containers running', [started('containerX'), running('containerA'), running('containerB')], 'Running'],
  ['restartable init container running, all regular containers running', [running('containerX'), running('containerA'), running('containerB')], 'Running'],
  ['restartable init container stopped, all regular containers running', [stopped('containerX'), running('containerA'), running('containerB')], 'Running'],
  ['backoff crashloop restartable init container, all regular containers running', [waitingLastTerm('containerX'), running('containerA'), running('containerB')], 'Running'],
  [
    'all regular containers succeeded and restartable init container failed with restart always, but the pod is terminal',
    [failed('containerX'), succeeded('containerA'), succeeded('containerB')],
    'Succeeded',
    true,
  ],
  [
    'all regular containers succeeded and restartable init container succeeded with restart always, but the pod is terminal',
    [succeeded('containerX'), succeeded('containerA'), succeeded('containerB')],
    'Succeeded',
    true,
  ],
]);

// The first two cases of the Go table ("regular init containers, restartable init container and
// regular container are all running" → Pending) belong to master's getPhase(podHasInitialized); the
// [1.30] rule this port follows (KUBELET.md §6.1) yields Running for them, so only the other two are ported.
table('TestPodPhaseWithRestartAlwaysAndPodHasRun', spec('Always', [{ name: 'containerX' }, { name: 'containerY', sidecar: true }], ['containerA']), [
  [
    'regular init container is succeeded, restartable init container is running, regular containers is stopped',
    [succeeded('containerX'), running('containerY'), stopped('containerA')],
    'Running',
  ],
  [
    'regular init container is succeeded, restartable init container and regular containers are both running',
    [succeeded('containerX'), running('containerY'), running('containerA')],
    'Running',
  ],
]);

table('TestPodPhaseWithRestartNever', spec('Never'), [
  ['waiting', [], 'Pending'],
  ['all running with restart never', [running('containerA'), running('containerB')], 'Running'],
  ['all succeeded with restart never', [succeeded('containerA'), succeeded('containerB')], 'Succeeded'],
  ['all failed with restart never', [failed('containerA'), failed('containerB')], 'Failed'],
  ['mixed state #1 with restart never', [running('containerA'), succeeded('containerB')], 'Running'],
  ['mixed state #2 with restart never', [running('containerA')], 'Pending'],
  ['mixed state #3 with restart never', [running('containerA'), waiting('containerB')], 'Pending'],
]);

table('TestPodPhaseWithRestartNeverInitContainers', spec('Never', [{ name: 'containerX' }]), [
  ['empty, waiting', [], 'Pending'],
  ['init container running', [running('containerX')], 'Pending'],
  ['init container terminated non-zero', [failed('containerX')], 'Failed'],
  ['init container waiting, terminated zero', [waitingLastTerm('containerX')], 'Pending'],
  ['init container waiting, terminated non-zero', [waitingNonZero('containerX')], 'Failed'],
  ['init container waiting, not terminated', [waiting('containerX')], 'Pending'],
  ['init container succeeded', [succeeded('containerX'), running('containerA'), running('containerB')], 'Running'],
]);

table('TestPodPhaseWithRestartNeverRestartableInitContainers', spec('Never', [{ name: 'containerX', sidecar: true }]), [
  ['empty, waiting', [], 'Pending'],
  ['restartable init container running', [running('containerX')], 'Pending'],
  ['restartable init container stopped', [stopped('containerX')], 'Pending'],
  ['restartable init container waiting, terminated zero', [waitingLastTerm('containerX')], 'Pending'],
  ['restartable init container waiting, terminated non-zero', [waitingNonZero('containerX')], 'Pending'],
  ['restartable init container waiting, not terminated', [waiting('containerX')], 'Pending'],
  ['restartable init container started, one main container running', [started('containerX'), running('containerA')], 'Pending'],
  ['restartable init container started, main containers succeeded', [started('containerX'), succeeded('containerA'), succeeded('containerB')], 'Running'],
  ['restartable init container running, main containers succeeded', [running('containerX'), succeeded('containerA'), succeeded('containerB')], 'Running'],
  ['all containers succeeded', [succeeded('containerX'), succeeded('containerA'), succeeded('containerB')], 'Succeeded'],
  ['restartable init container terminated non-zero, main containers succeeded', [failed('containerX'), succeeded('containerA'), succeeded('containerB')], 'Succeeded'],
  ['backoff crashloop restartable init container, main containers succeeded', [waitingLastTerm('containerX'), succeeded('containerA'), succeeded('containerB')], 'Succeeded'],
  [
    'backoff crashloop with non-zero restartable init container, main containers succeeded',
    [waitingNonZero('containerX'), succeeded('containerA'), succeeded('containerB')],
    'Succeeded',
  ],
]);

table('TestPodPhaseWithRestartOnFailure', spec('OnFailure'), [
  ['waiting', [], 'Pending'],
  ['all running with restart onfailure', [running('containerA'), running('containerB')], 'Running'],
  ['all succeeded with restart onfailure', [succeeded('containerA'), succeeded('containerB')], 'Succeeded'],
  ['all failed with restart never', [failed('containerA'), failed('containerB')], 'Running'],
  ['mixed state #1 with restart onfailure', [running('containerA'), succeeded('containerB')], 'Running'],
  ['mixed state #2 with restart onfailure', [running('containerA')], 'Pending'],
  ['mixed state #3 with restart onfailure', [running('containerA'), waiting('containerB')], 'Pending'],
  ['backoff crashloop container with restart onfailure', [running('containerA'), waitingLastTerm('containerB')], 'Running'],
]);
