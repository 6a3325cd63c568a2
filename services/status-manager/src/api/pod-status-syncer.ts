/**
 * Reports the cached pod statuses to the API server (cluster mode).
 *
 * Models the status manager's send loop (pkg/kubelet/status/status_manager.go syncBatch / syncPod /
 * canBeDeleted): a written status whose version is newer than the one last sent is patched as soon
 * as the client's rate limit (kubeAPIQPS) lets it; every 10 s (syncPeriod) the cached pods that need it are reconciled (needsUpdate /
 * needsReconcile against the watched API copy of the node's pods, see {@link reconcileReason}). Per pod: GET the
 * pod (404 or another UID → its API state is dropped), keep a terminal API phase, strategic-merge
 * patch `pods/status` with a `metadata.uid` precondition unless nothing changed, then — once the pod
 * has a deletionTimestamp, a terminal phase and its worker finished — DELETE it with grace 0 and a UID
 * precondition. A static pod's status goes to its mirror pod (created when missing, replaced when
 * outdated, deleted with the static pod's status).
 *
 * One departure from the kubelet, with the same result: where the syncer knows a version of the pod
 * (the answer to its last GET or PATCH of it, else the watched copy) it patches against that version
 * with its resourceVersion as a precondition instead of GETting the pod first; the API server refuses
 * the patch if the pod changed since (409), and only then is the pod read. A pod's status syncs
 * cost one request instead of two.
 */
import type { PodStatusRecord } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { ConfigAnnotations, isStaticPod } from '@splitlet/kube';
import type { Logger } from '@splitlet/telemetry';
import { kubeError, STRATEGIC_MERGE_PATCH, type KubeRest } from './kube-rest.js';
import { podPath, staticPodHash, type ApiPod, type MirrorPods } from './mirror-pods.js';
import type { ApiPodCopy } from './node-pods.js';
import { isTerminalPhase, neverRegressTerminal, podStatusPatch } from './pod-status-patch.js';

/** What one sync did. */
export type PodSyncOutcome = 'no-mirror' | 'current' | 'not-found' | 'uid-mismatch' | 'patched' | 'unchanged' | 'deleted';

/** The status manager's sync period (syncPeriod). */
export const STATUS_SYNC_PERIOD_MS = 10_000;

/** Why a periodic resync syncs a pod (GET + PATCH), undefined when the API copy already has its status. */
export type ReconcileReason = 'not-sent' | 'newer' | 'no-api-copy' | 'deletion-pending' | 'mirror-outdated' | 'status-differs';

/**
 * Whether the periodic resync must sync `record` (syncBatch(true): needsUpdate || needsReconcile).
 * `sentVersion` is the version last sent (apiStatusVersions); `apiPod` the watched API copy of the
 * pod — of its mirror pod for a static pod — undefined when not known. A pod the copy does not have
 * (or has with another UID) is synced so its GET tells whether it is gone, or its mirror pod is
 * created again; a pod being deleted so it is deleted once finished (a mirror pod: replaced); a
 * mirror pod of another version of the static pod so it is replaced. Otherwise it is synced only
 * when the patch the sync would send is not empty.
 */
export function reconcileReason(record: PodStatusRecord, sentVersion: number | undefined, apiPod: ApiPod | undefined): ReconcileReason | undefined {
  if (sentVersion === undefined) return 'not-sent';
  if (record.version > sentVersion) return 'newer';
  const isStatic = isStaticPod(record.pod);
  if (apiPod === undefined || (!isStatic && apiPod.metadata.uid !== record.uid)) return 'no-api-copy';
  if (apiPod.metadata.deletionTimestamp !== undefined) return 'deletion-pending';
  if (isStatic && apiPod.metadata.annotations?.[ConfigAnnotations.mirror] !== staticPodHash(record.pod)) return 'mirror-outdated';
  const apiStatus = apiPod.status ?? {};
  if (podStatusPatch(apiPod.metadata.uid, apiStatus, neverRegressTerminal(apiStatus, record.status)) !== undefined) return 'status-differs';
  return undefined;
}

/** A sync of one pod waiting for the one in flight: it sends the newest record asked for meanwhile. */
interface QueuedSync {
  record: PodStatusRecord;
  force: boolean;
  readonly run: Promise<PodSyncOutcome>;
}

