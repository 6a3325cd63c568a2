/**
 * Reads the runtime's view of pods over the CRI: one pod (GetPodStatus) or all of them (relist).
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_manager.go (GetPodStatus, GetPods),
 * kuberuntime_sandbox.go (getSandboxIDByPodUID, determinePodSandboxIPs) and kuberuntime_container.go
 * (getPodContainerStatuses, toKubeContainerStatus, convertToKubeContainerStatus).
 */
import type { RuntimeContainerStatus, RuntimePodStatus, RuntimeSandboxStatus } from '@splitlet/api';
import { isCriError } from '@splitlet/cri';
import { podSandboxIPs } from '@splitlet/kube';
import type {
  Container as CriContainer,
  ContainerEventResponse,
  ContainerStatus as CriContainerStatus,
  PodSandbox,
  PodSandboxStatus,
  PodSandboxStatusResponse,
} from '@splitlet/cri';
import type { CriRuntime, NodeFiles } from '../ports.js';
import { containerInfoFrom, RuntimeLabels } from './labels.js';
import { exitedContainerMessage } from './termination-message.js';

/** CRI nanosecond timestamps (decimal strings) as milliseconds; '0' / '' give undefined. */
export function nanosToMillis(ns: string | undefined): number | undefined {
  if (ns === undefined || ns === '' || ns === '0') return undefined;
  const n = Number(ns);
  return Number.isFinite(n) ? n / 1e6 : undefined;
}

/** The network facts of a sandbox, which do not change while it is ready. */
interface SandboxNetwork {
  readonly ip: string | undefined;
  readonly additionalIps: string[];
  readonly hostNetwork: boolean | undefined;
  /** Read from the status of the sandbox while it was ready (a not-ready sandbox reports no IP). */
  readonly whileReady: boolean;
}

function sandboxNetworkOf(s: PodSandboxStatus): SandboxNetwork {
  const mode = s.linux?.namespaces?.options?.network;
  return {
    ip: s.network === null ? undefined : s.network.ip,
    additionalIps: (s.network?.additionalIps ?? []).map((p) => p.ip).filter((ip) => ip !== ''),
    hostNetwork: mode === undefined ? undefined : mode === 'NODE',
    whileReady: s.state === 'SANDBOX_READY',
  };
}

function toSandboxStatus(id: string, state: PodSandbox['state'], createdAt: string, attempt: number, net: SandboxNetwork | undefined): RuntimeSandboxStatus {
  const out: RuntimeSandboxStatus = { id, state, createdAt: nanosToMillis(createdAt) ?? 0, attempt };
  if (net?.ip !== undefined) out.ip = net.ip;
  if (net !== undefined && net.additionalIps.length > 0) out.additionalIps = net.additionalIps;
  if (net?.hostNetwork !== undefined) out.hostNetwork = net.hostNetwork;
  return out;
}

/**
 * A CRI container status as the runtime-status schema: identity and spec hash, restart count and the
 * init marker from the annotations; times in ms; exit code, reason and message passed through from
 * the runtime (containerd: Completed / Error / OOMKilled / StartError).
 *
 * Models kuberuntime.toKubeContainerStatus.
 */
export function toRuntimeContainerStatus(status: CriContainerStatus, sandboxId: string): RuntimeContainerStatus {
  const info = containerInfoFrom(status.labels, status.annotations);
  const out: RuntimeContainerStatus = {
    id: status.id,
    name: status.metadata?.name ?? info.containerName,
    sandboxId,
    state: status.state,
    createdAt: nanosToMillis(status.createdAt) ?? 0,
    image: status.image?.userSpecifiedImage || status.image?.image || '',
    imageRef: status.imageRef,
    hash: info.hash,
    restartCount: info.restartCount,
  };
  const started = nanosToMillis(status.startedAt);
  if (started !== undefined) out.startedAt = started;
  if (status.state === 'CONTAINER_EXITED') {
    const finished = nanosToMillis(status.finishedAt);
    if (finished !== undefined) out.finishedAt = finished;
    out.exitCode = status.exitCode;
  }
  if (status.reason !== '') out.reason = status.reason;
  if (status.message !== '') out.message = status.message;
  if (info.init) out.init = true;
  return out;
}

/** Newest first by creation time (the order GetPodStatus returns). */
function newestFirst<T extends { createdAt: number }>(xs: T[]): T[] {
  return xs.sort((a, b) => b.createdAt - a.createdAt);
}

/**
 * A relist targeted at more pods than this lists the runtime's objects once, unfiltered, instead of
 * by the pod-uid label per pod (two calls instead of two per pod).
 */
