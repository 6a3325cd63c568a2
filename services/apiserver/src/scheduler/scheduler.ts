/**
 * A minimal scheduler inside the embedded API server: a pod without `spec.nodeName` is bound
 * (pods/binding) to a schedulable node whose allocatable fits it; when no node fits it stays
 * Pending with a `FailedScheduling` event, retried every pass.
 *
 * Models the default scheduler's essentials only (pkg/scheduler: NodeUnschedulable,
 * NodeResourcesFit on cpu/memory/pods, then the node with the most free cpu), for one-machine
 * clusters. Pods naming another `schedulerName` are left alone. A node counts as ready when its
 * `Ready` condition is `True`; while no Node reports conditions yet (no status from its kubelet),
 * only the node named `NODE_NAME` (this splitlet's own) is a candidate.
 *
 * One pass at a time (`pass()` awaited in the loop); a pod bound by someone else in between gets a
 * 409 from the binding, which is skipped.
 *
 * With a `signal`, the pods come from a watch-maintained cache (the scheduler's pod informer: one
 * list, then a watch from its revision; relisted after the watch ends, e.g. 410 Gone), so a pass
 * reads no pod from the store; a pod bound by this scheduler counts on its node until the watch
 * shows the binding (the scheduler cache's assumed pods). Without one, every pass lists the pods.
 * When the storage keeps a watch cache of pods (`RestStorage.startWatchCaches`), the scheduler
 * reads that one instead of watching the pods a second time.
 */
import { podRequests, resourceAmount, type ResourceAmounts } from '@splitlet/kube';
import type { PodSpec } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { sleep } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { ApiError } from '../http/api-errors.js';
import { findResource } from '../registry/resources.js';
import type { RestStorage } from '../registry/rest-storage.js';
import { metaText, type KubeObject } from '../storage/object-store.js';

/** Options of {@link Scheduler}. */
export interface SchedulerOptions {
  readonly storage: RestStorage;
  /** The node of this splitlet (the candidate while no Node reports a Ready condition). */
  readonly nodeName: string;
  readonly logger: Logger;
  /** @default Date.now */
  readonly now?: () => number;
  /** Aborted at shutdown. With it, the pods are watched rather than listed by every pass. */
  readonly signal?: AbortSignal;
}

/** How long the pod informer waits before listing again after its watch ended. */
const RELIST_DELAY_MS = 1000;
const none = { labelSelector: null, fieldSelector: null };
const podKey = (o: KubeObject): string => `${metaText(o, 'namespace')}/${metaText(o, 'name')}`;

const SCHEDULER_NAME = 'default-scheduler';
const res = (name: string, group = '', version = 'v1') => {
  const r = findResource(group, version, name);
  if (r === undefined) throw new Error(`resource ${name} is not served`);
  return r;
};

interface NodeInfo {
  name: string;
  allocatable: ResourceAmounts | undefined;
  used: ResourceAmounts;
}

type Meta = { name: string; namespace: string; uid?: string; deletionTimestamp?: string };
const meta = (o: KubeObject): Meta => o.metadata as unknown as Meta;
const spec = (o: KubeObject): PodSpec & { nodeName?: string; schedulerName?: string } => o['spec'] as PodSpec & { nodeName?: string; schedulerName?: string };
const terminal = (o: KubeObject): boolean => ['Succeeded', 'Failed'].includes((o['status'] as { phase?: string } | undefined)?.phase ?? '');

/** The scheduler; call `pass()` periodically. */
export class Scheduler {
  readonly #o: SchedulerOptions;
  /** The last FailedScheduling message per pod uid (an event only when it changes). */
  readonly #reported = new Map<string, string>();

  /** namespace/name → pod, as the watch last showed it; undefined while not listed (or relisting). */
  #cache: Map<string, KubeObject> | undefined;
  /** Bindings made here the cache does not show yet: namespace/name → the pod's uid and node. */
  readonly #assumed = new Map<string, { uid: unknown; node: string }>();

  constructor(options: SchedulerOptions) {
    this.#o = options;
    const signal = options.signal;
    if (signal !== undefined && !options.storage.watchCaches(res('pods'))) void this.#inform(signal);
  }

