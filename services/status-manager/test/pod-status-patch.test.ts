/**
 * The pod status patch (PatchPodStatus's two-way strategic merge patch) and the terminal-phase guard.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { neverRegressTerminal, podStatusPatch } from '../src/api/pod-status-patch.js';

describe('podStatusPatch', () => {
  it('is undefined for equal statuses', () => {
    assert.equal(
      podStatusPatch('u1', { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }),
      undefined,
    );
  });

  it('carries the uid precondition, changed fields, null for removed ones', () => {
    assert.deepEqual(podStatusPatch('u1', { phase: 'Pending', message: 'x' }, { phase: 'Running' }), { metadata: { uid: 'u1' }, status: { phase: 'Running', message: null } });
  });

  it('merges conditions by type with $setElementOrder, changed fields only, $patch delete for removed', () => {
    const before = [
      { type: 'Initialized', status: 'True', lastTransitionTime: 't0' },
      { type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: 't0' },
      { type: 'Gone', status: 'True' },
    ];
    const after = [
      { type: 'Initialized', status: 'True', lastTransitionTime: 't0' },
      { type: 'Ready', status: 'True', lastTransitionTime: 't1' },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: 't1' },
    ];
    assert.deepEqual(podStatusPatch('u1', { conditions: before }, { conditions: after }), {
      metadata: { uid: 'u1' },
      status: {
        '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }, { type: 'ContainersReady' }],
        conditions: [
          { type: 'Ready', status: 'True', reason: null, lastTransitionTime: 't1' },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: 't1' },
          { type: 'Gone', $patch: 'delete' },
        ],
      },
    });
  });

  it('replaces container statuses (no merge key)', () => {
    const cs = [{ name: 'a', restartCount: 1 }];
    assert.deepEqual(podStatusPatch('u1', { containerStatuses: [{ name: 'a', restartCount: 0 }] }, { containerStatuses: cs }), {
      metadata: { uid: 'u1' },
      status: { containerStatuses: cs },
    });
  });
});

describe('neverRegressTerminal', () => {
  it('keeps a terminal API phase with its reason and message', () => {
    assert.deepEqual(neverRegressTerminal({ phase: 'Failed', reason: 'Evicted' }, { phase: 'Running', message: 'm', podIP: '1.2.3.4' }), {
      phase: 'Failed',
      reason: 'Evicted',
      podIP: '1.2.3.4',
    });
  });

  it('passes a non-terminal API phase or a terminal computed phase through', () => {
    assert.deepEqual(neverRegressTerminal({ phase: 'Running' }, { phase: 'Pending' }), { phase: 'Pending' });
    assert.deepEqual(neverRegressTerminal({ phase: 'Failed' }, { phase: 'Succeeded' }), { phase: 'Succeeded' });
  });
});
