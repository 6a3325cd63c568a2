/** `splitlet logs`: which run's log file a container status points at (validateContainerLogStatus). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus } from '@splitlet/api';
import { logAttempt } from '../src/commands/logs.js';

const terminated = { exitCode: 1, reason: 'Error', containerID: 'containerd://abc' };

function status(o: Partial<ContainerStatus>): ContainerStatus {
  return { name: 'main', ready: false, restartCount: 0, image: 'busybox:1.36', imageID: '', ...o };
}

describe('logAttempt', () => {
  const cases: Array<{ name: string; st: ContainerStatus | undefined; current: number; previous: number }> = [
    { name: 'no status yet: nothing to read for --previous', st: undefined, current: 0, previous: -1 },
    { name: 'first run, running: no previous run', st: status({ state: { running: {} } }), current: 0, previous: -1 },
    {
      name: 'running after 3 restarts: the previous run is the one before',
      st: status({ restartCount: 3, state: { running: {} }, lastState: { terminated } }),
      current: 3,
      previous: 2,
    },
    {
      name: 'terminated after a restart (OnFailure succeeded the second time): the first run',
      st: status({ restartCount: 1, state: { terminated: { exitCode: 0, reason: 'Completed' } }, lastState: { terminated } }),
      current: 1,
      previous: 0,
    },
    {
      name: 'CrashLoopBackOff after 3 restarts: the newest container is the last terminated one',
      st: status({ restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated } }),
      current: 3,
      previous: 3,
    },
    { name: 'waiting to start the first time: no previous run', st: status({ state: { waiting: { reason: 'ContainerCreating' } } }), current: 0, previous: -1 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(logAttempt(c.st, false), c.current, 'current');
      assert.equal(logAttempt(c.st, true), c.previous, 'previous');
    });
  }
});
