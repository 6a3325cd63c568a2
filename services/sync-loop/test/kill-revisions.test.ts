/**
 * KillRevisions (src/adapters/kill-revisions.ts): the kill revision sync-loop's pokes name, from
 * its own writes and the sl_kill watch.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KillRevisions } from '../src/adapters/kill-revisions.js';

describe('KillRevisions', () => {
  it('names 0 for a pod with no request known, and the revision of its own write once done', () => {
    const k = new KillRevisions();
    assert.equal(k.revision('a'), 0);
    const t = k.writing('a');
    assert.equal(k.revision('a'), undefined, 'a write in flight: name none');
    k.wrote('a', t, 12);
    assert.equal(k.revision('a'), 12);
  });

  it('a write that lost (Conflict) leaves what was known', () => {
    const k = new KillRevisions();
    k.watched('a', 5, false);
    k.wrote('a', k.writing('a'), undefined);
    assert.equal(k.revision('a'), 5);
  });

  it('a write that may have landed names none until the watch shows a newer revision', () => {
    const k = new KillRevisions();
    k.watched('a', 5, false);
    k.failed('a', k.writing('a'));
    assert.equal(k.revision('a'), undefined);
    k.watched('a', 5, false); // a replay of what was known
    assert.equal(k.revision('a'), undefined);
    k.watched('a', 9, false);
    assert.equal(k.revision('a'), 9);
  });

  it("a pod worker's delete seen by the watch forgets the request, unless a newer write of its own came first", () => {
    const k = new KillRevisions();
    k.wrote('a', k.writing('a'), 5);
    k.watched('a', 5, false);
    k.watched('a', 6, true);
    assert.equal(k.revision('a'), 0);
    k.wrote('a', k.writing('a'), 8); // created again; the watch still delivers an older delete
    k.watched('a', 7, true);
    assert.equal(k.revision('a'), 8);
  });

  it('an earlier write ending after a later one started does not end the later one', () => {
    const k = new KillRevisions();
    const first = k.writing('a');
    const second = k.writing('a');
    k.wrote('a', first, 3);
    assert.equal(k.revision('a'), undefined, 'the second write is still in flight');
    k.wrote('a', second, 4);
    assert.equal(k.revision('a'), 4);
  });
});
