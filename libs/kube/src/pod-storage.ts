/**
 * PodConfig's merge of pod sources into one consistent view, emitting incremental updates.
 *
 * Models pkg/kubelet/config/config.go (podStorage.Merge/merge, checkAndUpdatePod,
 * podsDifferSemantically, filterInvalidPods) in PodConfigNotificationIncremental mode, plus
 * config/mux.go (one channel per source).
 *
 * ```
 *  source SET/ADD/UPDATE/DELETE/REMOVE ──► merge ──► REMOVE, ADD, UPDATE, DELETE, (empty ADD), RECONCILE
 * ```
 */
import type { BoundPod } from '@splitlet/api';
import { jsonEqual } from './canonical-json.js';
import { ConfigAnnotations } from './constants.js';
import { formatPod, podFullName } from './pod-full-name.js';
import { rfc3339Nano } from './time-format.js';

/**
 * An operation a source sends (kubetypes.PodOperation minus RECONCILE, which only PodConfig emits).
 *
 * Models pkg/kubelet/types/pod_update.go (PodOperation).
 */
export type SourceOperation = 'SET' | 'ADD' | 'UPDATE' | 'DELETE' | 'REMOVE';

/**
 * An operation PodConfig emits in incremental mode.
 *
 * Models pkg/kubelet/types/pod_update.go (PodOperation).
 */
export type MergedOperation = 'ADD' | 'UPDATE' | 'DELETE' | 'REMOVE' | 'RECONCILE';

/**
 * One emitted kubetypes.PodUpdate. Pods are deep copies: mutating them does not touch the storage.
 *
 * Models pkg/kubelet/types/pod_update.go (PodUpdate).
 */
export interface PodConfigUpdate {
  readonly op: MergedOperation;
  readonly source: string;
  readonly pods: BoundPod[];
}

/**
 * A pod dropped by the merge, with the Warning event the kubelet records for it.
 *
 * Models pkg/kubelet/config/config.go (filterInvalidPods) and pkg/kubelet/events/event.go (FailedValidation).
 */
export interface FailedValidation {
  readonly reason: 'FailedValidation';
  readonly eventType: 'Warning';
  readonly pod: BoundPod;
  readonly message: string;
}

/**
 * The result of one merge: the updates to deliver in order, and the rejected pods.
 *
 * Models pkg/kubelet/config/config.go (what Merge pushes on the updates channel, plus the recorded events).
 */
export interface MergeResult {
  readonly updates: PodConfigUpdate[];
  readonly rejections: FailedValidation[];
}

const LOCAL_ANNOTATIONS: readonly string[] = [ConfigAnnotations.source, ConfigAnnotations.mirror, ConfigAnnotations.seen];

/**
 * The storage's copy of a listed pod: its own pod object and the parts a merge writes (metadata,
 * annotations, with the source's); the rest (spec, status, labels…) is shared with the input, which
 * nobody mutates: the storage only ever replaces those fields, and everything it hands out is a deep copy.
 */
function sourcedCopy(raw: BoundPod, source: string): BoundPod {
  const annotations: Record<string, string> = { ...(raw.metadata.annotations ?? {}), [ConfigAnnotations.source]: source };
  return { ...raw, metadata: { ...raw.metadata, annotations } };
}

/** Stamps a newly added pod with when the node first saw it. */
function markSeen(ref: BoundPod, now: number): void {
  (ref.metadata.annotations as Record<string, string>)[ConfigAnnotations.seen] = rfc3339Nano(now);
}

/** Files a stored pod under the operation its newly listed version calls for (checkAndUpdatePod updates it in place), if any. */
function sortChange(existing: BoundPod, ref: BoundPod, ops: { updates: BoundPod[]; reconciles: BoundPod[]; deletes: BoundPod[] }): void {
  const r = checkAndUpdatePod(existing, ref);
  if (r.needUpdate) ops.updates.push(existing);
  else if (r.needReconcile) ops.reconciles.push(existing);
  else if (r.needGracefulDelete) ops.deletes.push(existing);
}

