import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeCapacity, NodeRuntimeStatus } from '@splitlet/api';
import { NODE_RECORD_STALE_MS, nodeConditions } from '../src/api/node-reporter.js';

const res = { cpu: '2', memory: '4Gi', 'ephemeral-storage': '10Gi', pods: '110' };
const at = Date.parse('2026-01-01T00:00:00Z');
const record = (pressure?: NodeCapacity['pressure']): NodeCapacity => ({
  type: 'kubelet.node.NodeCapacity.v1',
  node: 'node-a',
  capacity: res,
  allocatable: res,
  observedAt: new Date(at).toISOString(),
  ...(pressure === undefined ? {} : { pressure }),
});

describe('nodeConditions', () => {
  it("no pressure, a fresh record: the kubelet's healthy conditions, verbatim", () => {
    assert.deepEqual(nodeConditions(record({ memory: false, disk: false, pid: false }), at + 5000), [
      { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
      { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
      { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
      { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' },
    ]);
  });

  it("each pressure flag turns its condition True with the kubelet's reason and message", () => {
    const c = nodeConditions(record({ memory: true, disk: true, pid: true }), at);
    assert.deepEqual(
      c.map((x) => [x.type, x.status, x.reason, x.message]),
      [
        ['MemoryPressure', 'True', 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available'],
        ['DiskPressure', 'True', 'KubeletHasDiskPressure', 'kubelet has disk pressure'],
        ['PIDPressure', 'True', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
        ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
      ],
    );
  });

  it('a record older than a minute (the node stopped measuring): Ready False, KubeletNotReady', () => {
    assert.equal(nodeConditions(record(), at + NODE_RECORD_STALE_MS).at(-1)?.status, 'True');
    const ready = nodeConditions(record(), at + NODE_RECORD_STALE_MS + 1).at(-1);
    assert.deepEqual([ready?.status, ready?.reason], ['False', 'KubeletNotReady']);
    assert.equal(ready?.message, 'node status not measured since 2026-01-01T00:00:00.000Z: volume-manager on node-a is not running');
  });

  it("the container runtime down or unreported for a minute: Ready False with the kubelet's runtime error; both problems aggregated", () => {
    const runtime = (ready: boolean, observedAt: number, message = ''): NodeRuntimeStatus => ({
      type: 'kubelet.node.RuntimeStatus.v1',
      node: 'node-a',
      ready,
      message,
      observedAt: new Date(observedAt).toISOString(),
    });
    assert.equal(nodeConditions(record(), at, runtime(true, at)).at(-1)?.status, 'True');
    const down = nodeConditions(record(), at, runtime(false, at, 'container runtime is down: connect ECONNREFUSED /run/containerd.sock')).at(-1);
    assert.deepEqual([down?.status, down?.reason, down?.message], ['False', 'KubeletNotReady', 'container runtime is down: connect ECONNREFUSED /run/containerd.sock']);
    const silent = nodeConditions(record(), at + NODE_RECORD_STALE_MS, runtime(true, at - 1)).at(-1);
    assert.equal(silent?.message, 'container runtime status check may not have completed yet: not reported by cri-adapter on node-a since 2025-12-31T23:59:59.999Z');
    const both = nodeConditions(record(), at + NODE_RECORD_STALE_MS + 1, runtime(false, at + NODE_RECORD_STALE_MS, 'container runtime is down: x')).at(-1);
    assert.equal(both?.message, '[container runtime is down: x, node status not measured since 2026-01-01T00:00:00.000Z: volume-manager on node-a is not running]');
  });
});
