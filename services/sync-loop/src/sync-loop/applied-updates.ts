/**
 * The config updates the sync loop has applied: per publisher (a config-source process), the last
 * `PodUpdate.origin.seq`. SL_CONFIG delivers one update at a time in publish order, so an update at or
 * below that number was applied already and is a replay: nats-server killed with -9 forgets the acks
 * of up to a minute and delivers the stream again from an older ack floor. Applied again, a replayed
 * ADD would turn a pod back to an older spec (its containers restarted twice) or bring back a pod
 * removed since.
 *
 * What is skipped must be a prefix of the stream: a replay that applied an older publisher's ADD but
 * skipped the newer publisher's REMOVE of that pod would bring the pod back for good. A restarted loop
 * knows a publisher from the desired records it wrote, which a newer publisher may have rewritten or
 * removed since; so when a new publisher's first update comes, the loop marks the earlier ones done
 * and persists that (`sl_node`) before it applies the update. Publishers take turns (config-source
 * runs once per node), so every update of those earlier ones precedes it; one still sent by an older
 * config-source after a newer one started (two running during a rollout) is skipped, the newer one
 * publishing the same pods.
 *
 * The kubelet has no such check: its config channel is in memory and never replays.
 */
import type { DesiredPod, UpdateOrigin } from '@splitlet/api';

/** Publishers remembered: one per config-source start, the oldest forgotten first. */
export const REMEMBERED_PUBLISHERS = 64;

/** The mark of a publisher all of whose updates were applied (a newer one has started since). */
export const ALL_APPLIED = Number.MAX_SAFE_INTEGER;

/** A publisher and the last `seq` applied from it. */
export type AppliedMark = readonly [publisher: string, seq: number];

/** The last applied update's `seq` per publisher. Single-threaded use (the sync loop, under its lock). */
export class AppliedUpdates {
  readonly #last = new Map<string, number>();

  /**
   * Rebuilt when the loop starts, from the persisted marks of earlier publishers (`persisted`, oldest
   * first) and then from `sl_desired`: each record names the update that wrote it. The latest of a
   * publisher may have been cut off after its record was written (a killed leader: its poke not sent
   * yet), so it counts as not applied and is handled again when it comes; every earlier one was done,
   * updates being handled one at a time.
   */
  static fromDesired(pods: Iterable<DesiredPod>, persisted: Iterable<AppliedMark> = []): AppliedUpdates {
    const applied = new AppliedUpdates();
    for (const [publisher, seq] of persisted) applied.record({ publisher, seq });
    for (const d of pods) if (d.configOrigin !== undefined) applied.record({ publisher: d.configOrigin.publisher, seq: d.configOrigin.seq - 1 });
    return applied;
  }

  /** The last seq applied from `publisher`, if known. */
  last(publisher: string): number | undefined {
    return this.#last.get(publisher);
  }

  /** True when an update from this origin was applied already. */
  isReplay(origin: UpdateOrigin): boolean {
    const last = this.#last.get(origin.publisher);
    return last !== undefined && origin.seq <= last;
  }

  /**
   * Before the first update of a new `publisher` is applied: every update of the publishers known
   * so far was applied, so each is marked done with all its updates ({@link ALL_APPLIED}), and the
   * marks to persist are returned (oldest first). Undefined when `publisher` is known already or no
   * other is.
   *
   * All, not the last seq known: a loop that started since knows a publisher's latest update only
   * from its records and counts it as maybe cut off; by now it was applied (SL_CONFIG hands out this
   * update only after every earlier one was acknowledged, and an update is acknowledged once applied).
   */
  closeEarlier(publisher: string): AppliedMark[] | undefined {
    if (this.#last.size === 0 || this.#last.has(publisher)) return undefined;
    for (const p of this.#last.keys()) this.#last.set(p, ALL_APPLIED);
    return [...this.#last];
  }

  /** Records an applied update. */
  record(origin: UpdateOrigin): void {
    const last = this.#last.get(origin.publisher);
    if (last !== undefined) {
      if (origin.seq > last) this.#last.set(origin.publisher, origin.seq);
      return;
    }
    this.#last.set(origin.publisher, origin.seq);
    if (this.#last.size > REMEMBERED_PUBLISHERS) this.#last.delete(this.#last.keys().next().value as string);
  }
}
