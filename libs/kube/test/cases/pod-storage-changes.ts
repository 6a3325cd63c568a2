// PodStorage.mergeChanges against setSource: over random sequences of a source's listings (pods
// added, changed, deleted, renamed, re-created under a name, relisted), merging only the changes
// gives exactly what merging each whole listing gives.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BoundPod } from '@splitlet/api';
import { PodStorage, type MergeResult } from '../../src/index.js';
import { aContainer, aPod, seededRandom } from '../../src/testing/index.js';

const SOURCE = 'api';
const NOW = Date.parse('2024-05-01T10:00:00.123Z');

interface Changes {
  upserted: BoundPod[];
  removed: string[];
}

/**
 * A source keyed like the apiserver source (namespace/name, in insertion order), whose every step
 * yields its new full listing and, when the step can be described that way, its changes.
 */
class RandomSource {
  readonly #pods = new Map<string, BoundPod>();
  #uid = 0;
  constructor(readonly rnd: () => number) {}

  listing(): BoundPod[] {
    return [...this.#pods.values()];
  }

  step(): Changes | undefined {
    const r = this.rnd();
    const keys = [...this.#pods.keys()];
    const pick = (): string | undefined => keys[Math.floor(this.rnd() * keys.length)];
    if (r < 0.3 || keys.length === 0) return this.#put(this.#newPod(this.#name()));
    if (r < 0.7) {
      const key = pick()!;
      return this.#put(this.#changed(this.#pods.get(key)!));
    }
    if (r < 0.85) {
      const key = pick()!;
      const uid = this.#pods.get(key)!.metadata.uid;
      this.#pods.delete(key);
      return { upserted: [], removed: [uid] };
    }
    if (r < 0.9) {
      // A new UID under a name already listed: only a full SET (the apiserver source sends one).
      const key = pick()!;
      const { name, namespace } = this.#pods.get(key)!.metadata;
      this.#pods.set(key, this.#newPod(name, namespace));
      return undefined;
    }
    if (r < 0.95) {
      // A stored pod listed under another name (a key of its own): a duplicate UID, or a rename when the old key goes.
      const key = pick()!;
      const p = structuredClone(this.#pods.get(key)!);
      p.metadata.name = `${this.#name()}r`;
      if (this.rnd() < 0.5) this.#pods.delete(key);
      return this.#put(p);
    }
    // A relist: every pod a new object.
    for (const [k, p] of this.#pods) this.#pods.set(k, structuredClone(p));
    return undefined;
  }

  #put(p: BoundPod): Changes | undefined {
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    const before = this.#pods.get(key);
    this.#pods.set(key, p);
    return before === undefined || before.metadata.uid === p.metadata.uid ? { upserted: [p], removed: [] } : undefined;
  }

  /** Names from a small pool, some ending in `_x` (see #newPod). */
  #name(): string {
    return `p${Math.floor(this.rnd() * 12)}${this.rnd() < 0.1 ? '_x' : ''}`;
  }

  #newPod(name: string, namespace?: string): BoundPod {
    // `p1_x` in `ns` and `p1` in `x_ns` have the same full name `p1_x_ns`: one of them is rejected.
    const split = namespace === undefined && name.endsWith('_x') && this.rnd() < 0.5;
    return aPod({
      metadata: { uid: `uid-${++this.#uid}`, name: split ? name.slice(0, -2) : name, namespace: namespace ?? (split ? 'x_ns' : 'ns') },
      spec: { restartPolicy: 'Always', containers: [aContainer({ name: 'c', image: 'img:1' })] },
    });
  }

  /** A new object for the pod: the same, a new status, new labels, a new image, or a deletionTimestamp. */
  #changed(pod: BoundPod): BoundPod {
    const p = structuredClone(pod);
    const r = this.rnd();
    if (r < 0.2) return p;
    if (r < 0.45) p.status = { ...(p.status ?? {}), phase: this.rnd() < 0.5 ? 'Running' : 'Pending' };
    else if (r < 0.65) p.metadata.labels = { v: String(Math.floor(this.rnd() * 3)) };
    else if (r < 0.85) p.spec.containers = [aContainer({ name: 'c', image: `img:${Math.floor(this.rnd() * 3)}` })];
    else p.metadata = { ...p.metadata, deletionTimestamp: '2024-05-01T10:00:30Z', deletionGracePeriodSeconds: 30 };
    return p;
  }
}

describe('PodStorage.mergeChanges', () => {
  it('gives the same updates and rejections as a SET of the whole listing, over random sequences', () => {
    let incremental = 0;
    let rejections = 0;
    let steps = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const rnd = seededRandom(seed);
      const source = new RandomSource(rnd);
      const full = new PodStorage();
      const inc = new PodStorage();
      const first = source.listing();
      assert.deepEqual(inc.setSource(SOURCE, first, NOW), full.setSource(SOURCE, first, NOW));
      for (let i = 0; i < 60; i++, steps++) {
        const changes = source.step();
        const listing = source.listing();
        const now = NOW + i;
        const want: MergeResult = full.setSource(SOURCE, listing, now);
        let got = changes === undefined ? undefined : inc.mergeChanges(SOURCE, changes, now);
        if (got === undefined) got = inc.setSource(SOURCE, listing, now);
        else incremental++;
        assert.deepEqual(got, want, `seed ${seed}, step ${i}`);
        rejections += want.rejections.length;
        assert.deepEqual(inc.mergedState(), full.mergedState(), `seed ${seed}, step ${i}: stored pods`);
      }
    }
    // Most steps are merged from their changes alone (the rest fall back to a SET).
    assert.ok(incremental > steps / 2, `${incremental} of ${steps} steps incremental`);
    assert.ok(rejections > 0, 'the sequences include duplicate full names');
  });

  it('declines (changing nothing) before a first SET, after a SET with a duplicate name, and for a removed pod it does not hold', () => {
    const s = new PodStorage();
    const a = aPod({ metadata: { uid: 'a', name: 'a', namespace: 'ns' } });
    const dup = aPod({ metadata: { uid: 'b', name: 'a', namespace: 'ns' } });
    assert.equal(s.mergeChanges(SOURCE, { upserted: [a], removed: [] }, NOW), undefined);
    assert.equal(s.seenSources(SOURCE), false);
    assert.equal(s.setSource(SOURCE, [a, dup], NOW).rejections.length, 1);
    assert.equal(s.mergeChanges(SOURCE, { upserted: [], removed: [] }, NOW), undefined);
    s.setSource(SOURCE, [a], NOW);
    assert.equal(s.mergeChanges(SOURCE, { upserted: [], removed: ['nope'] }, NOW), undefined);
    assert.equal(s.mergeChanges(SOURCE, { upserted: [dup], removed: [] }, NOW), undefined);
    assert.deepEqual(
      s.mergeChanges(SOURCE, { upserted: [dup], removed: ['a'] }, NOW)?.updates.map((u) => [u.op, u.pods.map((p) => p.metadata.uid)]),
      [
        ['REMOVE', ['a']],
        ['ADD', ['b']],
      ],
    );
  });
});