/**
 * Sends pod statuses to the API server. One sync per pod at a time; the syncs asked for meanwhile
 * become one, run after it with the newest record (the status manager's channel holds one signal and
 * syncBatch sends only the latest status of a pod: intermediate statuses are never sent).
 */
export class PodStatusSyncer {
  readonly #api: KubeRest;
  readonly #logger: Logger;
  /** uid → the status version last sent (apiStatusVersions). */
  readonly #sent = new Map<string, number>();
  /**
   * uid → the pod (a static pod's mirror pod) as this syncer last read or wrote it: UID,
   * resourceVersion, deletionTimestamp, annotations and status. The next sync patches against it (see {@link PodStatusSyncer.#assumed}).
   */
  readonly #last = new Map<string, ApiPod>();
  readonly #running = new Map<string, Promise<PodSyncOutcome>>();
  /** uid → the sync waiting for the one in flight (at most one per pod). */
  readonly #queued = new Map<string, QueuedSync>();
  readonly #mirrors: MirrorPods;
  /** static pod uid -> its mirror pod. */
  readonly #mirrored = new Map<string, { namespace: string; name: string; uid: string }>();

  /**
   * uid → what the last resync found in sync: the record, the version sent and the API copy it
   * compared. A pod whose three are the same objects again is in sync without comparing its status
   * again: comparing every pod's status every 10 s was most of this process's CPU holding 1,000
   * pods. The record and the API copy are replaced, never changed, when the pod changes.
   */
  readonly #inSync = new Map<string, { record: PodStatusRecord; sent: number | undefined; apiPod: ApiPod | undefined }>();

  /** The API copy of the node's pods; without one every pod is reconciled with a GET. */
  readonly #copy: ApiPodCopy | undefined;

  constructor(api: KubeRest, mirrors: MirrorPods, logger: Logger, copy?: ApiPodCopy) {
    this.#api = api;
    this.#mirrors = mirrors;
    this.#logger = logger;
    this.#copy = copy;
  }

  /** Mirror pod deletions running or waiting for a token. */
  #forgetting = 0;

  /** Pods with a sync or a mirror pod deletion running or waiting (behind the pod's sync in flight, or for the rate limiter's token). */
  get pending(): number {
    return this.#running.size + this.#forgetting;
  }

  /**
   * Drops what is known about a pod (its status was removed); a static pod's mirror pod is deleted —
   * after the pod's sync in flight (or waiting) ended, so that sync cannot create it again.
   */
  async forget(uid: string): Promise<void> {
    this.#forgetting++;
    try {
      await this.#running.get(uid)?.catch(() => undefined);
      this.#drop(uid);
      const mirror = this.#mirrored.get(uid);
      if (mirror === undefined) return;
      this.#mirrored.delete(uid);
      await this.#mirrors.delete(mirror.namespace, mirror.name, mirror.uid);
      this.#logger.info('Deleting mirror pod', { pod: `${mirror.namespace}/${mirror.name}`, podUID: mirror.uid });
    } finally {
      this.#forgetting--;
    }
  }

