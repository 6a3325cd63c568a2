// Static pod defaulting and validation: pkg/kubelet/config/common.go (applyDefaults,
// tryDecodeSinglePod) and common_test.go behaviours.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '@splitlet/api';
import {
  ConfigAnnotations,
  applyPodApiDefaults,
  applyStaticPodDefaults,
  defaultPullPolicy,
  fnv1a128Hex,
  fnv1a32,
  formatInvalidPod,
  prepareStaticPod,
  staticPodUid,
  validatePod,
} from '../../src/index.js';
import { aContainer } from '../../src/testing/index.js';

const manifest = (): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'test' },
  spec: { containers: [aContainer({ name: 'image', image: 'test/image' })] },
});
const FILE = { kind: 'file', path: '/etc/kubernetes/manifests/test.yaml' } as const;

describe('fnv', () => {
  it('FNV-1a 128 test vectors', () => {
    assert.equal(fnv1a128Hex(''), '6c62272e07bb014262b821756295c58d');
    assert.equal(fnv1a128Hex('a'), 'd228cb696f1a8caf78912b704e4a8964');
    assert.equal(fnv1a128Hex('fo', 'obar'), fnv1a128Hex('foobar'));
  });
  it('FNV-1a 32 test vectors', () => {
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
    assert.equal(fnv1a32('foobar'), 0xbf9cf968);
  });
});

