// Grace periods (pod_workers_test.go TestCalculateEffectiveGracePeriod-style table), requeue delays
// (completeWork), jitter (wait.Jitter), pod names and sources (kubetypes), time formats.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  KubeletPeriods,
  buildPodFullName,
  calculateEffectiveGracePeriod,
  formatGoDuration,
  formatPod,
  isCriticalPod,
  isMirrorPod,
  isStaticPod,
  jitter,
  parsePodFullName,
  podFullName,
  podSource,
  requeueDelay,
  rfc3339,
  rfc3339Nano,
} from '../../src/index.js';
import { aPod, seededRandom } from '../../src/testing/index.js';

describe('calculateEffectiveGracePeriod', () => {
  const pod = (deletion: number | null, spec: number | null) => ({
    metadata: { deletionGracePeriodSeconds: deletion },
    spec: { terminationGracePeriodSeconds: spec },
  });
  const rows: Array<[string, number, ReturnType<typeof pod>, number | undefined, number, boolean]> = [
    ['spec grace when nothing else', 0, pod(null, 30), undefined, 30, false],
    ['deletion grace overrides spec', 0, pod(10, 30), undefined, 10, true],
    ['override shorter than deletion grace', 0, pod(10, 30), 5, 5, true],
    ['override longer than deletion grace is ignored', 0, pod(10, 30), 20, 10, true],
    ['never grows: current 5, deletion 10', 5, pod(10, 30), undefined, 5, false],
    ['current kept when nothing shorter', 7, pod(null, 30), undefined, 7, false],
    ['shrinks: current 30, override 1', 30, pod(null, 30), 1, 1, true],
    ['floor of 1 second for a zero deletion grace', 0, pod(0, 30), undefined, 1, true],
    ['floor of 1 second for a zero spec grace', 0, pod(null, 0), undefined, 1, false],
    ['floor of 1 second with no grace anywhere', 0, pod(null, null), undefined, 1, false],
    ['override 0 → 1', 0, pod(null, 30), 0, 1, true],
  ];
  for (const [name, current, p, override, want, overridden] of rows) {
    it(name, () => assert.deepEqual(calculateEffectiveGracePeriod({ current, pod: p, override }), { gracePeriod: want, overridden }));
  }
});

describe('jitter / requeueDelay', () => {
  it('jitter(d, f) = d + r·f·d; f ≤ 0 means 1', () => {
    assert.equal(
      jitter(1000, 0.5, () => 0.5),
      1250,
    );
    assert.equal(
      jitter(1000, 0, () => 0.5),
      1500,
    );
    assert.equal(
      jitter(1000, 0.5, () => 0),
      1000,
    );
  });
  it('phase transition → 0', () =>
    assert.equal(
      requeueDelay({ phaseTransition: true }, () => 0.9),
      0,
    ));
  it('success → 60–90 s', () => {
    assert.equal(
      requeueDelay({}, () => 0),
      60_000,
    );
    assert.equal(
      requeueDelay({}, () => 0.999999),
      60_000 + 0.999999 * 30_000,
    );
  });
  it('"network is not ready" → 1–1.5 s', () =>
    assert.equal(
      requeueDelay({ error: 'network is not ready: cni plugin not initialized' }, () => 1),
      1500,
    ));
  it('other error → 10–15 s', () =>
    assert.equal(
      requeueDelay({ error: 'boom' }, () => 0.5),
      12_500,
    ));
  it('seeded random stays in range', () => {
    const r = seededRandom(42);
    for (let i = 0; i < 100; i++) {
      const d = requeueDelay({}, r);
      assert.ok(d >= 60_000 && d < 90_000);
    }
  });
  it('constants', () => {
    assert.equal(KubeletPeriods.resyncIntervalMs, 60_000);
    assert.equal(KubeletPeriods.backOffPeriodMs, 10_000);
    assert.equal(KubeletPeriods.networkNotReadyBackOffMs, 1_000);
    assert.equal(KubeletPeriods.housekeepingPeriodMs, 2_000);
    assert.equal(KubeletPeriods.plegRelistPeriodMs, 1_000);
    assert.equal(KubeletPeriods.plegRelistThresholdMs, 180_000);
    assert.equal(KubeletPeriods.statusSyncPeriodMs, 10_000);
    assert.equal(KubeletPeriods.syncLoopTickMs, 1_000);
  });
});

describe('pod names and sources', () => {
  it('podFullName / formatPod / parsePodFullName', () => {
    const pod = aPod({ metadata: { name: 'web', namespace: 'prod', uid: 'u1' } });
    assert.equal(podFullName(pod), 'web_prod');
    assert.equal(buildPodFullName('web', 'prod'), 'web_prod');
    assert.equal(formatPod(pod), 'web_prod(u1)');
    assert.deepEqual(parsePodFullName('web_prod'), { name: 'web', namespace: 'prod' });
    assert.throws(() => parsePodFullName('web'), /failed to parse the pod full name "web"/);
    assert.throws(() => parsePodFullName('a_b_c'));
  });
  it('static, mirror and critical pods', () => {
    const ann = (a: Record<string, string>) => aPod({ metadata: { annotations: a } });
    assert.equal(isStaticPod(ann({ 'kubernetes.io/config.source': 'file' })), true);
    assert.equal(isStaticPod(ann({ 'kubernetes.io/config.source': 'http' })), true);
    assert.equal(isStaticPod(ann({ 'kubernetes.io/config.source': 'api' })), false);
    assert.equal(isStaticPod(aPod()), false);
    assert.equal(podSource(ann({ 'kubernetes.io/config.source': 'api' })), 'api');
    assert.equal(isMirrorPod(ann({ 'kubernetes.io/config.mirror': 'abc' })), true);
    assert.equal(isMirrorPod(aPod()), false);
    assert.equal(isCriticalPod(ann({ 'kubernetes.io/config.source': 'file' })), true);
    assert.equal(isCriticalPod(aPod({ spec: { priority: 2_000_001_000 } })), true);
    assert.equal(isCriticalPod(aPod()), false);
  });
});

describe('time formats', () => {
  it('rfc3339 truncates to seconds; rfc3339Nano trims zeros', () => {
    const t = Date.parse('2024-05-01T10:00:00.120Z');
    assert.equal(rfc3339(t), '2024-05-01T10:00:00Z');
    assert.equal(rfc3339Nano(t), '2024-05-01T10:00:00.12Z');
    assert.equal(rfc3339Nano(Date.parse('2024-05-01T10:00:00Z')), '2024-05-01T10:00:00Z');
  });
  const durations: Array<[number, string]> = [
    [0, '0s'],
    [10_000, '10s'],
    [80_000, '1m20s'],
    [160_000, '2m40s'],
    [300_000, '5m0s'],
    [3_600_000, '1h0m0s'],
    [500, '500ms'],
    [1_500, '1.5s'],
  ];
  for (const [ms, want] of durations) it(`formatGoDuration(${ms}) = ${want}`, () => assert.equal(formatGoDuration(ms), want));
});
