// Quantities (resource.Quantity), pod requests (resourcehelper.PodRequests) and QoS
// (qos_test.go TestComputePodQOS cases).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container } from '@splitlet/api';
import { getPodQos, isKubeError, milliValue, parseQuantity, podRequests, quantityValue } from '../../src/index.js';
import { aContainer, aPod } from '../../src/testing/index.js';

describe('parseQuantity', () => {
  const millis: Array<[string | number, number]> = [
    ['100m', 100],
    ['0.5', 500],
    [2, 2000],
    ['2', 2000],
    ['1.5', 1500],
    ['250m', 250],
    ['1.0001m', 2],
    ['0', 0],
    ['1k', 1_000_000],
    ['1e-3', 1],
    ['.5', 500],
    ['+1', 1000],
  ];
  for (const [q, want] of millis) it(`cpu ${JSON.stringify(q)} → ${want}m`, () => assert.equal(milliValue(q), want));
  const bytes: Array<[string | number, number]> = [
    ['128Mi', 134_217_728],
    ['1Gi', 1_073_741_824],
    ['1G', 1_000_000_000],
    ['1e3', 1000],
    ['1E3', 1000],
    ['1E', 1e18],
    ['1Ki', 1024],
    ['1k', 1000],
    ['1.5Gi', 1_610_612_736],
    ['1.5', 2],
    ['500m', 1],
    [1024, 1024],
    ['100M', 100_000_000],
    ['1Ti', 1_099_511_627_776],
  ];
  for (const [q, want] of bytes) it(`memory ${JSON.stringify(q)} → ${want}`, () => assert.equal(quantityValue(q), want));
  for (const bad of ['', 'abc', '1.2.3', '1Kb', 'Mi', '1 Mi', '1e', '--1']) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      assert.throws(
        () => parseQuantity(bad),
        (e: unknown) => isKubeError(e, 'InvalidQuantity'),
      );
    });
  }
  it('negative values round away from zero', () => assert.equal(milliValue('-1.0001m'), -2));
});

const res = (requests: Record<string, string>, limits?: Record<string, string>): Partial<Container> => ({
  resources: limits === undefined ? { requests } : { requests, limits },
});

describe('podRequests', () => {
  it('sums regular containers', () => {
    const pod = aPod({ spec: { containers: [aContainer({ name: 'a', ...res({ cpu: '100m', memory: '64Mi' }) }), aContainer({ name: 'b', ...res({ cpu: '200m' }) })] } });
    assert.deepEqual(podRequests(pod), { cpu: 300, memory: 67_108_864 });
  });
  it('the max of sum(containers) and each init container', () => {
    const pod = aPod({
      spec: {
        initContainers: [aContainer({ name: 'i', ...res({ cpu: '1', memory: '1Mi' }) })],
        containers: [aContainer({ name: 'a', ...res({ cpu: '100m', memory: '64Mi' }) })],
      },
    });
    assert.deepEqual(podRequests(pod), { cpu: 1000, memory: 67_108_864 });
  });
  it('sidecars add up, and count for later init containers', () => {
    const pod = aPod({
      spec: {
        initContainers: [
          aContainer({ name: 's1', restartPolicy: 'Always', ...res({ cpu: '100m' }) }),
          aContainer({ name: 'i', ...res({ cpu: '500m' }) }),
          aContainer({ name: 's2', restartPolicy: 'Always', ...res({ cpu: '200m' }) }),
        ],
        containers: [aContainer({ name: 'a', ...res({ cpu: '100m' }) })],
      },
    });
    // regular 100 + sidecars 300 = 400; init "i" needs 500 + s1 100 = 600 → 600
    assert.deepEqual(podRequests(pod), { cpu: 600 });
  });
  it('limits stand in for missing requests; overhead is added', () => {
    const pod = aPod({ spec: { containers: [aContainer({ resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m' } } })] } });
    (pod.spec as Record<string, unknown>)['overhead'] = { cpu: '10m' };
    assert.deepEqual(podRequests(pod), { cpu: 510, memory: 1_073_741_824 });
  });
});

describe('getPodQos (TestComputePodQOS)', () => {
  const g = (cpu: string, mem: string) => ({ resources: { requests: { cpu, memory: mem }, limits: { cpu, memory: mem } } });
  const rows: Array<[string, Partial<Container>[], Partial<Container>[] | undefined, string]> = [
    ['best-effort-orig', [{}], undefined, 'BestEffort'],
    ['best-effort with zero requests', [res({ cpu: '0', memory: '0' })], undefined, 'BestEffort'],
    ['guaranteed', [g('100m', '100Mi'), g('100m', '100Mi')], undefined, 'Guaranteed'],
    ['guaranteed with limits only (requests default to limits)', [{ resources: { limits: { cpu: '1', memory: '1Gi' } } }], undefined, 'Guaranteed'],
    [
      'guaranteed-with-gpu',
      [{ resources: { requests: { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '2' }, limits: { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '2' } } }],
      undefined,
      'Guaranteed',
    ],
    ['best-effort-with-gpu', [{ resources: { requests: { 'nvidia.com/gpu': '2' }, limits: { 'nvidia.com/gpu': '2' } } }], undefined, 'BestEffort'],
    ['burstable requests only', [res({ cpu: '100m' })], undefined, 'Burstable'],
    ['burstable: one container best effort', [g('100m', '100Mi'), {}], undefined, 'Burstable'],
    ['burstable: requests below limits', [{ resources: { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '100Mi' } } }], undefined, 'Burstable'],
    ['burstable: cpu limit only', [{ resources: { limits: { cpu: '1' } } }], undefined, 'Burstable'],
    ['init container counts', [g('100m', '100Mi')], [res({ cpu: '100m' })], 'Burstable'],
    ['guaranteed init container', [g('100m', '100Mi')], [g('100m', '100Mi')], 'Guaranteed'],
  ];
  for (const [name, containers, inits, want] of rows) {
    it(name, () => {
      const spec: Parameters<typeof aPod>[0] = {
        spec: {
          containers: containers.map((c, i) => aContainer({ name: `c${i}`, ...c })),
          ...(inits === undefined ? {} : { initContainers: inits.map((c, i) => aContainer({ name: `i${i}`, ...c })) }),
        },
      };
      assert.equal(getPodQos(aPod(spec)), want);
    });
  }
});
