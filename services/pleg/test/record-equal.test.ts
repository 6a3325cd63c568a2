/**
 * recordEqual must decide exactly as jsonEqual (canonical JSON) does: the relist skips a pod when
 * they say equal, so a disagreement would drop or invent cache writes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonEqual } from '@splitlet/kube';
import { recordEqual } from '../src/pleg/record-equal.js';
import { container, pod, sandbox } from './fakes.js';

function running(): ReturnType<typeof pod> {
  const c = { ...container('c1', 'CONTAINER_RUNNING', 'app'), startedAt: 5, restartCount: 2 };
  return pod('u1', [c], [{ ...sandbox('s1', true), ip: '10.0.0.1', hostNetwork: false }], ['10.0.0.1']);
}

describe('recordEqual', () => {
  const cases: Array<{ name: string; a: unknown; b: unknown }> = [
    { name: 'the same record', a: running(), b: running() },
    { name: 'members in another order', a: { x: 1, y: [1, 2] }, b: { y: [1, 2], x: 1 } },
    { name: 'an undefined member against an absent one', a: { x: 1, y: undefined }, b: { x: 1 } },
    { name: 'an undefined member against null', a: { x: undefined }, b: { x: null } },
    { name: 'an absent member against null', a: {}, b: { x: null } },
    { name: 'an undefined element against null', a: [undefined], b: [null] },
    { name: 'NaN against null', a: { x: Number.NaN }, b: { x: null } },
    { name: 'Infinity against null in an array', a: [Number.POSITIVE_INFINITY], b: [null] },
    { name: '0 against -0', a: { x: 0 }, b: { x: -0 } },
    { name: 'a function member against none', a: { x: 1, f: () => 1 }, b: { x: 1 } },
    { name: 'undefined against null', a: undefined, b: null },
    { name: 'undefined against a record', a: undefined, b: running() },
    { name: 'a number against its string', a: { x: 1 }, b: { x: '1' } },
    { name: 'an empty array against an empty object', a: [], b: {} },
    { name: 'arrays of other lengths', a: [1], b: [1, 2] },
    { name: 'arrays in another order', a: [1, 2], b: [2, 1] },
    { name: 'a Date against its ISO string', a: { t: new Date(0) }, b: { t: new Date(0).toISOString() } },
    { name: 'true against 1', a: true, b: 1 },
  ];
  for (const c of cases) {
    it(`${c.name}: ${jsonEqual(c.a, c.b) ? 'equal' : 'different'}, as jsonEqual says`, () => {
      assert.equal(recordEqual(c.a, c.b), jsonEqual(c.a, c.b));
      assert.equal(recordEqual(c.b, c.a), jsonEqual(c.b, c.a));
    });
  }

  it('tells a pod record from each one-field change of it, as jsonEqual does', () => {
    const changes: Array<(p: ReturnType<typeof running>) => void> = [
      (p) => void (p.ips = []),
      (p) => void (p.name = 'other'),
      (p) => void (p.sandboxes[0]!.state = 'SANDBOX_NOTREADY'),
      (p) => void delete p.sandboxes[0]!.ip,
      (p) => void (p.sandboxes[0]!.additionalIps = []),
      (p) => void (p.containers[0]!.state = 'CONTAINER_EXITED'),
      (p) => void (p.containers[0]!.exitCode = 0),
      (p) => void (p.containers[0]!.restartCount = 3),
      (p) => void (p.containers[0]!.message = ''),
      (p) => void (p.containers[0]!.startedAt = undefined),
      (p) => void p.containers.push(container('c2', 'CONTAINER_CREATED')),
      (p) => void (p.sandboxes = []),
    ];
    for (const [i, change] of changes.entries()) {
      const changed = running();
      change(changed);
      assert.equal(recordEqual(running(), changed), false, `change ${i}`);
      assert.equal(jsonEqual(running(), changed), false, `change ${i}`);
    }
  });
});
