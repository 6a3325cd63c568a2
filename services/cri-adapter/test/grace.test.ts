import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseGracePeriod, stopTimeoutSeconds } from '../src/kuberuntime/grace.js';

describe('baseGracePeriod (setTerminationGracePeriod)', () => {
  const container = { name: 'c', livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 5 } };
  it('prefers deletionGracePeriodSeconds', () => {
    assert.equal(baseGracePeriod({ metadata: { deletionGracePeriodSeconds: 7 }, spec: { terminationGracePeriodSeconds: 30 } }, container, 'LivenessProbe'), 7);
  });
  it('uses the probe grace for a liveness kill, the spec otherwise', () => {
    assert.equal(baseGracePeriod({ metadata: {}, spec: { terminationGracePeriodSeconds: 30 } }, container, 'LivenessProbe'), 5);
    assert.equal(baseGracePeriod({ metadata: {}, spec: { terminationGracePeriodSeconds: 30 } }, container, 'Unknown'), 30);
  });
  it('defaults to 30 like the API', () => {
    assert.equal(baseGracePeriod({ metadata: {}, spec: {} }, undefined, ''), 30);
    assert.equal(baseGracePeriod({ metadata: { deletionGracePeriodSeconds: null }, spec: { terminationGracePeriodSeconds: null } }, undefined, ''), 30);
  });
  it('keeps a deletion grace of 0', () => {
    assert.equal(baseGracePeriod({ metadata: { deletionGracePeriodSeconds: 0 }, spec: { terminationGracePeriodSeconds: 30 } }, undefined, ''), 0);
  });
});

describe('stopTimeoutSeconds (killContainer grace steps)', () => {
  const cases: Array<[number, number, number | undefined, number]> = [
    [30, 0, undefined, 30],
    [30, 12, undefined, 18],
    [30, 29, undefined, 2],
    [1, 0, undefined, 2],
    [0, 0, undefined, 2],
    // An override replaces the base, and the 2 s floor still applies after it (killContainer [1.33]).
    [30, 0, 1, 2],
    [30, 0, 0, 2],
    [30, 0, 3, 3],
    [1, 0, 5, 5],
    [30, 4, 5, 2],
  ];
  for (const [base, elapsed, override, want] of cases) {
    it(`base ${base}, preStop ${elapsed}s, override ${String(override)} → ${want}`, () => assert.equal(stopTimeoutSeconds(base, elapsed, override), want));
  }
});
