/**
 * Which config sources have been seen: housekeeping and deletions wait until all have.
 *
 * Models pkg/kubelet/config/sources.go (SourcesReady: AddSource, AllReady) fed by syncLoopIteration.
 */
import type { PodSource } from '@splitlet/api';
import type { SourcesSnapshot } from '../ports.js';

/** The set of sources seen so far, against the list config-source says it runs. */
export class SourcesReady {
  #sources: PodSource[] = [];
  #known = false;
  readonly #seen = new Set<PodSource>();

  /** Starts from a persisted snapshot (so a restarted sync-loop need not wait for every source again). */
  constructor(snapshot?: SourcesSnapshot) {
    if (snapshot !== undefined) {
      this.#sources = [...snapshot.sources];
      this.#known = true;
      for (const s of snapshot.seen) this.#seen.add(s);
    }
  }

  /**
   * Records an update from `source` while config-source runs `sources`. Returns true when the
   * snapshot changed (so it is worth persisting).
   */
  observe(source: PodSource, sources: readonly PodSource[]): boolean {
    let changed = !this.#known || sources.length !== this.#sources.length || sources.some((s, i) => s !== this.#sources[i]);
    this.#known = true;
    this.#sources = [...sources];
    if (!this.#seen.has(source)) {
      this.#seen.add(source);
      changed = true;
    }
    return changed;
  }

  /** True once every source config-source runs has sent at least one update. */
  allReady(): boolean {
    return this.#known && this.#sources.every((s) => this.#seen.has(s));
  }

  snapshot(): SourcesSnapshot {
    return { sources: [...this.#sources], seen: [...this.#seen].sort() };
  }
}