  /**
   * Syncs one pod after any sync of it in flight. Without `force`, a version already sent is skipped.
   * A sync already waiting for that pod takes `record` instead when it is newer (or as new) and
   * resolves both callers: the statuses in between are never sent.
   * @throws Error when the API server failed (the next resync tries again).
   */
  sync(record: PodStatusRecord, force = false): Promise<PodSyncOutcome> {
    const waiting = this.#queued.get(record.uid);
    if (waiting !== undefined) {
      if (record.version >= waiting.record.version) waiting.record = record;
      waiting.force ||= force;
      return waiting.run;
    }
    const previous = this.#running.get(record.uid) ?? Promise.resolve<PodSyncOutcome>('current');
    const queued: QueuedSync = {
      record,
      force,
      run: previous
        .catch(() => 'current' as const)
        .then(() => {
          this.#queued.delete(record.uid);
          return this.#sync(queued.record, queued.force);
        }),
    };
    const run = queued.run;
    this.#queued.set(record.uid, queued);
    this.#running.set(record.uid, run);
    void run
      .finally(() => {
        if (this.#running.get(record.uid) === run) this.#running.delete(record.uid);
      })
      .catch(() => undefined);
    return run;
  }

  /**
   * Reconciles the records that need it (syncBatch(true)): with an API copy, only those
   * {@link reconcileReason} names; the others count as `in-sync`. Failures are logged, not thrown.
   */
  async resync(records: Iterable<PodStatusRecord>): Promise<void> {
    const counts: Partial<Record<PodSyncOutcome | 'failed' | 'in-sync', number>> = {};
    await Promise.all(
      [...records].map(async (r) => {
        let outcome: PodSyncOutcome | 'failed' | 'in-sync';
        try {
          if (this.#copy !== undefined && this.#isInSync(r)) {
            counts['in-sync'] = (counts['in-sync'] ?? 0) + 1;
            return;
          }
          outcome = await this.sync(r, true);
        } catch (e) {
          outcome = 'failed';
          this.#logger.warn('Failed to update status for pod', { podUID: r.uid, pod: `${r.namespace}/${r.name}`, err: errorMessage(e) });
        }
        counts[outcome] = (counts[outcome] ?? 0) + 1;
      }),
    );
    this.#logger.debug('pod status resync done', counts);
  }

  /** True when {@link reconcileReason} names no reason to sync `record`; remembered while its inputs stay the same objects. */
  #isInSync(record: PodStatusRecord): boolean {
    const sent = this.#sent.get(record.uid);
    const apiPod = this.#apiCopy(record);
    const known = this.#inSync.get(record.uid);
    if (known !== undefined && known.record === record && known.sent === sent && known.apiPod === apiPod) return true;
    if (reconcileReason(record, sent, apiPod) !== undefined) {
      this.#inSync.delete(record.uid);
      return false;
    }
    this.#inSync.set(record.uid, { record, sent, apiPod });
    return true;
  }