export const MAX_LABEL_LISTED_PODS = 4;

/**
 * What one runtime container event says about its pod: the status of the event's sandbox and of
 * the sandbox's containers (its part of the pod's status), in the shape the relist returns.
 */
export interface ContainerEventPart {
  readonly uid: string;
  readonly sandboxId: string;
  /** The pod as far as this sandbox goes; no sandbox and no containers once the sandbox was deleted. */
  readonly status: RuntimePodStatus;
  /** The event's `created_at`, in ms since the epoch. */
  readonly observedAt: number;
}

/** The files the reader reads for exited containers' termination messages. */
export type TerminationMessageFiles = Pick<NodeFiles, 'readAtMost' | 'readLogTail'>;

/**
 * Reads pod statuses from the runtime. Container statuses are cached per container id and runtime
 * state: an exited container never changes, and a created or running one only changes by changing
 * state, which ListContainers shows; so ContainerStatus is called once per container and state.
 * An exited container's termination message (its file, or its log tail) is read with it, once:
 * the runtime reports the exit only after the container's output reached its log.
 * Sandbox network facts are cached per sandbox id: a sandbox that ListPodSandbox shows ready, and
 * whose status was read while it was ready, gives the same PodSandboxStatus as then (its IPs and
 * network mode are fixed when it is created), so GetPodStatus reads PodSandboxStatus only for
 * sandboxes it has not seen ready. Safe for concurrent use.
 */
export class RuntimeStatusReader {
  readonly #runtime: CriRuntime;
  readonly #files: TerminationMessageFiles;
  /** Container id → its pod UID and last status. */
  readonly #containers = new PodObjectCache<RuntimeContainerStatus>();
  /** Sandbox id → its pod UID and network facts. */
  readonly #sandboxNets = new PodObjectCache<SandboxNetwork>();

  constructor(runtime: CriRuntime, files: TerminationMessageFiles) {
    this.#runtime = runtime;
    this.#files = files;
  }

  /** Containers whose statuses are cached (for tests and metrics). */
  get cachedContainers(): number {
    return this.#containers.size;
  }