/**
 * The merged desired pods of every source: map[source]map[uid]pod. Not safe for concurrent use; a
 * caller serialises merges (the kubelet holds `updateLock`). Each merge is synchronous and returns
 * what the kubelet would push on its updates channel, in the same order.
 *
 * Models config.podStorage.
 */
export class PodStorage {
  readonly #pods = new Map<string, Map<string, BoundPod>>();
  readonly #sourcesSeen = new Set<string>();
  /**
   * source → uid → the very object last merged for the pod. Sources hand over immutable pods and
   * keep an unchanged pod's object across listings, so the same object again is the same pod: its
   * merge is skipped (no copy, no comparison). A SET of N pods of which one changed costs one merge.
   */
  readonly #merged = new Map<string, Map<string, BoundPod>>();
  /**
   * source → full name → uid of its stored pods, kept only while the source's last merge stored every
   * pod it listed, in its order, each under its own name (no duplicate name or UID): then the stored
   * pods are that listing, and a change to it can be merged on its own ({@link mergeChanges}).
   */
  readonly #names = new Map<string, Map<string, string>>();

  /**
   * A source's full list (SET): marks the source seen, emits REMOVE for pods it no longer lists, ADD
   * for new UIDs, UPDATE / DELETE / RECONCILE for changed ones, and an empty ADD on the source's first
   * SET when nothing else (ADD, UPDATE, DELETE) was emitted.
   *
   * `now` (ms since the epoch) stamps `kubernetes.io/config.seen` on new pods.
   *
   * Models podStorage.Merge with a SET PodUpdate.
   */
  setSource(source: string, pods: readonly BoundPod[], now: number): MergeResult {
    return this.merge(source, 'SET', pods, now);
  }

  /**
   * Applies one source update. ADD, UPDATE and DELETE are merged the same way (a new UID is an ADD,
   * a known one goes through checkAndUpdatePod); REMOVE deletes the listed UIDs; SET is
   * {@link setSource}. Input pods are never mutated — and must not be mutated by the caller
   * afterwards either: a pod object passed again (the same object) is taken as unchanged, and the
   * stored pod shares the input's nested objects (its spec, status, labels) rather than copying them. `now`
   * (ms since the epoch) stamps `kubernetes.io/config.seen` (RFC3339Nano) on new pods.
   *
   * Models podStorage.Merge / merge.
   */
  merge(source: string, op: SourceOperation, incoming: readonly BoundPod[], now: number): MergeResult {
    const seenBefore = this.#sourcesSeen.has(source);
    const adds: BoundPod[] = [];
    const updates: BoundPod[] = [];
    const deletes: BoundPod[] = [];
    const removes: BoundPod[] = [];
    const reconciles: BoundPod[] = [];
    const rejections: FailedValidation[] = [];

    let pods = this.#pods.get(source) ?? new Map<string, BoundPod>();
    const merged = this.#merged.get(source) ?? new Map<string, BoundPod>();
    this.#merged.set(source, merged);

    // Full name → uid of the pods stored by this merge; a SET without a duplicate keeps it as the source's index.
    const names = new Map<string, string>();
    let clean = true;
    const updatePods = (newPods: readonly BoundPod[], oldPods: Map<string, BoundPod>, into: Map<string, BoundPod>): void => {
      for (const raw of newPods) {
        const fullName = podFullName(raw);
        if (names.has(fullName)) {
          clean = false;
          rejections.push({
            reason: 'FailedValidation',
            eventType: 'Warning',
            pod: structuredClone(raw),
            message: `Error validating pod ${formatPod(raw)} from ${source} due to duplicate pod name ${JSON.stringify(raw.metadata.name)}, ignoring`,
          });
          continue;
        }
        names.set(fullName, raw.metadata.uid);
        if (into.has(raw.metadata.uid) && into !== oldPods) clean = false;
        const stored = oldPods.get(raw.metadata.uid);
        if (stored !== undefined && merged.get(raw.metadata.uid) === raw) {
          // The object merged last time: nothing changed.
          into.set(raw.metadata.uid, stored);
          continue;
        }
        merged.set(raw.metadata.uid, raw);
        const ref = sourcedCopy(raw, source);
        const existing = oldPods.get(ref.metadata.uid);
        if (existing !== undefined) {
          into.set(ref.metadata.uid, existing);
          sortChange(existing, ref, { updates, reconciles, deletes });
          continue;
        }
        markSeen(ref, now);
        into.set(ref.metadata.uid, ref);
        adds.push(ref);
      }
    };

    switch (op) {
      case 'ADD':
      case 'UPDATE':
      case 'DELETE':
        // Merged into the stored pods in place: the SET index no longer describes them.
        this.#names.delete(source);
        updatePods(incoming, pods, pods);
        break;
      case 'REMOVE':
        this.#names.delete(source);
        for (const p of incoming) {
          const existing = pods.get(p.metadata.uid);
          if (existing !== undefined) {
            pods.delete(p.metadata.uid);
            merged.delete(p.metadata.uid);
            removes.push(existing);
          }
        }
        break;
      case 'SET': {
        this.#sourcesSeen.add(source);
        const oldPods = pods;
        pods = new Map<string, BoundPod>();
        updatePods(incoming, oldPods, pods);
        for (const [uid, existing] of oldPods) {
          if (pods.has(uid)) continue;
          merged.delete(uid);
          removes.push(existing);
        }
        if (clean) this.#names.set(source, names);
        else this.#names.delete(source);
        break;
      }
    }
    this.#pods.set(source, pods);

    const firstSet = !seenBefore && this.#sourcesSeen.has(source);
    return { updates: emitted(source, { adds, updates, deletes, removes, reconciles }, firstSet), rejections };
  }

