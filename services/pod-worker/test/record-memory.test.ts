/**
 * DesiredMemory (src/sync/desired-memory.ts): when a sync may use the desired record it read
 * before, given the revisions sync-loop's pokes named since.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DesiredPod } from '@splitlet/api';
import { aPod } from '@splitlet/kube/testing';
import { RecordMemory } from '../src/sync/record-memory.js';

const UID = 'u1';
const record = (revision: number): { value: DesiredPod; revision: number } => ({
  value: { type: 'kubelet.podworker.DesiredPod.v1', pod: aPod(), updateType: 'create', startTime: '2026-01-01T00:00:00Z' },
  revision,
});

/** Reads `value` into `m` as a sync would: the read starts, then returns. */
function readInto(m: RecordMemory<DesiredPod>, value: ReturnType<typeof record> | null, at = 0): void {
  m.read(UID, value, m.reading(UID), at);
}

describe('RecordMemory', () => {
  it('knows nothing until a read', () => {
    const m = new RecordMemory<DesiredPod>();
    assert.equal(m.get(UID, 0), undefined);
    m.poked(UID, 3);
    assert.equal(m.get(UID, 0), undefined);
  });

  it('serves a read record while pokes name its revision or less, and not once one names more', () => {
    const m = new RecordMemory<DesiredPod>();
    m.poked(UID, 5);
    const r = record(5);
    readInto(m, r);
    assert.equal(m.get(UID, 1)?.revision, 5);
    m.poked(UID, 4); // a redelivered older poke
    m.poked(UID, 5);
    assert.equal(m.get(UID, 1), r);
    m.poked(UID, 6);
    assert.equal(m.get(UID, 1), undefined);
    readInto(m, record(6));
    assert.equal(m.get(UID, 1)?.revision, 6);
  });

  it('a poke naming no revision makes the next sync read, also when it came while a read was on its way', () => {
    const m = new RecordMemory<DesiredPod>();
    readInto(m, record(2));
    m.poked(UID, undefined);
    assert.equal(m.get(UID, 0), undefined);
    const reading = m.reading(UID);
    m.poked(UID, undefined); // after the read started: the read may not have seen what it announces
    m.read(UID, record(2), reading, 0);
    assert.equal(m.get(UID, 0), undefined, 'the second poke is not answered by the read that started before it');
    readInto(m, record(2));
    assert.equal(m.get(UID, 0)?.revision, 2);
  });

  it('a failed read (read never called) leaves the next sync reading', () => {
    const m = new RecordMemory<DesiredPod>();
    readInto(m, record(2));
    m.poked(UID, undefined);
    m.reading(UID); // the GET rejects: no read()
    assert.equal(m.get(UID, 0), undefined);
  });

  it('an absent record is served as absent until a poke names a newer revision than the pokes before the read', () => {
    const m = new RecordMemory<DesiredPod>();
    m.poked(UID, 7);
    m.poked(UID, undefined); // sync-loop deleted it
    readInto(m, null);
    assert.equal(m.get(UID, 0), null);
    m.poked(UID, 7); // a poke sent before the delete, delivered late
    assert.equal(m.get(UID, 0), null);
    m.poked(UID, 9); // the pod desired again
    assert.equal(m.get(UID, 0), undefined);
  });

  it('serves a record for at most its maximum age', () => {
    const m = new RecordMemory<DesiredPod>(1000);
    readInto(m, record(1), 500);
    assert.equal(m.get(UID, 1500)?.revision, 1);
    assert.equal(m.get(UID, 1501), undefined);
  });

  it('forgets a pod on request', () => {
    const m = new RecordMemory<DesiredPod>();
    readInto(m, record(1));
    m.poked(UID, 1);
    assert.equal(m.size, 1);
    m.forget(UID);
    assert.equal(m.get(UID, 0), undefined);
    assert.equal(m.size, 0);
  });

  it('freezes what it keeps, so one sync cannot change what the next is served', () => {
    const m = new RecordMemory<DesiredPod>();
    readInto(m, record(1));
    const served = m.get(UID, 0);
    assert.ok(served);
    assert.throws(() => {
      (served.value.pod.metadata as { name: string }).name = 'changed';
    }, TypeError);
  });
});
