import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { aPod } from '@splitlet/kube/testing';
import { combineChanges } from '../src/sources/apiserver-source.js';
import type { ListingChanges, SourcedPod } from '../src/sources/listing.js';

const sourced = (uid: string, image = 'busybox:1.36'): SourcedPod => ({
  pod: aPod({ metadata: { uid, name: uid }, spec: { containers: [{ name: 'c', image }] } }),
  origin: `api:default/${uid}`,
});
const names = (c: ListingChanges | undefined): unknown => c && { upserted: c.upserted.map((p) => `${p.pod.metadata.uid}:${p.pod.spec.containers[0]!.image}`), removed: c.removed };

describe('combineChanges (watch events handed on together)', () => {
  it('unions the pods upserted and removed, a later version of a pod in its place', () => {
    const first: ListingChanges = { upserted: [sourced('a'), sourced('b')], removed: ['x'] };
    const then: ListingChanges = { upserted: [sourced('c'), sourced('a', 'busybox:1.37')], removed: ['y'] };
    assert.deepEqual(names(combineChanges(first, then)), { upserted: ['a:busybox:1.37', 'b:busybox:1.36', 'c:busybox:1.36'], removed: ['x', 'y'] });
  });

  it('no changes on either side gives the other', () => {
    const c: ListingChanges = { upserted: [sourced('a')], removed: [] };
    const none: ListingChanges = { upserted: [], removed: [] };
    assert.equal(combineChanges(c, none), c);
    assert.equal(combineChanges(none, c), c);
  });

  it('a pod both upserted and removed needs the full listing', () => {
    assert.equal(combineChanges({ upserted: [sourced('a')], removed: [] }, { upserted: [], removed: ['a'] }), undefined);
    assert.equal(combineChanges({ upserted: [], removed: ['a'] }, { upserted: [sourced('a')], removed: [] }), undefined);
  });
});