  /**
   * The SET of a source's previous listing with `changes` applied, merged from the changed pods
   * alone: the same updates as {@link setSource} with that whole listing, at a cost of O(changes)
   * instead of O(pods). The listing is the previous one with the pods of `removed` (UIDs) left out,
   * each pod of `upserted` in the place of the stored pod with its UID, or appended (in the given
   * order) when new — and every other pod the same object as before.
   *
   * Returns `undefined`, changing nothing, when the changes alone cannot be sure to give the SET's
   * result — the source has not sent a clean SET (its first, or one with a duplicate name or UID), a
   * removed UID is not stored, a pod changed its name, or a changed pod's name is another pod's:
   * the caller then sends the full listing to {@link setSource}.
   *
   * Models podStorage.Merge with a SET PodUpdate (the kubelet re-checks every pod of the listing;
   * this skips those the source says are unchanged).
   */
  mergeChanges(source: string, changes: { readonly upserted: readonly BoundPod[]; readonly removed: readonly string[] }, now: number): MergeResult | undefined {
    const names = this.#names.get(source);
    const pods = this.#pods.get(source);
    const merged = this.#merged.get(source);
    if (names === undefined || pods === undefined || merged === undefined || !this.#sourcesSeen.has(source)) return undefined;
    if (!this.#changesApplyAlone(names, pods, changes)) return undefined;

    const adds: BoundPod[] = [];
    const updates: BoundPod[] = [];
    const deletes: BoundPod[] = [];
    const removes: BoundPod[] = [];
    const reconciles: BoundPod[] = [];
    for (const uid of inStoredOrder(pods, changes.removed)) {
      const existing = pods.get(uid)!;
      // By the name it was listed with (the stored pod keeps the name it was added with).
      const listed = merged.get(uid);
      if (listed !== undefined) names.delete(podFullName(listed));
      pods.delete(uid);
      merged.delete(uid);
      removes.push(existing);
    }
    // The SET visits the listing in order: stored pods where they were, then the new ones.
    const known = new Map(changes.upserted.filter((p) => pods.has(p.metadata.uid)).map((p) => [p.metadata.uid, p]));
    const ordered = [...inStoredOrder(pods, [...known.keys()]).map((uid) => known.get(uid)!), ...changes.upserted.filter((p) => !known.has(p.metadata.uid))];
    for (const raw of ordered) {
      if (merged.get(raw.metadata.uid) === raw) continue; // the object merged last time: nothing changed
      merged.set(raw.metadata.uid, raw);
      const ref = sourcedCopy(raw, source);
      const existing = pods.get(ref.metadata.uid);
      if (existing !== undefined) {
        sortChange(existing, ref, { updates, reconciles, deletes });
        continue;
      }
      markSeen(ref, now);
      pods.set(ref.metadata.uid, ref);
      names.set(podFullName(ref), ref.metadata.uid);
      adds.push(ref);
    }
    return { updates: emitted(source, { adds, updates, deletes, removes, reconciles }, false), rejections: [] };
  }

  /** True when merging `changes` alone gives what the SET of the whole changed listing gives. */
  #changesApplyAlone(names: Map<string, string>, pods: Map<string, BoundPod>, changes: { readonly upserted: readonly BoundPod[]; readonly removed: readonly string[] }): boolean {
    const removed = new Set(changes.removed);
    if (removed.size !== changes.removed.length) return false;
    for (const uid of removed) if (!pods.has(uid)) return false;
    const uids = new Set<string>();
    const fullNames = new Set<string>();
    for (const p of changes.upserted) {
      const uid = p.metadata.uid;
      const fullName = podFullName(p);
      if (removed.has(uid) || uids.has(uid) || fullNames.has(fullName)) return false;
      uids.add(uid);
      fullNames.add(fullName);
      const holder = names.get(fullName);
      const stored = pods.get(uid);
      // A stored pod keeps its name; a new one takes a free name (or one a removed pod frees).
      if (stored !== undefined ? holder !== uid : holder !== undefined && !removed.has(holder)) return false;
    }
    return true;
  }

  /**
   * True when every listed source has sent at least one SET.
   *
   * Models podStorage.seenSources.
   */
  seenSources(...sources: string[]): boolean {
    return sources.every((s) => this.#sourcesSeen.has(s));
  }

  /** The sources that have sent a SET, in first-seen order. */
  sourcesSeen(): string[] {
    return [...this.#sourcesSeen];
  }

  /**
   * Copies of every stored pod of every source (what `Sync()` sends as a SET from source `*`).
   *
   * Models podStorage.MergedState.
   */
  mergedState(): BoundPod[] {
    const out: BoundPod[] = [];
    for (const pods of this.#pods.values()) for (const p of pods.values()) out.push(structuredClone(p));
    return out;
  }

  /** How many pods a source has stored. */
  count(source: string): number {
    return this.#pods.get(source)?.size ?? 0;
  }

  /** A copy of one stored pod, or `undefined`. */
  get(source: string, uid: string): BoundPod | undefined {
    const p = this.#pods.get(source)?.get(uid);
    return p === undefined ? undefined : structuredClone(p);
  }
}

/** `uids` (all stored in `pods`) in the order of `pods`; without a scan for one or none. */
function inStoredOrder(pods: Map<string, BoundPod>, uids: readonly string[]): readonly string[] {
  if (uids.length <= 1) return uids;
  const wanted = new Set(uids);
  return [...pods.keys()].filter((uid) => wanted.has(uid));
}

/**
 * The updates of one merge, in the kubelet's order: REMOVE, ADD, UPDATE, DELETE, the empty ADD of a
 * source's first SET when it brought nothing else, RECONCILE. Pods are deep copies.
 */
function emitted(
  source: string,
  ops: { adds: BoundPod[]; updates: BoundPod[]; deletes: BoundPod[]; removes: BoundPod[]; reconciles: BoundPod[] },
  firstSet: boolean,
): PodConfigUpdate[] {
  const out: PodConfigUpdate[] = [];
  const emit = (o: MergedOperation, list: BoundPod[]): void => {
    out.push({ op: o, source, pods: list.map((p) => structuredClone(p)) });
  };
  if (ops.removes.length > 0) emit('REMOVE', ops.removes);
  if (ops.adds.length > 0) emit('ADD', ops.adds);
  if (ops.updates.length > 0) emit('UPDATE', ops.updates);
  if (ops.deletes.length > 0) emit('DELETE', ops.deletes);
  if (firstSet && ops.adds.length === 0 && ops.updates.length === 0 && ops.deletes.length === 0) emit('ADD', []);
  if (ops.reconciles.length > 0) emit('RECONCILE', ops.reconciles);
  return out;
}

/**
 * Merges `ref` into `existing` (mutating `existing`) and says what changed:
 * - no semantic difference but a different status → `needReconcile` (status copied);
 * - a semantic difference with a deletionTimestamp → `needGracefulDelete`;
 * - any other semantic difference → `needUpdate`.
 * On a difference, spec, labels, deletionTimestamp, deletionGracePeriodSeconds and status are copied,
 * and annotations are replaced by `ref`'s with the local ones (config.source/mirror/seen) kept from
 * `existing`. `ref` must already carry the source annotation.
 *
 * Models config.checkAndUpdatePod.
 */
export function checkAndUpdatePod(existing: BoundPod, ref: BoundPod): { needUpdate: boolean; needReconcile: boolean; needGracefulDelete: boolean } {
  const result = { needUpdate: false, needReconcile: false, needGracefulDelete: false };
  if (!podsDifferSemantically(existing, ref)) {
    if (!jsonEqual(existing.status ?? {}, ref.status ?? {})) {
      setOrDelete(existing, 'status', ref.status);
      result.needReconcile = true;
    }
    return result;
  }
  const refAnn = (ref.metadata.annotations ??= {});
  const seen = existing.metadata.annotations?.[ConfigAnnotations.seen];
  if (seen !== undefined) refAnn[ConfigAnnotations.seen] = seen;
  else delete refAnn[ConfigAnnotations.seen];

  existing.spec = ref.spec;
  setOrDelete(existing.metadata, 'labels', ref.metadata.labels);
  setOrDelete(existing.metadata, 'deletionTimestamp', ref.metadata.deletionTimestamp);
  setOrDelete(existing.metadata, 'deletionGracePeriodSeconds', ref.metadata.deletionGracePeriodSeconds);
  setOrDelete(existing, 'status', ref.status);
  const annotations: Record<string, string> = { ...refAnn };
  for (const k of LOCAL_ANNOTATIONS) {
    const v = existing.metadata.annotations?.[k];
    if (v !== undefined) annotations[k] = v;
  }
  existing.metadata.annotations = annotations;

  if (ref.metadata.deletionTimestamp !== undefined && ref.metadata.deletionTimestamp !== null) result.needGracefulDelete = true;
  else result.needUpdate = true;
  return result;
}

/**
 * True when the pods differ in spec, labels, deletionTimestamp, deletionGracePeriodSeconds, or
 * annotations other than the local config.source / config.mirror / config.seen. A missing map equals
 * an empty one, and a null timestamp equals a missing one.
 *
 * Models config.podsDifferSemantically / isAnnotationMapEqual.
 */
export function podsDifferSemantically(existing: BoundPod, ref: BoundPod): boolean {
  return !(
    jsonEqual(existing.spec, ref.spec) &&
    jsonEqual(existing.metadata.labels ?? {}, ref.metadata.labels ?? {}) &&
    (existing.metadata.deletionTimestamp ?? null) === (ref.metadata.deletionTimestamp ?? null) &&
    (existing.metadata.deletionGracePeriodSeconds ?? null) === (ref.metadata.deletionGracePeriodSeconds ?? null) &&
    jsonEqual(withoutLocal(existing.metadata.annotations), withoutLocal(ref.metadata.annotations))
  );
}

function withoutLocal(a: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(a ?? {})) if (!LOCAL_ANNOTATIONS.includes(k)) out[k] = v;
  return out;
}

function setOrDelete<T extends object, K extends keyof T>(obj: T, key: K, value: T[K] | undefined): void {
  if (value === undefined) delete obj[key];
  else obj[key] = value;
}