  /**
   * The fresh status of one pod: its sandboxes (ListPodSandbox by the pod-uid label, then
   * PodSandboxStatus each — unless the sandbox is ready and its status was read while it was,
   * see the class comment —, newest first), its containers (ListContainers by the label, then
   * ContainerStatus), and the IPs of the newest ready sandbox. Objects removed between the list and
   * the status call are skipped.
   *
   * With `changedContainers` (the containers the caller just created or started), their
   * ContainerStatus is read alongside the lists rather than after them: one round trip to the
   * runtime instead of two. Such a status is used when the listing shows the container in the state
   * it read, else the container is read again, so the result is what a read after the lists gives.
   *
   * Models kubeGenericRuntimeManager.GetPodStatus.
   */
  async getPodStatus(uid: string, name: string, namespace: string, changedContainers: readonly string[] = []): Promise<RuntimePodStatus> {
    const selector = { [RuntimeLabels.podUid]: uid };
    const early = new Map<string, Promise<CriContainerStatus | null | undefined>>();
    for (const id of changedContainers) {
      early.set(
        id,
        this.#runtime.ContainerStatus({ containerId: id }).then(
          (r) => r.status,
          () => undefined,
        ),
      );
    }
    const [sandboxList, containerList] = await Promise.all([
      this.#runtime.ListPodSandbox({ filter: { labelSelector: selector } }),
      this.#runtime.ListContainers({ filter: { labelSelector: selector } }),
    ]);
    const sandboxes: RuntimeSandboxStatus[] = [];
    await Promise.all(
      sandboxList.items.map(async (sb) => {
        const known = this.#sandboxNets.get(sb.id);
        if (sb.state === 'SANDBOX_READY' && known?.whileReady === true) {
          sandboxes.push(toSandboxStatus(sb.id, sb.state, sb.createdAt, sb.metadata?.attempt ?? 0, known));
          return;
        }
        try {
          const s = (await this.podSandboxStatus(uid, sb.id)).status;
          if (s === null) throw new Error(`pod sandbox status of ${sb.id} is nil`);
          sandboxes.push(toSandboxStatus(s.id, s.state, s.createdAt, s.metadata?.attempt ?? sb.metadata?.attempt ?? 0, sandboxNetworkOf(s)));
        } catch (e) {
          if (!isCriError(e, 'NotFound')) throw e;
        }
      }),
    );
    newestFirst(sandboxes);
    const containers = await this.#containerStatuses(containerList.containers, early);
    this.#forget(uid, new Set(sandboxList.items.map((s) => s.id)), new Set(containerList.containers.map((c) => c.id)));
    return { uid, name, namespace, ips: podSandboxIPs(sandboxes), sandboxes, containers: newestFirst(containers) };
  }

  /**
   * Every pod the runtime knows (sandboxes and containers carrying the pod-uid label), grouped by
   * pod UID, each in the GetPodStatus shape. Sandbox states come from ListPodSandbox; a sandbox's
   * network is read once with PodSandboxStatus; container details come from the cache or
   * ContainerStatus. Cache entries of objects no longer listed are dropped.
   *
   * Models GenericPLEG.relist's runtime reads (GetPods + GetPodStatus per pod), batched.
   *
   * With `uids` (a relist targeted at the pods pleg was poked about), only their objects are listed
   * (by the pod-uid label, or for many pods by one unfiltered listing, see {@link MAX_LABEL_LISTED_PODS}),
   * only their statuses are read, and the caches are not pruned (the next full relist does it).
   */
  async relist(uids?: readonly string[]): Promise<RuntimePodStatus[]> {
    const [sandboxList, containerList] = uids === undefined ? await Promise.all([this.#runtime.ListPodSandbox({}), this.#runtime.ListContainers({})]) : await this.#listPods(uids);
    const pods = new Map<string, RuntimePodStatus>();
    const podFor = (labels: Readonly<Record<string, string>>, fallback?: { name?: string; namespace?: string }): RuntimePodStatus | undefined => {
      const uid = labels[RuntimeLabels.podUid];
      if (uid === undefined || uid === '') return undefined;
      let p = pods.get(uid);
      if (p === undefined) {
        p = {
          uid,
          name: labels[RuntimeLabels.podName] ?? fallback?.name ?? '',
          namespace: labels[RuntimeLabels.podNamespace] ?? fallback?.namespace ?? '',
          ips: [],
          sandboxes: [],
          containers: [],
        };
        pods.set(uid, p);
      }
      return p;
    };

    const liveSandboxes = new Set<string>();
    // Sandboxes whose network is known are added at once; only new ones wait for PodSandboxStatus
    // (an idle relist reads no status at all, so it makes no promise per sandbox either).
    const reading: Array<Promise<void>> = [];
    for (const sb of sandboxList.items) {
      liveSandboxes.add(sb.id);
      const pod = podFor(sb.labels, sb.metadata ?? undefined);
      if (pod === undefined) continue;
      const known = this.#sandboxNets.get(sb.id);
      if (known !== undefined) {
        pod.sandboxes.push(toSandboxStatus(sb.id, sb.state, sb.createdAt, sb.metadata?.attempt ?? 0, known));
        continue;
      }
      reading.push(
        (async () => {
          let net: SandboxNetwork | undefined;
          try {
            const s = (await this.podSandboxStatus(pod.uid, sb.id)).status;
            if (s !== null) net = sandboxNetworkOf(s);
          } catch (e) {
            if (!isCriError(e, 'NotFound')) throw e;
            return;
          }
          pod.sandboxes.push(toSandboxStatus(sb.id, sb.state, sb.createdAt, sb.metadata?.attempt ?? 0, net));
        })(),
      );
    }
    await Promise.all(reading);
    if (uids === undefined) for (const id of this.#sandboxNets.keys()) if (!liveSandboxes.has(id)) this.#sandboxNets.delete(id);

    const labelled = containerList.containers.filter((c) => (c.labels[RuntimeLabels.podUid] ?? '') !== '');
    const statuses = await this.#containerStatuses(labelled);
    const liveContainers = new Set(containerList.containers.map((c) => c.id));
    if (uids === undefined) for (const id of this.#containers.keys()) if (!liveContainers.has(id)) this.#containers.delete(id);
    const byId = new Map(labelled.map((c) => [c.id, c]));
    for (const st of statuses) {
      const c = byId.get(st.id);
      if (c === undefined) continue;
      podFor(c.labels)?.containers.push(st);
    }
    for (const p of pods.values()) {
      newestFirst(p.sandboxes);
      newestFirst(p.containers);
      p.ips = podSandboxIPs(p.sandboxes);
    }
    return [...pods.values()];
  }

  /**
   * The part of a pod's status a runtime container event carries (the event's `pod_sandbox_status`
   * and `containers_statuses`), translated as the relist translates ListPodSandbox/ContainerStatus:
   * the sandbox's network facts as first read while it was ready (or from this event, and kept for
   * later relists), container statuses through the same per-state cache (an exited container's
   * termination message read once). A sandbox's DELETED event gives the part with nothing left and
   * drops the sandbox's cached facts; a container's DELETED event drops its cached status.
   * `undefined` for an event without a sandbox status (containerd: the sandbox was already gone) or
   * for a sandbox without the pod-uid label (not the kubelet's: the relist skips it too).
   *
   * Models kubeGenericRuntimeManager.GeneratePodStatus (evented PLEG), with the relist's caches.
   */
  async fromContainerEvent(event: ContainerEventResponse): Promise<ContainerEventPart | undefined> {
    const s = event.podSandboxStatus;
    if (s === null || s.metadata === null) return undefined;
    const uid = s.labels[RuntimeLabels.podUid];
    if (uid === undefined || uid === '') return undefined;
    const pod: RuntimePodStatus = {
      uid,
      name: s.labels[RuntimeLabels.podName] ?? s.metadata.name,
      namespace: s.labels[RuntimeLabels.podNamespace] ?? s.metadata.namespace,
      ips: [],
      sandboxes: [],
      containers: [],
    };
    const observedAt = nanosToMillis(event.createdAt) ?? 0;
    const deleted = event.containerEventType === 'CONTAINER_DELETED_EVENT';
    if (deleted && event.containerId === s.id) {
      this.#sandboxNets.delete(s.id);
      return { uid, sandboxId: s.id, status: pod, observedAt };
    }
    if (deleted) this.#containers.delete(event.containerId);
    let net = this.#sandboxNets.get(s.id);
    if (net === undefined || (s.state === 'SANDBOX_READY' && !net.whileReady)) {
      net = sandboxNetworkOf(s);
      this.#sandboxNets.set(s.id, uid, net);
    }
    pod.sandboxes.push(toSandboxStatus(s.id, s.state, s.createdAt, s.metadata.attempt, net));
    const reading: Array<Promise<void>> = [];
    for (const cs of event.containersStatuses) {
      const cached = this.#containers.get(cs.id);
      if (cached !== undefined && cached.state === cs.state && cs.state !== 'CONTAINER_UNKNOWN') pod.containers.push(cached);
      else reading.push(this.#fromStatus(cs, s.id, uid, pod.containers));
    }
    await Promise.all(reading);
    newestFirst(pod.containers);
    pod.ips = podSandboxIPs(pod.sandboxes);
    return { uid, sandboxId: s.id, status: pod, observedAt };
  }

  /** PodSandboxStatus of pod `uid`'s sandbox `id`, whose network facts it keeps (the manager reads a new sandbox's IPs with it). */
  async podSandboxStatus(uid: string, id: string): Promise<PodSandboxStatusResponse> {
    const resp = await this.#runtime.PodSandboxStatus({ podSandboxId: id });
    if (resp.status !== null) this.#sandboxNets.set(id, uid, sandboxNetworkOf(resp.status));
    return resp;
  }

  /**
   * The sandboxes and containers of these pods: ListPodSandbox and ListContainers by the pod-uid
   * label for each — or, for more than {@link MAX_LABEL_LISTED_PODS} pods, one unfiltered
   * ListPodSandbox and ListContainers whose items of other pods are dropped here. A runtime answers
   * a filtered list by going over all its objects anyway (containerd does), so two calls cost less
   * than two per pod once a burst pokes about many pods at once.
   */
  async #listPods(uids: readonly string[]): Promise<[{ items: PodSandbox[] }, { containers: CriContainer[] }]> {
    if (uids.length > MAX_LABEL_LISTED_PODS) {
      const wanted = new Set(uids);
      const ofWanted = (labels: Readonly<Record<string, string>>): boolean => wanted.has(labels[RuntimeLabels.podUid] ?? '');
      const [sandboxes, containers] = await Promise.all([this.#runtime.ListPodSandbox({}), this.#runtime.ListContainers({})]);
      return [{ items: sandboxes.items.filter((s) => ofWanted(s.labels)) }, { containers: containers.containers.filter((c) => ofWanted(c.labels)) }];
    }
    const lists = await Promise.all(
      uids.map(async (uid) => {
        const selector = { [RuntimeLabels.podUid]: uid };
        return Promise.all([this.#runtime.ListPodSandbox({ filter: { labelSelector: selector } }), this.#runtime.ListContainers({ filter: { labelSelector: selector } })]);
      }),
    );
    return [{ items: lists.flatMap(([s]) => s.items) }, { containers: lists.flatMap(([, c]) => c.containers) }];
  }

  /** `early`: statuses read alongside the listing, by container id (see getPodStatus). */
  async #containerStatuses(list: readonly CriContainer[], early?: ReadonlyMap<string, Promise<CriContainerStatus | null | undefined>>): Promise<RuntimeContainerStatus[]> {
    const out: RuntimeContainerStatus[] = [];
    // Cached statuses are taken at once; only the others wait for ContainerStatus.
    const reading: Array<Promise<void>> = [];
    for (const c of list) {
      const cached = this.#containers.get(c.id);
      if (cached !== undefined && cached.state === c.state && c.state !== 'CONTAINER_UNKNOWN') out.push(cached);
      else reading.push(this.#readContainerStatus(c, out, early?.get(c.id)));
    }
    await Promise.all(reading);
    return out;
  }

  /**
   * ContainerStatus of `c` into `out` (and the cache); a container removed meanwhile is skipped.
   * An `early` status in the state the listing shows stands for the read.
   */
  async #readContainerStatus(c: CriContainer, out: RuntimeContainerStatus[], early?: Promise<CriContainerStatus | null | undefined>): Promise<void> {
    try {
      let status = early === undefined ? undefined : await early;
      if (status?.state !== c.state) status = (await this.#runtime.ContainerStatus({ containerId: c.id })).status;
      if (status === null || status === undefined) return;
      await this.#fromStatus(status, c.podSandboxId, c.labels[RuntimeLabels.podUid] ?? '', out);
    } catch (e) {
      if (!isCriError(e, 'NotFound')) throw e;
    }
  }

  /** A CRI container status into `out` (and the cache), with an exited container's termination message. */
  async #fromStatus(status: CriContainerStatus, sandboxId: string, uid: string, out: RuntimeContainerStatus[]): Promise<void> {
    const st = toRuntimeContainerStatus(status, sandboxId);
    if (st.state === 'CONTAINER_EXITED') await this.#addTerminationMessage(st, status);
    if (st.state !== 'CONTAINER_UNKNOWN') this.#containers.set(status.id, uid, st);
    out.push(st);
  }

  /**
   * Puts the termination message of an exited container into its status message.
   *
   * Models the EXITED part of kubeGenericRuntimeManager.convertToKubeContainerStatus.
   */
  async #addTerminationMessage(st: RuntimeContainerStatus, status: CriContainerStatus): Promise<void> {
    const info = containerInfoFrom(status.labels, status.annotations);
    const message = await exitedContainerMessage(this.#files, status, { path: info.terminationMessagePath, policy: info.terminationMessagePolicy });
    if (message !== '') st.message = message;
  }

  /** Drops cached entries of pod `uid` whose objects the runtime no longer lists (the pod's entries only: O(its objects)). */
  #forget(uid: string, sandboxIds: ReadonlySet<string>, containerIds: ReadonlySet<string>): void {
    for (const id of this.#sandboxNets.idsOf(uid)) if (!sandboxIds.has(id)) this.#sandboxNets.delete(id);
    for (const id of this.#containers.idsOf(uid)) if (!containerIds.has(id)) this.#containers.delete(id);
  }
}

/**
 * Values of runtime objects (containers or sandboxes) by object id, each with its pod UID, and the
 * ids of each pod: a pod's entries are found without going over every object of the node.
 */
class PodObjectCache<V> {
  readonly #byId = new Map<string, { readonly uid: string; readonly value: V }>();
  readonly #idsByPod = new Map<string, Set<string>>();

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): V | undefined {
    return this.#byId.get(id)?.value;
  }

  set(id: string, uid: string, value: V): void {
    const old = this.#byId.get(id);
    if (old !== undefined && old.uid !== uid) this.#unindex(id, old.uid);
    this.#byId.set(id, { uid, value });
    let ids = this.#idsByPod.get(uid);
    if (ids === undefined) this.#idsByPod.set(uid, (ids = new Set()));
    ids.add(id);
  }

  delete(id: string): void {
    const old = this.#byId.get(id);
    if (old === undefined) return;
    this.#byId.delete(id);
    this.#unindex(id, old.uid);
  }

  /** Every cached id. */
  keys(): IterableIterator<string> {
    return this.#byId.keys();
  }

  /** The cached ids of pod `uid` (a copy: safe to delete while iterating). */
  idsOf(uid: string): string[] {
    return [...(this.#idsByPod.get(uid) ?? [])];
  }

  #unindex(id: string, uid: string): void {
    const ids = this.#idsByPod.get(uid);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) this.#idsByPod.delete(uid);
  }
}
