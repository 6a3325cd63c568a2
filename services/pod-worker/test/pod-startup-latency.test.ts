import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergePullWindow, podStartDurations } from '../src/sync/pod-startup-latency.js';

describe('pod start SLI (pod_startup_latency_tracker)', () => {
  it('keeps the earliest pull start and the latest pull end across syncs', () => {
    let w = mergePullWindow({}, {});
    assert.deepEqual(w, {});
    w = mergePullWindow(w, { imagePullStartedAt: 1_000 });
    assert.deepEqual(w, { imagePullStartedAt: 1_000 }, 'a failed pull: start only');
    w = mergePullWindow(w, { imagePullStartedAt: 11_000, imagePullFinishedAt: 14_000 });
    assert.deepEqual(w, { imagePullStartedAt: 1_000, imagePullFinishedAt: 14_000 }, 'the retry after the backoff: first start kept, end taken');
    w = mergePullWindow(w, { imagePullStartedAt: 15_000, imagePullFinishedAt: 13_000 });
    assert.deepEqual(w, { imagePullStartedAt: 1_000, imagePullFinishedAt: 14_000 }, 'never an earlier end or a later start');
    const same = { imagePullStartedAt: 1, imagePullFinishedAt: 2, other: 'x' };
    assert.equal(mergePullWindow(same, {}), same, 'unchanged: the same object');
  });

  it('SLI = (running − created) − (lastFinishedPulling − firstStartedPulling); total keeps the pull', () => {
    const created = 100_000;
    assert.deepEqual(podStartDurations(created, created + 5_000, { imagePullStartedAt: created + 500, imagePullFinishedAt: created + 4_000 }), {
      totalSeconds: 5,
      sliSeconds: 1.5,
    });
    assert.deepEqual(podStartDurations(created, created + 5_000, {}), { totalSeconds: 5, sliSeconds: 5 }, 'no pull');
    assert.deepEqual(
      podStartDurations(created, created + 5_000, { imagePullStartedAt: created + 500 }),
      { totalSeconds: 5, sliSeconds: 5 },
      'no successful pull: nothing excluded',
    );
    assert.deepEqual(
      podStartDurations(created, created + 5_000, { imagePullStartedAt: created + 4_000, imagePullFinishedAt: created + 1_000 }),
      { totalSeconds: 5, sliSeconds: 5 },
      'an end before the start counts as no pull',
    );
    assert.deepEqual(podStartDurations(created, created - 10, {}), { totalSeconds: 0, sliSeconds: 0 }, 'clock skew: never negative');
    assert.deepEqual(podStartDurations(created, created + 1_000, { imagePullStartedAt: created - 5_000, imagePullFinishedAt: created + 900 }), {
      totalSeconds: 1,
      sliSeconds: 0,
    });
  });
});
