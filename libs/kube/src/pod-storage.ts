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

    const updatePods = (newPods: readonly BoundPod[], oldPods: Map<string, BoundPod>, into: Map<string, BoundPod>): void => {
      const names = new Set<string>();
      for (const raw of newPods) {
        const fullName = podFullName(raw);
        if (names.has(fullName)) {
          rejections.push({
            reason: 'FailedValidation',
            eventType: 'Warning',
            pod: structuredClone(raw),
            message: `Error validating pod ${formatPod(raw)} from ${source} due to duplicate pod name ${JSON.stringify(raw.metadata.name)}, ignoring`,
          });
          continue;
        }
        names.add(fullName);
        const stored = oldPods.get(raw.metadata.uid);
        if (stored !== undefined && merged.get(raw.metadata.uid) === raw) {
          // The object merged last time: nothing changed.
          into.set(raw.metadata.uid, stored);
          continue;
        }
        merged.set(raw.metadata.uid, raw);
        // Own copies of the pod and of the parts a merge writes (metadata, annotations); the rest
        // (spec, status, labels…) is shared with the input, which nobody mutates: the storage only
        // ever replaces those fields, and everything it hands out is a deep copy.
        const annotations: Record<string, string> = { ...(raw.metadata.annotations ?? {}), [ConfigAnnotations.source]: source };
        const ref: BoundPod = { ...raw, metadata: { ...raw.metadata, annotations } };
        const existing = oldPods.get(ref.metadata.uid);
        if (existing !== undefined) {
          into.set(ref.metadata.uid, existing);
          const r = checkAndUpdatePod(existing, ref);
          if (r.needUpdate) updates.push(existing);
          else if (r.needReconcile) reconciles.push(existing);
          else if (r.needGracefulDelete) deletes.push(existing);
          continue;
        }
        annotations[ConfigAnnotations.seen] = rfc3339Nano(now);
        into.set(ref.metadata.uid, ref);
        adds.push(ref);
      }
    };

    switch (op) {
      case 'ADD':
      case 'UPDATE':
      case 'DELETE':
        updatePods(incoming, pods, pods);
        break;
      case 'REMOVE':
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
        break;
      }
    }
    this.#pods.set(source, pods);

    const firstSet = !seenBefore && this.#sourcesSeen.has(source);
    const out: PodConfigUpdate[] = [];
    const emit = (o: MergedOperation, list: BoundPod[]): void => {
      out.push({ op: o, source, pods: list.map((p) => structuredClone(p)) });
    };
    if (removes.length > 0) emit('REMOVE', removes);
    if (adds.length > 0) emit('ADD', adds);
    if (updates.length > 0) emit('UPDATE', updates);
    if (deletes.length > 0) emit('DELETE', deletes);
    if (firstSet && adds.length === 0 && updates.length === 0 && deletes.length === 0) emit('ADD', []);
    if (reconciles.length > 0) emit('RECONCILE', reconciles);
    return { updates: out, rejections };
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

  /** A copy of one stored pod, or `undefined`. */
  get(source: string, uid: string): BoundPod | undefined {
    const p = this.#pods.get(source)?.get(uid);
    return p === undefined ? undefined : structuredClone(p);
  }
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
