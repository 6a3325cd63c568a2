// Admission: pkg/kubelet/lifecycle/predicate_test.go (TestRejectPodAdmissionBasedOnOSSelector/Field,
// TestGeneralPredicates) and pkg/scheduler noderesources Fits ordering; kubelet.go rejectPod.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BoundPod, Container } from '@splitlet/api';
import { canAdmitPod, rejectedPodStatus, sortPodsByCreationTime } from '../../src/index.js';
import { aContainer, aNode, aPod } from '../../src/testing/index.js';

const withRequests = (name: string, requests: Record<string, string>, extra: Partial<Container> = {}): BoundPod =>
  aPod({ metadata: { name, uid: name }, spec: { containers: [aContainer({ resources: { requests }, ...extra })] } });

describe('canAdmitPod', () => {
  const node = aNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '3', 'ephemeral-storage': '10Gi', 'example.com/foo': '2' } });
  const rows: Array<[string, BoundPod[], BoundPod, { reason: string; message: string } | null]> = [
    ['fits', [], withRequests('p', { cpu: '500m', memory: '512Mi' }), null],
    ['best-effort pod fits', [withRequests('a', { cpu: '1' })], aPod(), null],
    [
      'too many pods',
      [aPod({ metadata: { uid: '1' } }), aPod({ metadata: { uid: '2' } }), aPod({ metadata: { uid: '3' } })],
      aPod(),
      { reason: 'OutOfpods', message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" },
    ],
    [
      'not enough cpu',
      [withRequests('a', { cpu: '600m' })],
      withRequests('p', { cpu: '500m' }),
      { reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000" },
    ],
    [
      'not enough memory',
      [withRequests('a', { memory: '768Mi' })],
      withRequests('p', { memory: '512Mi' }),
      { reason: 'OutOfmemory', message: "Node didn't have enough resource: memory, requested: 536870912, used: 805306368, capacity: 1073741824" },
    ],
    [
      'not enough ephemeral-storage',
      [],
      withRequests('p', { 'ephemeral-storage': '11Gi' }),
      { reason: 'OutOfephemeral-storage', message: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240" },
    ],
    [
      'pods count is checked before cpu',
      [withRequests('a', { cpu: '1' }), aPod({ metadata: { uid: '2' } }), aPod({ metadata: { uid: '3' } })],
      withRequests('p', { cpu: '1' }),
      { reason: 'OutOfpods', message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" },
    ],
    [
      'cpu is checked before memory',
      [],
      withRequests('p', { cpu: '2', memory: '2Gi' }),
      { reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000" },
    ],
    [
      'extended resource',
      [withRequests('a', { 'example.com/foo': '2' })],
      withRequests('p', { 'example.com/foo': '1' }),
      { reason: 'OutOfexample.com/foo', message: "Node didn't have enough resource: example.com/foo, requested: 1, used: 2, capacity: 2" },
    ],
    ['an extended resource the node does not know is ignored', [], withRequests('p', { 'other.com/bar': '5' }), null],
    [
      'node selector mismatch',
      [],
      aPod({ spec: { nodeSelector: { disk: 'ssd' } } }),
      { reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" },
    ],
    [
      'node name mismatch',
      [],
      aPod({ spec: { nodeName: 'other-node' } }),
      { reason: 'NodeName', message: "Predicate NodeName failed: node(s) didn't match the requested node name" },
    ],
    [
      'host port conflict',
      [aPod({ metadata: { uid: 'a' }, spec: { containers: [aContainer({ ports: [{ containerPort: 80, hostPort: 8080 }] })] } })],
      aPod({ spec: { containers: [aContainer({ ports: [{ containerPort: 81, hostPort: 8080, protocol: 'TCP' }] })] } }),
      { reason: 'NodePorts', message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" },
    ],
    [
      'same host port on another protocol is free',
      [aPod({ metadata: { uid: 'a' }, spec: { containers: [aContainer({ ports: [{ containerPort: 80, hostPort: 8080 }] })] } })],
      aPod({ spec: { containers: [aContainer({ ports: [{ containerPort: 81, hostPort: 8080, protocol: 'UDP' }] })] } }),
      null,
    ],
    [
      'same host port on distinct host IPs is free',
      [aPod({ metadata: { uid: 'a' }, spec: { containers: [aContainer({ ports: [{ containerPort: 80, hostPort: 8080, hostIP: '10.0.0.1' }] })] } })],
      aPod({ spec: { containers: [aContainer({ ports: [{ containerPort: 81, hostPort: 8080, hostIP: '10.0.0.2' }] })] } }),
      null,
    ],
    [
      'resources fail before predicates',
      [],
      aPod({ spec: { nodeName: 'other', containers: [aContainer({ resources: { requests: { cpu: '5' } } })] } }),
      { reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 1000" },
    ],
    [
      'OS field not supported',
      [],
      aPod({ spec: { os: { name: 'windows' } } }),
      { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" },
    ],
    [
      'OS label mismatch comes first',
      [],
      aPod({ metadata: { labels: { 'kubernetes.io/os': 'windows' } }, spec: { os: { name: 'windows' }, containers: [aContainer({ resources: { requests: { cpu: '9' } } })] } }),
      { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" },
    ],
  ];
  for (const [name, existing, pod, want] of rows) {
    it(name, () => assert.deepEqual(canAdmitPod(node, existing, pod), want === null ? { admit: true } : { admit: false, ...want }));
  }

  describe('required node affinity', () => {
    const n = aNode({ labels: { zone: 'a', size: '10', 'kubernetes.io/os': 'linux' } });
    const withTerms = (terms: unknown[]) => aPod({ spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } } });
    const rows2: Array<[string, unknown[], boolean]> = [
      ['In matches', [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }], true],
      ['NotIn excludes', [{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }], false],
      ['Exists', [{ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }], true],
      ['DoesNotExist', [{ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }], true],
      ['Gt', [{ matchExpressions: [{ key: 'size', operator: 'Gt', values: ['5'] }] }], true],
      ['Lt', [{ matchExpressions: [{ key: 'size', operator: 'Lt', values: ['5'] }] }], false],
      [
        'terms are ORed',
        [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['x'] }] }, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }],
        true,
      ],
      ['an empty term matches nothing', [{}], false],
    ];
    for (const [name, terms, admit] of rows2) it(name, () => assert.equal(canAdmitPod(n, [], withTerms(terms)).admit, admit));
  });

  describe('NoExecute taints', () => {
    const tainted = aNode({
      taints: [
        { key: 'dedicated', value: 'infra', effect: 'NoExecute' },
        { key: 'other', effect: 'NoSchedule' },
      ],
    });
    it('an untolerated NoExecute taint rejects an API pod', () =>
      assert.deepEqual(canAdmitPod(tainted, [], aPod()), {
        admit: false,
        reason: 'TaintToleration',
        message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
      }));
    it('a toleration admits it', () =>
      assert.equal(canAdmitPod(tainted, [], aPod({ spec: { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoExecute' }] } })).admit, true));
    it('static pods skip the taint check', () =>
      assert.equal(canAdmitPod(tainted, [], aPod({ metadata: { annotations: { 'kubernetes.io/config.source': 'file' } } })).admit, true));
  });

  it('parses the requests of an existing pod once, however many admissions weigh it; an unparsable one fails each of them alike', () => {
    let reads = 0;
    const counted = (p: BoundPod): BoundPod => {
      const containers = p.spec.containers;
      Object.defineProperty(p.spec, 'containers', { get: () => (reads++, containers), enumerable: true });
      return p;
    };
    const existing = [counted(withRequests('a', { cpu: '300m' })), counted(withRequests('b', { cpu: '300m' }))];
    for (let i = 0; i < 5; i++) assert.deepEqual(canAdmitPod(node, existing, withRequests(`p${i}`, { cpu: '300m' })), { admit: true });
    assert.equal(reads, 2, 'each existing pod read once over five admissions');
    assert.deepEqual(canAdmitPod(node, existing, withRequests('big', { cpu: '500m' })), {
      admit: false,
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    });
    const bad = withRequests('bad', { cpu: 'lots' });
    const messages = [0, 1].map(() => {
      try {
        canAdmitPod(node, [bad], withRequests('q', { cpu: '1m' }));
        return 'admitted';
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
    });
    assert.match(messages[0]!, /lots/);
    assert.equal(messages[1], messages[0]);
  });
});

describe('rejectedPodStatus', () => {
  it('is Failed with "Pod was rejected: " and the QoS class', () => {
    const pod = withRequests('p', { cpu: '1' });
    assert.deepEqual(rejectedPodStatus(pod, 'OutOfcpu', "Node didn't have enough resource: cpu, requested: 1000, used: 0, capacity: 500"), {
      qosClass: 'Burstable',
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 0, capacity: 500",
    });
  });
});

describe('sortPodsByCreationTime', () => {
  it('oldest first, missing timestamps first, stable', () => {
    const p = (uid: string, ts?: string) => aPod({ metadata: ts === undefined ? { uid } : { uid, creationTimestamp: ts } });
    const sorted = sortPodsByCreationTime([
      p('c', '2024-01-03T00:00:00Z'),
      p('a', '2024-01-01T00:00:00Z'),
      p('none'),
      p('b1', '2024-01-02T00:00:00Z'),
      p('b2', '2024-01-02T00:00:00Z'),
    ]);
    assert.deepEqual(
      sorted.map((x) => x.metadata.uid),
      ['none', 'a', 'b1', 'b2', 'c'],
    );
  });
});
