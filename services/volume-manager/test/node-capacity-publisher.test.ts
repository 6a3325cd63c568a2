import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeCapacity } from '@splitlet/api';
import { FakeClock } from '@splitlet/service/testing';
import { NodeCapacityPublisher } from '../src/node/node-capacity-publisher.js';
import { memoryLogger } from './fakes.js';

function setup(overrides: { cpu?: string; memory?: string; ephemeralStorage?: string } = {}) {
  const host = { cpus: 4, memory: 8 * 1024 ** 3, disk: 100 * 1024 ** 3 };
  const written: NodeCapacity[] = [];
  const statted: string[] = [];
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const publisher = new NodeCapacityPublisher({
    node: 'node-a',
    rootDir: '/var/lib/kubelet',
    maxPods: 110,
    overrides,
    probe: {
      cpuCount: () => host.cpus,
      memoryBytes: () => host.memory,
      filesystemBytes: (path) => {
        statted.push(path);
        return Promise.resolve(host.disk);
      },
    },
    store: { put: (c) => Promise.resolve(void written.push(c)) },
    clock,
    logger: memoryLogger().logger,
  });
  return { host, written, statted, publisher, clock };
}

describe('NodeCapacityPublisher', () => {
  it('publishes what the node has; allocatable is the capacity unless configured lower', async () => {
    const { written, statted, publisher } = setup({ cpu: '3500m' });
    await publisher.publish();
    assert.deepEqual(statted, ['/var/lib/kubelet'], 'ephemeral storage is the kubelet root directory filesystem');
    assert.deepEqual(written, [
      {
        type: 'kubelet.node.NodeCapacity.v1',
        node: 'node-a',
        capacity: { cpu: '4', memory: String(8 * 1024 ** 3), 'ephemeral-storage': String(100 * 1024 ** 3), pods: '110' },
        allocatable: { cpu: '3500m', memory: String(8 * 1024 ** 3), 'ephemeral-storage': String(100 * 1024 ** 3), pods: '110' },
        observedAt: '2026-01-01T00:00:00.000Z',
      },
    ]);
  });

  it('writes again only when the node changed', async () => {
    const { host, written, publisher } = setup();
    await publisher.publish();
    await publisher.publish();
    assert.equal(written.length, 1);
    host.memory = 16 * 1024 ** 3;
    await publisher.publish();
    assert.equal(written.length, 2);
    assert.equal(written[1]?.allocatable.memory, String(16 * 1024 ** 3));
  });

  it('measures again every period until aborted', async () => {
    const { host, written, publisher, clock } = setup();
    await publisher.publish();
    const ac = new AbortController();
    const running = publisher.run(ac.signal);
    host.cpus = 8;
    await clock.advanceAsync(10_000);
    assert.equal(written.at(-1)?.capacity.cpu, '8');
    ac.abort();
    await running;
  });
});