describe('applyStaticPodDefaults (applyDefaults)', () => {
  it('defaults name, namespace, nodeName, uid, annotations, toleration, phase', () => {
    const pod = applyStaticPodDefaults(manifest(), 'Node-A', FILE);
    assert.equal(pod.metadata.name, 'test-node-a');
    assert.equal(pod.metadata.namespace, 'default');
    assert.equal(pod.spec.nodeName, 'Node-A');
    assert.match(pod.metadata.uid, /^[0-9a-f]{32}$/);
    assert.equal(pod.metadata.annotations?.[ConfigAnnotations.hash], pod.metadata.uid);
    assert.equal(pod.metadata.annotations?.[ConfigAnnotations.source], 'file');
    assert.deepEqual(pod.spec.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
    assert.equal(pod.status?.phase, 'Pending');
  });
  it('UID = fnv128a(pod, host:<node>, file:<path>) and is stable across key order', () => {
    const m = manifest();
    const uid = staticPodUid(m, 'node', FILE);
    const reordered = { spec: m.spec, metadata: m.metadata, kind: m.kind, apiVersion: m.apiVersion } as Pod;
    assert.equal(staticPodUid(reordered, 'node', FILE), uid);
    assert.notEqual(staticPodUid(m, 'node2', FILE), uid);
    assert.notEqual(staticPodUid(m, 'node', { kind: 'file', path: '/other' }), uid);
    const changed = manifest();
    changed.spec.containers[0]!.image = 'test/image:2';
    assert.notEqual(staticPodUid(changed, 'node', FILE), uid);
    assert.equal(applyStaticPodDefaults(m, 'node', FILE).metadata.uid, uid);
  });
  it('http sources hash url:<url> and add no toleration', () => {
    const pod = applyStaticPodDefaults(manifest(), 'node', { kind: 'http', url: 'http://x/pods' });
    assert.notEqual(pod.metadata.uid, staticPodUid(manifest(), 'node', FILE));
    assert.equal(pod.spec.tolerations, undefined);
    assert.equal(pod.metadata.annotations?.[ConfigAnnotations.source], 'http');
  });
  it('keeps a given UID and namespace, does not duplicate the toleration, leaves the input alone', () => {
    const m = manifest();
    m.metadata.uid = 'given';
    m.metadata.namespace = 'kube-system';
    m.spec.tolerations = [{ operator: 'Exists', effect: 'NoExecute' }];
    const pod = applyStaticPodDefaults(m, 'node', FILE);
    assert.equal(pod.metadata.uid, 'given');
    assert.equal(pod.metadata.annotations?.[ConfigAnnotations.hash], 'given');
    assert.equal(pod.metadata.namespace, 'kube-system');
    assert.equal(pod.spec.tolerations?.length, 1);
    assert.equal(m.metadata.name, 'test');
  });
});

describe('applyPodApiDefaults', () => {
  it('fills the v1 defaults the pod path reads', () => {
    const m = manifest();
    m.spec.hostNetwork = true;
    m.spec.containers[0]!.ports = [{ containerPort: 8080 }];
    m.spec.containers[0]!.resources = { limits: { cpu: '1' } };
    m.spec.volumes = [{ name: 'scratch' }];
    const p = applyPodApiDefaults(m);
    assert.equal(p.spec.restartPolicy, 'Always');
    assert.equal(p.spec.terminationGracePeriodSeconds, 30);
    assert.equal(p.spec.dnsPolicy, 'ClusterFirst');
    const c = p.spec.containers[0]!;
    assert.equal(c.imagePullPolicy, 'Always');
    assert.equal(c.terminationMessagePath, '/dev/termination-log');
    assert.equal(c.terminationMessagePolicy, 'File');
    assert.deepEqual(c.ports, [{ containerPort: 8080, protocol: 'TCP', hostPort: 8080 }]);
    assert.deepEqual(c.resources?.requests, { cpu: '1' });
    assert.deepEqual(p.spec.volumes, [{ name: 'scratch', emptyDir: {} }]);
    assert.equal(m.spec.restartPolicy, undefined);
  });
  const pulls: Array<[string, string]> = [
    ['busybox', 'Always'],
    ['busybox:latest', 'Always'],
    ['busybox:1.36', 'IfNotPresent'],
    ['registry:5000/busybox', 'Always'],
    ['registry:5000/busybox:1', 'IfNotPresent'],
    ['busybox@sha256:abcd', 'IfNotPresent'],
  ];
  for (const [image, want] of pulls) it(`imagePullPolicy for ${image} → ${want}`, () => assert.equal(defaultPullPolicy(image), want));
});

describe('validatePod / prepareStaticPod', () => {
  it('a missing name fails before defaulting', () => {
    const m = manifest();
    delete m.metadata.name;
    const r = prepareStaticPod(m, 'node', FILE);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.message, 'invalid pod: name is needed for the pod');
  });
  it('a valid manifest is bound', () => {
    const r = prepareStaticPod(manifest(), 'node', FILE);
    assert.equal(r.ok, true);
    assert.equal(r.ok && r.pod.metadata.name, 'test-node');
    assert.equal(r.ok && r.pod.spec.restartPolicy, 'Always');
  });
  const cases: Array<[string, (p: Pod) => void, string[]]> = [
    [
      'name not a DNS subdomain',
      (p) => (p.metadata.name = 'Bad_Name'),
      [
        "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ],
    ],
    [
      'namespace not a DNS label',
      (p) => (p.metadata.namespace = 'a.b'),
      [
        "metadata.namespace: Invalid value: \"a.b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      ],
    ],
    ['no containers', (p) => (p.spec.containers = []), ['spec.containers: Required value']],
    [
      'duplicate container names (init vs regular too)',
      (p) => {
        p.spec.containers.push(aContainer({ name: 'image' }));
        p.spec.initContainers = [aContainer({ name: 'image' })];
      },
      ['spec.containers[1].name: Duplicate value: "image"', 'spec.initContainers[0].name: Duplicate value: "image"'],
    ],
    ['image required', (p) => delete p.spec.containers[0]!.image, ['spec.containers[0].image: Required value']],
    [
      'duplicate volume names',
      (p) =>
        (p.spec.volumes = [
          { name: 'v', emptyDir: {} },
          { name: 'v', emptyDir: {} },
        ]),
      ['spec.volumes[1].name: Duplicate value: "v"'],
    ],
    [
      'volumeMount of an undefined volume',
      (p) => (p.spec.containers[0]!.volumeMounts = [{ name: 'missing', mountPath: '/data' }]),
      ['spec.containers[0].volumeMounts[0].name: Not found: "missing"'],
    ],
    [
      'negative terminationGracePeriodSeconds',
      (p) => (p.spec.terminationGracePeriodSeconds = -1),
      ['spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0'],
    ],
    [
      'unsupported restartPolicy',
      (p) => ((p.spec as Record<string, unknown>)['restartPolicy'] = 'Sometimes'),
      ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'],
    ],
  ];
  for (const [name, mutate, want] of cases) {
    it(name, () => {
      const m = applyPodApiDefaults(manifest());
      m.metadata.namespace = 'default';
      mutate(m);
      const errs = validatePod(m);
      assert.deepEqual(
        errs.map((e) => `${e.field}`),
        want.map((w) => w.slice(0, w.indexOf(':'))),
      );
      assert.equal(formatInvalidPod(errs), `invalid pod: [${want.join(' ')}]`);
    });
  }
  it('prepareStaticPod reports every error in one message', () => {
    const m = manifest();
    m.spec.containers.push(aContainer({ name: 'image' }));
    m.spec.activeDeadlineSeconds = 0;
    const r = prepareStaticPod(m, 'node', FILE);
    assert.equal(
      !r.ok && r.message,
      'invalid pod: [spec.containers[1].name: Duplicate value: "image" spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive]',
    );
  });
  it('prepareStaticPod runs a negative terminationGracePeriodSeconds as 1 s (decoding since 1.27), not refused', () => {
    const m = manifest();
    m.spec.terminationGracePeriodSeconds = -5;
    const r = prepareStaticPod(m, 'node', FILE);
    assert.ok(r.ok, !r.ok ? r.message : '');
    assert.equal(r.pod.spec.terminationGracePeriodSeconds, 1);
    assert.equal(m.spec.terminationGracePeriodSeconds, -5, 'the input is not changed');
    const zero = manifest();
    zero.spec.terminationGracePeriodSeconds = 0;
    assert.equal(applyPodApiDefaults(zero).spec.terminationGracePeriodSeconds, 0, '0 stays 0');
  });
});

describe('bound static pods are valid bus payloads', () => {
  it('parse with the @splitlet/api BoundPod schema', async () => {
    const { BoundPod } = await import('@splitlet/api');
    const r = prepareStaticPod(manifest(), 'node', FILE);
    assert.ok(r.ok);
    BoundPod.parse(r.pod);
  });
});
