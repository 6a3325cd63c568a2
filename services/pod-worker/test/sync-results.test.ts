import { test } from 'node:test';
import assert from 'node:assert/strict';
import { earliestBackoffExpiry, runtimeSyncError } from '../src/sync/sync-results.ts';

test('backoff-only failures are not errors, and the earliest backoff expiry is where the pod requeues', () => {
  const results = [
    { action: 'StartContainer' as const, target: 'a', error: 'CrashLoopBackOff', message: 'back-off 20s', retryAt: 5000 },
    { action: 'StartContainer' as const, target: 'b', error: 'ImagePullBackOff', message: 'Back-off pulling image', retryAt: 3000 },
    { action: 'StartContainer' as const, target: 'c' },
  ];
  assert.equal(runtimeSyncError(results), undefined);
  assert.equal(earliestBackoffExpiry(results), 3000);
  assert.equal(earliestBackoffExpiry([{ action: 'StartContainer', target: 'x', error: 'RunContainerError', message: 'boom', retryAt: 1 }]), undefined);
  assert.equal(earliestBackoffExpiry([{ action: 'StartContainer', target: 'x', error: 'CrashLoopBackOff', message: 'no expiry' }]), undefined);
});