  /** The API copy the status of `record` is reported to: the pod's, or its mirror pod's. */
  #apiCopy(record: PodStatusRecord): ApiPod | undefined {
    if (!isStaticPod(record.pod)) return this.#copy?.get(record.uid);
    const mirror = this.#mirrored.get(record.uid);
    return mirror === undefined ? undefined : this.#copy?.get(mirror.uid);
  }

  /**
   * The API pod a sync may patch against without reading it: the pod (a static pod's mirror pod) as
   * this syncer last read or wrote it, else the pod's watched copy. Its patch carries its
   * resourceVersion as a precondition, so an outdated one is refused (409) and the sync reads the
   * pod after all. A mirror pod of another version of the static pod, or being deleted, is not
   * patched: the read path replaces it.
   */
  #assumed(record: PodStatusRecord, isStatic: boolean): ApiPod | undefined {
    const last = this.#last.get(record.uid);
    if (isStatic) {
      const current = last !== undefined && last.metadata.deletionTimestamp === undefined && last.metadata.annotations?.[ConfigAnnotations.mirror] === staticPodHash(record.pod);
      return current ? last : undefined;
    }
    if (last !== undefined) return last;
    const copy = this.#apiCopy(record);
    return copy?.metadata.resourceVersion !== undefined ? copy : undefined;
  }

  /** Remembers the pod as an answer of the API server carried it (without a resourceVersion: forgets it). */
  #remember(uid: string, body: unknown): void {
    const pod = body as ApiPod | undefined;
    const rv = pod?.metadata?.resourceVersion;
    if (typeof rv !== 'string' || rv === '' || typeof pod?.metadata.uid !== 'string') {
      this.#last.delete(uid);
      return;
    }
    const { metadata: m, status } = pod;
    const kept: ApiPod = { metadata: { uid: m.uid, resourceVersion: rv } };
    if (m.deletionTimestamp !== undefined) kept.metadata.deletionTimestamp = m.deletionTimestamp;
    if (m.annotations !== undefined) kept.metadata.annotations = m.annotations;
    if (status !== undefined) kept.status = status;
    this.#last.set(uid, kept);
  }

  /** Forgets what was sent and known of a pod the API server no longer has (or has with another UID). */
  #drop(uid: string): void {
    this.#sent.delete(uid);
    this.#last.delete(uid);
    this.#inSync.delete(uid);
  }

  async #sync(record: PodStatusRecord, force: boolean): Promise<PodSyncOutcome> {
    if (!force && (this.#sent.get(record.uid) ?? -1) >= record.version) return 'current';
    const fields = { podUID: record.uid, pod: `${record.namespace}/${record.name}` };
    const isStatic = isStaticPod(record.pod);
    const assumed = this.#assumed(record, isStatic);
    if (assumed !== undefined) {
      const outcome = await this.#patch(record, assumed, 'assumed', isStatic);
      if (outcome !== undefined) return outcome;
    }
    let apiPod: ApiPod;
    if (isStatic) {
      const mirror = await this.#mirrors.ensure(record.pod);
      if (mirror === undefined) {
        this.#logger.debug('Static pod does not have a corresponding mirror pod; skipping', fields);
        return 'no-mirror';
      }
      apiPod = mirror;
      this.#mirrored.set(record.uid, { namespace: record.namespace, name: record.name, uid: mirror.metadata.uid });
    } else {
      const got = await this.#api.request('GET', podPath(record.namespace, record.name));
      if (got.status === 404) {
        this.#logger.debug('Pod does not exist on the server', fields);
        this.#drop(record.uid);
        return 'not-found';
      }
      if (got.status !== 200) throw kubeError(`GET pod ${fields.pod}`, got);
      apiPod = got.body as ApiPod;
      if (apiPod.metadata.uid !== record.uid) {
        this.#logger.debug('Pod was deleted and then recreated, skipping status update', { ...fields, apiUID: apiPod.metadata.uid });
        this.#drop(record.uid);
        return 'uid-mismatch';
      }
    }
    this.#remember(record.uid, apiPod);
    return (await this.#patch(record, apiPod, 'read', isStatic)) ?? 'unchanged';
  }

  /**
   * Patches the status of `apiPod` (the pod, or the static pod's mirror pod) to the record's, then
   * deletes a pod being deleted once it is terminal and its worker finished. `base` says what
   * `apiPod` is: just `read` (the kubelet's GET; a mirror pod as ensured), or `assumed` — then the
   * patch is made on condition that the pod still has that resourceVersion, and undefined is
   * returned (read the pod, try again) when it has not, or when there is nothing to patch (only a
   * write proves the assumed pod current, and the deletion depends on it).
   */
  async #patch(record: PodStatusRecord, apiPod: ApiPod, base: 'read' | 'assumed', isStatic: boolean): Promise<PodSyncOutcome | undefined> {
    const fields = { podUID: record.uid, pod: `${record.namespace}/${record.name}` };
    const path = podPath(record.namespace, record.name);
    const apiStatus = apiPod.status ?? {};
    const status = neverRegressTerminal(apiStatus, record.status);
    const patch = podStatusPatch(apiPod.metadata.uid, apiStatus, status);
    let outcome: PodSyncOutcome = 'unchanged';
    if (patch === undefined && base === 'assumed') return undefined;
    if (patch !== undefined) {
      if (base === 'assumed') (patch['metadata'] as Record<string, unknown>)['resourceVersion'] = apiPod.metadata.resourceVersion;
      const res = await this.#api.request('PATCH', `${path}/status`, patch, STRATEGIC_MERGE_PATCH);
      if (base === 'assumed' && (res.status === 409 || (isStatic && res.status === 404))) {
        // Changed since, or another pod of that name (a mirror pod gone: the read path creates it again).
        this.#last.delete(record.uid);
        return undefined;
      }
      if (res.status === 404 || res.status === 409) {
        this.#drop(record.uid);
        return res.status === 404 ? 'not-found' : 'uid-mismatch';
      }
      if (res.status !== 200) throw kubeError(`PATCH pod ${fields.pod} status`, res);
      this.#remember(record.uid, res.body);
      outcome = 'patched';
      if (this.#logger.isEnabled('debug')) this.#logger.debug('Patch status for pod', { ...fields, version: record.version, base, patch: JSON.stringify(patch) });
    }
    this.#sent.set(record.uid, record.version);
    if (!isStatic && apiPod.metadata.deletionTimestamp !== undefined && isTerminalPhase(status['phase']) && record.finished) {
      const res = await this.#api.request('DELETE', path, { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid: record.uid } });
      if (res.status !== 200 && res.status !== 202 && res.status !== 404) throw kubeError(`DELETE pod ${fields.pod}`, res);
      this.#drop(record.uid);
      this.#logger.info('Pod fully terminated and removed from etcd', fields);
      return 'deleted';
    }
    return outcome;
  }
}