  /** The pod informer: list, watch from the list's revision, again after the watch ended. */
  async #inform(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const listed = await this.#o.storage.list(res('pods'), undefined, none);
        const cache = new Map(listed.items.map((p) => [podKey(p), p]));
        this.#cache = cache;
        for await (const e of this.#o.storage.watch(res('pods'), undefined, none, listed.revision, new Set(cache.keys()), signal)) {
          if (e.type === 'DELETED') cache.delete(podKey(e.object));
          else cache.set(podKey(e.object), e.object);
        }
      } catch (e) {
        if (!signal.aborted) this.#o.logger.info('scheduler pod watch ended; listing again', { err: errorMessage(e) });
      }
      this.#cache = undefined;
      await sleep(RELIST_DELAY_MS, signal);
    }
  }

  /** Every pod, bindings made here counted (the cache's, or a listing while there is none). */
  async #pods(): Promise<KubeObject[]> {
    const pods =
      this.#o.storage.cachedObjects(res('pods')) ?? (this.#cache === undefined ? (await this.#o.storage.list(res('pods'), undefined, none)).items : [...this.#cache.values()]);
    if (this.#assumed.size === 0) return pods;
    const seen = new Set<string>();
    const out = pods.map((p) => {
      const key = podKey(p);
      const a = this.#assumed.get(key);
      if (a === undefined) return p;
      seen.add(key);
      if (a.uid !== meta(p).uid || spec(p).nodeName) {
        this.#assumed.delete(key); // the store shows the binding (or another pod of that name)
        return p;
      }
      return { ...p, spec: { ...spec(p), nodeName: a.node } };
    });
    for (const key of this.#assumed.keys()) if (!seen.has(key)) this.#assumed.delete(key); // deleted
    return out;
  }

  /** Binds every pending pod that fits somewhere; resolves with the number bound. */
  async pass(): Promise<number> {
    const pods = await this.#pods();
    const pending = pods.filter((p) => !spec(p).nodeName && meta(p).deletionTimestamp === undefined && (spec(p).schedulerName ?? SCHEDULER_NAME) === SCHEDULER_NAME);
    if (pending.length === 0) return 0;
    const nodes = this.#candidates((await this.#o.storage.list(res('nodes'), undefined, none)).items, pods);
    let bound = 0;
    for (const pod of pending) {
      const m = meta(pod);
      const want = podRequests({ spec: spec(pod) });
      const reasons = new Map<string, number>();
      const fits = nodes.filter((n) => {
        const why = unfit(n, want);
        if (why !== undefined) reasons.set(why, (reasons.get(why) ?? 0) + 1);
        return why === undefined;
      });
      if (fits.length === 0) {
        const detail = [...reasons].map(([why, count]) => `${count} ${why}`).join(', ');
        await this.#failed(pod, nodes.length === 0 ? '0/0 nodes are available: no node is ready.' : `0/${nodes.length} nodes are available: ${detail}.`);
        continue;
      }
      fits.sort((a, b) => free(b, 'cpu') - free(a, 'cpu'));
      const target = fits[0]!;
      try {
        await this.#o.storage.bind(res('pods'), m.namespace, m.name, {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: m.name, namespace: m.namespace },
          target: { kind: 'Node', name: target.name },
        });
      } catch (e) {
        if (e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound')) continue;
        throw e;
      }
      this.#assumed.set(podKey(pod), { uid: m.uid, node: target.name });
      for (const [k, v] of Object.entries(want)) target.used[k] = (target.used[k] ?? 0) + v;
      target.used['pods'] = (target.used['pods'] ?? 0) + 1;
      if (m.uid !== undefined) this.#reported.delete(m.uid);
      bound++;
      this.#o.logger.info('scheduled pod', { pod: `${m.namespace}/${m.name}`, node: target.name });
      await this.#event(pod, 'Normal', 'Scheduled', `Successfully assigned ${m.namespace}/${m.name} to ${target.name}`);
    }
    return bound;
  }

  #candidates(nodes: KubeObject[], pods: KubeObject[]): NodeInfo[] {
    const readyOf = (n: KubeObject): string | undefined =>
      ((n['status'] as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).find((c) => c.type === 'Ready')?.status;
    const anyReports = nodes.some((n) => readyOf(n) !== undefined);
    const usable = nodes.filter(
      (n) => !(n['spec'] as { unschedulable?: boolean } | undefined)?.unschedulable && (anyReports ? readyOf(n) === 'True' : meta(n).name === this.#o.nodeName),
    );
    return usable.map((n) => {
      const alloc = (n['status'] as { allocatable?: Record<string, string> } | undefined)?.allocatable;
      const used: ResourceAmounts = {};
      for (const p of pods) {
        if (spec(p).nodeName !== meta(n).name || terminal(p)) continue;
        for (const [k, v] of Object.entries(podRequests({ spec: spec(p) }))) used[k] = (used[k] ?? 0) + v;
        used['pods'] = (used['pods'] ?? 0) + 1;
      }
      const allocatable = alloc === undefined ? undefined : Object.fromEntries(Object.entries(alloc).map(([k, q]) => [k, resourceAmount(k, q)]));
      return { name: meta(n).name, allocatable, used };
    });
  }

  async #failed(pod: KubeObject, message: string): Promise<void> {
    const uid = meta(pod).uid ?? `${meta(pod).namespace}/${meta(pod).name}`;
    if (this.#reported.get(uid) === message) return;
    this.#reported.set(uid, message);
    this.#o.logger.info('pod does not fit any node', { pod: `${meta(pod).namespace}/${meta(pod).name}`, message });
    await this.#event(pod, 'Warning', 'FailedScheduling', message);
  }

  async #event(pod: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const m = meta(pod);
    const now = new Date((this.#o.now ?? Date.now)()).toISOString().replace(/\.\d+Z$/, 'Z');
    try {
      await this.#o.storage.create(res('events'), m.namespace, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${m.name}.`, namespace: m.namespace },
        involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: m.namespace, name: m.name, ...(m.uid !== undefined ? { uid: m.uid } : {}) },
        reason,
        message,
        type,
        source: { component: SCHEDULER_NAME },
        reportingComponent: SCHEDULER_NAME,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (e) {
      this.#o.logger.warn('could not record a scheduler event', { reason, err: e });
    }
  }
}

function free(n: NodeInfo, r: string): number {
  return n.allocatable === undefined ? Number.MAX_SAFE_INTEGER : (n.allocatable[r] ?? 0) - (n.used[r] ?? 0);
}

/** Why the pod does not fit on the node (the scheduler's NodeResourcesFit texts), or undefined. */
function unfit(n: NodeInfo, want: ResourceAmounts): string | undefined {
  if (n.allocatable === undefined) return undefined;
  if (n.allocatable['pods'] !== undefined && (n.used['pods'] ?? 0) + 1 > n.allocatable['pods']) return 'Too many pods';
  for (const [k, v] of Object.entries(want)) {
    if (v === 0) continue;
    if (free(n, k) < v) return `Insufficient ${k}`;
  }
  return undefined;
}
