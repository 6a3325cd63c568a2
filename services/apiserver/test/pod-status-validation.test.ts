/**
 * pods/status validation (ValidatePodStatusUpdate and the terminal-phase rule) and the status
 * strategy's prepare step.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { preparePodStatusForUpdate, validatePodStatusUpdate } from '../src/registry/pod-strategy.js';
import type { KubeObject } from '../src/storage/object-store.js';

const pod = (restartPolicy: string, status: Record<string, unknown>): KubeObject => ({ metadata: { name: 'p' }, spec: { restartPolicy, containers: [{ name: 'c' }] }, status });
const running = { name: 'c', state: { running: { startedAt: '2026-01-01T00:00:00Z' } } };
const exited = (exitCode: number): Record<string, unknown> => ({ name: 'c', state: { terminated: { exitCode } } });
const fields = (next: KubeObject, old: KubeObject): string[] => validatePodStatusUpdate(next, old).map((c) => `${c.field}: ${c.message}`);

describe('validatePodStatusUpdate', () => {
  it('keeps a terminal phase terminal', () => {
    for (const from of ['Succeeded', 'Failed']) {
      for (const to of ['Running', 'Pending', 'Unknown', '']) {
        assert.deepEqual(fields(pod('Always', { phase: to }), pod('Always', { phase: from })), [
          `status.phase: Forbidden: may not be changed from terminal phase "${from}" to "${to}"`,
        ]);
      }
      assert.deepEqual(fields(pod('Always', { phase: from, message: 'x' }), pod('Always', { phase: from })), []);
    }
    assert.deepEqual(fields(pod('Always', { phase: 'Failed' }), pod('Always', { phase: 'Running' })), []);
    assert.deepEqual(fields(pod('Always', { phase: 'Running' }), pod('Always', { phase: 'Pending' })), []);
  });

  it('keeps a terminated container terminated unless the restart policy restarts it', () => {
    const forbidden = ['status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state'];
    assert.deepEqual(fields(pod('Never', { containerStatuses: [running] }), pod('Never', { containerStatuses: [exited(1)] })), forbidden);
    assert.deepEqual(fields(pod('OnFailure', { containerStatuses: [running] }), pod('OnFailure', { containerStatuses: [exited(0)] })), forbidden);
    assert.deepEqual(fields(pod('OnFailure', { containerStatuses: [running] }), pod('OnFailure', { containerStatuses: [exited(2)] })), []);
    assert.deepEqual(fields(pod('Always', { containerStatuses: [running] }), pod('Always', { containerStatuses: [exited(0)] })), []);
    assert.deepEqual(fields(pod('Never', { containerStatuses: [exited(1)] }), pod('Never', { containerStatuses: [exited(1)] })), []);
  });

  it('checks pod and host IPs and condition types', () => {
    assert.deepEqual(
      fields(pod('Always', { podIP: '10.1.2.3', podIPs: [{ ip: '10.1.2.3' }, { ip: 'fd00::1' }], hostIP: '192.168.1.2', hostIPs: [{ ip: '192.168.1.2' }] }), pod('Always', {})),
      [],
    );
    assert.deepEqual(fields(pod('Always', { podIP: 'nope' }), pod('Always', {})), [
      'status.podIP: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ]);
    assert.deepEqual(fields(pod('Always', { podIPs: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }] }), pod('Always', {})), [
      'status.podIPs: Invalid value: [{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]: may specify no more than one IP for each IP family',
    ]);
    assert.deepEqual(fields(pod('Always', { hostIPs: [{ ip: '1.2.3' }] }), pod('Always', {})), [
      'status.hostIPs[0].ip: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ]);
    assert.deepEqual(fields(pod('Always', { conditions: [{ status: 'True' }] }), pod('Always', {})), ['status.conditions[0].Type: Invalid value: "": name part must be non-empty']);
  });
});

describe('preparePodStatusForUpdate', () => {
  it('takes only the status, and keeps the qosClass set at create when the status has none', () => {
    const old = { metadata: { name: 'p', labels: { a: '1' } }, spec: { nodeName: 'n' }, status: { phase: 'Pending', qosClass: 'Burstable' } } as KubeObject;
    const next = { metadata: { name: 'p', labels: { a: '2' } }, spec: { nodeName: 'other' }, status: { phase: 'Running' } } as KubeObject;
    assert.deepEqual(preparePodStatusForUpdate(next, old), {
      metadata: { name: 'p', labels: { a: '1' } },
      spec: { nodeName: 'n' },
      status: { phase: 'Running', qosClass: 'Burstable' },
    });
    assert.equal((preparePodStatusForUpdate({ status: { qosClass: 'Guaranteed' } }, old)['status'] as { qosClass: string }).qosClass, 'Guaranteed');
  });
});
