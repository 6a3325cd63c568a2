/**
 * createSimRuntime(): an in-memory CRI runtime (RuntimeService & ImageService) that behaves like
 * containerd 1.6 with runc and a busybox image, without containers: sandboxes get an IP string,
 * containers run a simulated process (see sim-process.ts) that writes the real CRI log file and real
 * files in hostPath mounts.
 *
 * Container state machine (containerd's):
 *
 *   CreateContainer ─▶ CREATED ─ StartContainer ─▶ RUNNING ─ process exits / StopContainer ─▶ EXITED
 *                         │            └─ exec fails ─▶ EXITED (StartError, 128)                 │
 *                         └──────────────────────── RemoveContainer ◀────────────────────────────┘
 *
 *   RunPodSandbox ─▶ READY ─ StopPodSandbox (kills containers, frees the IP) ─▶ NOTREADY ─ RemovePodSandbox
 *
 * Over 450 lines on purpose: one runtime's CRI state machine is one class whose RPCs share the
 * sandbox, container and name tables; processes, images and IPs live in their own files.
 *
 * One file on purpose: RuntimeService and ImageService share one state (sandboxes, containers, images, IPs) and its invariants; the process, shell, filesystem and image parts are already modules of their own.
 */
import { randomBytes } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import * as path from 'node:path';
import {
  AsyncQueue,
  CriError,
  CriLogWriter,
  criMessageEncoder,
  nowNs,
  parseCriErrorCode,
  type CallOptions,
  type ContainerEventStream,
  type CriErrorCode,
  type CriMethod,
  type ImageService,
  type OutputSink,
  type RuntimeService,
  ContainerEventType,
  ContainerState,
  PodSandboxState,
  type Container,
  type ContainerEventResponse,
  type ContainerMetadata,
  type ContainerStatus,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
  type CreateContainerRequest,
  type CreateContainerResponse,
  type CriInput,
  type ExecSyncRequest,
  type ExecSyncResponse,
  type GetEventsRequest,
  type ImageReference,
  type ImageFsInfoRequest,
  type ImageFsInfoResponse,
  type ImageSpec,
  type ImageStatusRequest,
  type ImageStatusResponse,
  type LinuxContainerResources,
  type LinuxContainerSecurityContext,
  type ListContainersRequest,
  type ListContainersResponse,
  type ListImagesRequest,
  type ListImagesResponse,
  type ListPodSandboxRequest,
  type ListPodSandboxResponse,
  type Mount,
  type NamespaceMode,
  type NamespaceOption,
  type PodSandbox,
  type PodSandboxMetadata,
  type PodSandboxStatus,
  type PodSandboxStatusRequest,
  type PodSandboxStatusResponse,
  type PullImageRequest,
  type PullImageResponse,
  type RemoveContainerRequest,
  type RemoveContainerResponse,
  type RemoveImageRequest,
  type RemoveImageResponse,
  type RemovePodSandboxRequest,
  type RemovePodSandboxResponse,
  type RunPodSandboxRequest,
  type RunPodSandboxResponse,
  type StartContainerRequest,
  type StartContainerResponse,
  type StatusRequest,
  type StatusResponse,
  type StopContainerRequest,
  type StopContainerResponse,
  type StopPodSandboxRequest,
  type StopPodSandboxResponse,
  type StringMap,
  type VersionRequest,
  type VersionResponse,
} from '@splitlet/cri';
import { defaultIsMissingImage, SimImageStore, type SimPrivateRegistry, type SimRegistry } from '../images/sim-images.js';
import { ContainerFs } from '../process/container-fs.js';
import { parseSignal, type ContainerSetting, type Program, type SimSignal } from '../process/program.js';
import { ListItemCache, listReply, type EncodedItem } from './list-items.js';
import { POD_UID_LABEL, PodUidIndex } from './pod-uid-index.js';
import { ExecNotFoundError, spawnProcess, type SimProcess } from '../process/sim-process.js';
import { IpPool } from './ip-pool.js';

/** Added latency per RPC in ms; `default` applies to RPCs without their own entry. */
export type SimLatency = Partial<Record<CriMethod | 'default', number>>;

/** An injected failure for one RPC. */
export interface SimFailure {
  /** A CriError code (`Unavailable`) or gRPC name (`UNAVAILABLE`). */
  code: CriErrorCode | (string & {});
  /** @default `injected failure` */
  message?: string;
  /** Fail only the next `times` calls, then clear. @default every call */
  times?: number;
  /** Fail each call with this probability (0..1). @default 1 */
  rate?: number;
}

/** Injected failures per RPC. */
export type SimFailures = Partial<Record<CriMethod, SimFailure>>;

/** What an image runs when the container config gives no command/args (its ENTRYPOINT/CMD). */
export interface SimImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  /** `KEY=value` entries. */
  env?: string[];
  workingDir?: string;
  /** The image's StopSignal. @default SIGTERM */
  stopSignal?: string;
  /** The image's own executables beyond the simulated busybox programs (e.g. `nginx`), by path or name. */
  programs?: ReadonlyMap<string, Program>;
  /**
   * What an executable the simulator does not know does: `not-found` (runc's start error / `sh: x:
   * not found`, right for busybox images) or `placeholder` (runs until stopped: an image whose
   * contents are unknown). @default 'not-found'
   */
  unknownExecutable?: 'not-found' | 'placeholder';
}

/** Options of {@link createSimRuntime}. Everything is optional. */
export interface SimRuntimeOptions {
  /** Added latency per RPC (changeable with `setLatency`). @default none */
  latencyMs?: SimLatency;
  /** Injected failures (changeable with `injectFailure`/`clearFailures`). @default none */
  failures?: SimFailures;
  /**
   * Pod IPs are allocated from it. A loopback range (every 127.x address is local on Linux) makes
   * them reachable: servers in simulated containers listen on their pod IP. @default '127.77.0.0/16'
   */
  podSubnet?: string;
  /** Images present from the start, or `'all'` (any reference is present unless `isMissingImage`). @default 'all' */
  images?: readonly string[] | 'all';
  /** Which references are absent and unpullable. @default repository path or tag contains `doesnotexist` or `missing` */
  isMissingImage?: (ref: ImageReference) => boolean;
  /** What PullImage reaches: `open` (every image but the missing ones) or `unreachable` (every pull fails). @default 'open' */
  registry?: SimRegistry;
  /** Registries that answer 401 without the right credentials in `PullImageRequest.auth`. @default none */
  privateRegistries?: readonly SimPrivateRegistry[];
  /**
   * ENTRYPOINT/CMD/ENV of an image, by normalized reference (`docker.io/library/busybox:latest`).
   * @default no entrypoint and CMD `/pause`: a container with neither command nor args blocks until stopped (exit 0 on SIGTERM)
   */
  imageConfig?: (ref: string) => SimImageConfig | undefined;
  /** Random source for `SimFailure.rate`. @default Math.random */
  random?: () => number;
  /** Simulated pull speed when PullImage has no latency of its own (`latencyMs.PullImage`). @default 100 MB/s */
  pullBytesPerSecond?: number;
  /** Reported by Version. @default 'splitlet-sim' */
  runtimeName?: string;
  /** Reported by Version. @default '0.1.0' */
  runtimeVersion?: string;
  /**
   * GetContainerEvents: how many events a subscriber may leave untaken before its stream is ended
   * with `ResourceExhausted` (a slow or stuck subscriber must not hold the simulator's memory; it
   * resubscribes and relists). @default 4096
   */
  maxEventBacklog?: number;
}

/** One RPC as the simulator saw it. */
export interface SimCall {
  method: CriMethod;
  /** `Date.now()` when it arrived. */
  at: number;
}

/** The simulator: a CRI runtime plus knobs for tests and benchmarks. */
export interface SimRuntime extends RuntimeService, ImageService {
  /** Merges latencies into the current ones (`{X: 0}` removes X's latency). */
  setLatency(latency: SimLatency): void;
  /** Makes `method` fail as described (replacing an earlier failure for it). */
  injectFailure(method: CriMethod, failure: SimFailure): void;
  /** Removes injected failures for `method`, or all. */
  clearFailures(method?: CriMethod): void;
  /** The most recent RPCs (up to 10,000), oldest first. */
  calls(): readonly SimCall[];
  /** GetContainerEvents subscriptions open now. */
  readonly eventSubscribers: number;
  /**
   * SIGKILLs every process, clears every timer, ends every event stream and fails waiting calls with
   * `Unavailable`; later calls fail with `Unavailable`. Idempotent.
   */
  close(): Promise<void>;
}

interface SandboxRecord {
  id: string;
  name: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: bigint;
  ip: string;
  hostNetwork: boolean;
  hostname: string;
  logDirectory: string;
  namespaceOptions: NamespaceOption;
  labels: StringMap;
  annotations: StringMap;
  runtimeHandler: string;
}

interface ContainerRecord {
  id: string;
  sandboxId: string;
  name: string;
  metadata: ContainerMetadata;
  imageSpec: ImageSpec;
  imageId: string;
  imageTag: string;
  imageDigest: string;
  command: string[];
  args: string[];
  workingDir: string;
  env: Record<string, string>;
  stdin: boolean;
  /**
   * The container's PID namespace (CRI `namespace_options.pid`): CONTAINER makes its command PID 1
   * (untrapped signals ignored); POD (the zero value), NODE and TARGET share a namespace where it is
   * not PID 1 (untrapped SIGTERM ends it with 143), as on containerd.
   */
  pidNamespace: NamespaceMode;
  stopSignal: SimSignal;
  /** The container's user, image programs and (once started) network; shared with its ExecSyncs. */
  setting: Omit<ContainerSetting, 'podIp' | 'containerKill'>;
  mounts: Mount[];
  labels: StringMap;
  annotations: StringMap;
  resources: LinuxContainerResources | null;
  logPath: string;
  state: ContainerState;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  message: string;
  fs: ContainerFs;
  log: CriLogWriter;
  /** SIGKILL for the container's processes (set while it runs). */
  kill: AbortController | undefined;
  process: SimProcess | undefined;
  /** Resolves once the container is EXITED (set while it runs). */
  exited: Promise<void> | undefined;
}

/** The user a container's processes run as: CRI run_as_user / run_as_group / supplemental_groups (root by default). */
function userOf(sc: CriInput<LinuxContainerSecurityContext> | undefined | null): ContainerSetting['user'] {
  const n = (v: string | number | undefined | null): number => (v === undefined || v === null || v === '' ? 0 : Number(v));
  return { uid: n(sc?.runAsUser?.value), gid: n(sc?.runAsGroup?.value), groups: (sc?.supplementalGroups ?? []).map((g) => n(g)) };
}

/** Where a sandbox's servers listen: its pod IP, or the node's loopback for host-network pods. */
function podIpOf(sb: { ip: string; hostNetwork: boolean }): string {
  return sb.hostNetwork || sb.ip === '' ? '127.0.0.1' : sb.ip;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** How many calls `calls()` keeps. */
export const MAX_CALLS = 10_000;
const DEFAULT_EVENT_BACKLOG = 4096;

/** A sandbox as ListPodSandbox shows it. */
function sandboxItem(sb: SandboxRecord): PodSandbox {
  return {
    id: sb.id,
    metadata: { ...sb.metadata },
    state: sb.state,
    createdAt: String(sb.createdAt),
    labels: { ...sb.labels },
    annotations: { ...sb.annotations },
    runtimeHandler: sb.runtimeHandler,
  };
}

/** A container as ListContainers shows it. */
function containerItem(c: ContainerRecord): Container {
  return {
    id: c.id,
    podSandboxId: c.sandboxId,
    metadata: { ...c.metadata },
    image: { ...c.imageSpec, annotations: { ...c.imageSpec.annotations } },
    imageRef: c.imageId,
    state: c.state,
    createdAt: String(c.createdAt),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    imageId: c.imageId,
  };
}

function newId(): string {
  return randomBytes(32).toString('hex');
}

function str(v: string | undefined | null): string {
  return v ?? '';
}

function stringMap(m: CriInput<StringMap> | undefined | null): StringMap {
  const out: StringMap = {};
  for (const [k, v] of Object.entries(m ?? {})) if (typeof v === 'string') out[k] = v;
  return out;
}

function fillImageSpec(s: CriInput<ImageSpec> | undefined | null): ImageSpec {
  return { image: str(s?.image), annotations: stringMap(s?.annotations), userSpecifiedImage: str(s?.userSpecifiedImage), runtimeHandler: str(s?.runtimeHandler) };
}

function fillNamespaceOption(n: CriInput<NamespaceOption> | undefined | null): NamespaceOption {
  return { network: n?.network ?? 'POD', pid: n?.pid ?? 'POD', ipc: n?.ipc ?? 'POD', targetId: str(n?.targetId) };
}

function fillMount(m: CriInput<Mount>): Mount {
  return {
    containerPath: str(m.containerPath),
    hostPath: str(m.hostPath),
    readonly: m.readonly ?? false,
    selinuxRelabel: m.selinuxRelabel ?? false,
    propagation: m.propagation ?? 'PROPAGATION_PRIVATE',
    recursiveReadOnly: m.recursiveReadOnly ?? false,
    image: m.image == null ? null : fillImageSpec(m.image),
  };
}

function fillResources(r: CriInput<LinuxContainerResources> | undefined | null): LinuxContainerResources | null {
  if (r == null) return null;
  const n = (v: string | undefined): string => (v === undefined || v === '' ? '0' : String(v));
  return {
    cpuPeriod: n(r.cpuPeriod),
    cpuQuota: n(r.cpuQuota),
    cpuShares: n(r.cpuShares),
    memoryLimitInBytes: n(r.memoryLimitInBytes),
    oomScoreAdj: n(r.oomScoreAdj),
    cpusetCpus: str(r.cpusetCpus),
    cpusetMems: str(r.cpusetMems),
    hugepageLimits: (r.hugepageLimits ?? []).map((h) => ({ pageSize: str(h.pageSize), limit: n(h.limit) })),
    unified: stringMap(r.unified),
    memorySwapLimitInBytes: n(r.memorySwapLimitInBytes),
  };
}

/** A label selector as a predicate (read once per List call, not once per record). */
function labelMatcher(selector: CriInput<StringMap> | undefined | null): (labels: StringMap) => boolean {
  const wanted = Object.entries(stringMap(selector));
  if (wanted.length === 0) return () => true;
  return (labels) => wanted.every(([k, v]) => labels[k] === v);
}

/**
 * The records a List call looks at: with the pod-uid label in its selector, only that pod's (from
 * the index, in table order); otherwise the whole table.
 */
function* candidates<T>(table: ReadonlyMap<string, T>, index: PodUidIndex, selector: CriInput<StringMap> | undefined | null): Iterable<T> {
  const uid = selector?.[POD_UID_LABEL];
  if (typeof uid !== 'string') {
    yield* table.values();
    return;
  }
  for (const id of index.get(uid)) {
    const r = table.get(id);
    if (r !== undefined) yield r;
  }
}

class SimRuntimeImpl implements SimRuntime {
  readonly #latency: SimLatency;
  readonly #failures = new Map<CriMethod, SimFailure>();
  readonly #random: () => number;
  readonly #images: SimImageStore;
  readonly #imageConfig: (ref: string) => SimImageConfig | undefined;
  readonly #ips: IpPool;
  readonly #pullBytesPerSecond: number;
  readonly #runtimeName: string;
  readonly #runtimeVersion: string;
  readonly #sandboxes = new Map<string, SandboxRecord>();
  readonly #containers = new Map<string, ContainerRecord>();
  readonly #sandboxesByPod = new PodUidIndex();
  readonly #containersByPod = new PodUidIndex();
  /** Reserved names → id (containerd's name index). */
  readonly #sandboxNames = new Map<string, string>();
  readonly #containerNames = new Map<string, string>();
  /** Each sandbox's containers, in creation order (the statuses a container event carries). */
  readonly #containersBySandbox = new Map<string, Set<ContainerRecord>>();
  readonly #subscribers = new Set<AsyncQueue<ContainerEventResponse>>();
  readonly #maxEventBacklog: number;
  /** ListPodSandbox's and ListContainers' items, made once per record state (see list-items.ts). */
  readonly #sandboxItems = new ListItemCache<SandboxRecord, PodSandboxState, PodSandbox>((sb) => sb.state, sandboxItem, criMessageEncoder('runtime.v1.PodSandbox'));
  readonly #containerItems = new ListItemCache<ContainerRecord, ContainerState, Container>((c) => c.state, containerItem, criMessageEncoder('runtime.v1.Container'));
  readonly #delays = new Set<{ timer: NodeJS.Timeout; resolve: () => void; reject: (e: unknown) => void }>();
  readonly #calls: SimCall[] = [];
  #closed: Promise<void> | undefined;

  constructor(options: SimRuntimeOptions) {
    this.#latency = { ...options.latencyMs };
    for (const [m, f] of Object.entries(options.failures ?? {})) if (f !== undefined) this.injectFailure(m as CriMethod, f);
    this.#random = options.random ?? Math.random;
    this.#images = new SimImageStore({
      images: options.images ?? 'all',
      isMissing: options.isMissingImage ?? defaultIsMissingImage,
      registry: options.registry ?? 'open',
      privateRegistries: options.privateRegistries ?? [],
    });
    this.#imageConfig = options.imageConfig ?? (() => undefined);
    this.#ips = new IpPool(options.podSubnet ?? '127.77.0.0/16');
    this.#pullBytesPerSecond = options.pullBytesPerSecond ?? 100_000_000;
    this.#runtimeName = options.runtimeName ?? 'splitlet-sim';
    this.#runtimeVersion = options.runtimeVersion ?? '0.1.0';
    this.#maxEventBacklog = options.maxEventBacklog ?? DEFAULT_EVENT_BACKLOG;
  }

  // ---- knobs ----

  setLatency(latency: SimLatency): void {
    for (const [k, v] of Object.entries(latency)) {
      if (v === undefined || v <= 0) delete this.#latency[k as CriMethod];
      else this.#latency[k as CriMethod] = v;
    }
  }

  injectFailure(method: CriMethod, failure: SimFailure): void {
    if (parseCriErrorCode(failure.code) === undefined) throw new Error(`unknown CRI error code ${JSON.stringify(failure.code)} for ${method}`);
    this.#failures.set(method, { ...failure });
  }

  clearFailures(method?: CriMethod): void {
    if (method === undefined) this.#failures.clear();
    else this.#failures.delete(method);
  }

  /** The last MAX_CALLS calls, oldest first. */
  calls(): readonly SimCall[] {
    return this.#calls.slice(-MAX_CALLS);
  }

  get eventSubscribers(): number {
    return this.#subscribers.size;
  }

  async close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const d of this.#delays) {
        clearTimeout(d.timer);
        d.reject(this.#closedError());
      }
      this.#delays.clear();
      for (const q of this.#subscribers) q.end();
      this.#subscribers.clear();
      const exits: Promise<void>[] = [];
      for (const c of this.#containers.values()) {
        if (c.kill !== undefined && c.exited !== undefined) {
          c.kill.abort();
          exits.push(c.exited);
        }
      }
      await Promise.all(exits);
    })();
    return this.#closed;
  }

  // ---- plumbing ----

  #closedError(): CriError {
    return new CriError('Unavailable', 'sim-runtime is closed');
  }

  /** Resolves after `ms`, or early when `cancel` aborts; rejects with Unavailable if the runtime closes. */
  #delay(ms: number, cancel?: AbortSignal): Promise<void> {
    if (this.#closed !== undefined) return Promise.reject(this.#closedError());
    if (!(ms > 0) || cancel?.aborted === true) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const entry = {
        timer: setTimeout(() => done(), ms),
        resolve,
        reject,
      };
      const done = (): void => {
        clearTimeout(entry.timer);
        this.#delays.delete(entry);
        cancel?.removeEventListener('abort', done);
        resolve();
      };
      cancel?.addEventListener('abort', done, { once: true });
      this.#delays.add(entry);
    });
  }

  #record(method: CriMethod): void {
    if (this.#closed !== undefined) throw this.#closedError();
    this.#calls.push({ method, at: Date.now() });
    // Trimmed by the batch: removing the oldest at every call once full moved 10,000 entries a call.
    if (this.#calls.length >= 2 * MAX_CALLS) this.#calls.splice(0, this.#calls.length - MAX_CALLS);
  }

  #checkFailure(method: CriMethod): void {
    const f = this.#failures.get(method);
    if (f === undefined) return;
    if (f.rate !== undefined && this.#random() >= f.rate) return;
    if (f.times !== undefined) {
      f.times--;
      if (f.times <= 0) this.#failures.delete(method);
    }
    throw new CriError(parseCriErrorCode(f.code) ?? 'Unknown', f.message ?? `injected failure`, { method });
  }

  #latencyOf(method: CriMethod): number {
    return this.#latency[method] ?? this.#latency.default ?? 0;
  }

  /** The usual entry of an RPC: record, added latency, then an injected failure. */
  async #enter(method: CriMethod): Promise<void> {
    this.#record(method);
    await this.#delay(this.#latencyOf(method));
    this.#checkFailure(method);
  }

  #sandbox(id: string | undefined): SandboxRecord {
    const sb = this.#sandboxes.get(str(id));
    if (sb === undefined) throw new CriError('NotFound', `an error occurred when try to find sandbox "${str(id)}": not found`);
    return sb;
  }

  #container(id: string | undefined): ContainerRecord {
    const c = this.#containers.get(str(id));
    if (c === undefined) throw new CriError('NotFound', `an error occurred when try to find container "${str(id)}": not found`);
    return c;
  }

  #sandboxStatus(sb: SandboxRecord): PodSandboxStatus {
    const ready = sb.state === PodSandboxState.READY;
    return {
      id: sb.id,
      metadata: { ...sb.metadata },
      state: sb.state,
      createdAt: String(sb.createdAt),
      network: { ip: ready && !sb.hostNetwork ? sb.ip : '', additionalIps: [] },
      linux: { namespaces: { options: { ...sb.namespaceOptions } } },
      labels: { ...sb.labels },
      annotations: { ...sb.annotations },
      runtimeHandler: sb.runtimeHandler,
    };
  }

  #containerStatus(c: ContainerRecord): ContainerStatus {
    return {
      id: c.id,
      metadata: { ...c.metadata },
      state: c.state,
      createdAt: String(c.createdAt),
      startedAt: String(c.startedAt),
      finishedAt: String(c.finishedAt),
      exitCode: c.exitCode,
      // containerd reports the image by its first tag and the ref by its repo digest.
      image: { image: c.imageTag, annotations: {}, userSpecifiedImage: c.imageSpec.userSpecifiedImage, runtimeHandler: '' },
      imageRef: c.imageDigest,
      reason: c.reason,
      message: c.message,
      labels: { ...c.labels },
      annotations: { ...c.annotations },
      mounts: c.mounts.map((m) => ({ ...m })),
      logPath: c.logPath,
      resources: c.resources === null ? null : { linux: { ...c.resources } },
      imageId: c.imageId,
    };
  }

  /** The containers of sandbox `id`, oldest first. */
  #containersOf(id: string): ContainerRecord[] {
    return [...(this.#containersBySandbox.get(id) ?? [])];
  }

  /**
   * Sends every subscriber one container event, built once: as containerd does, it carries the
   * sandbox's status and the statuses of every container the sandbox has now (`containerId` is the
   * sandbox id for the sandbox's own events). A subscriber that left more than `maxEventBacklog`
   * events untaken is cut off with `ResourceExhausted`, so it cannot hold the simulator's memory.
   */
  #emit(containerId: string, type: ContainerEventType, sb: SandboxRecord): void {
    if (this.#subscribers.size === 0) return;
    const event: ContainerEventResponse = {
      containerId,
      containerEventType: type,
      createdAt: String(nowNs()),
      podSandboxStatus: this.#sandboxStatus(sb),
      containersStatuses: this.#containersOf(sb.id).map((c) => this.#containerStatus(c)),
    };
    for (const q of this.#subscribers) {
      if (q.size < this.#maxEventBacklog) {
        q.push(event);
        continue;
      }
      this.#subscribers.delete(q);
      q.abort(new CriError('ResourceExhausted', `container event subscriber too slow: ${q.size} events not taken; subscribe again`, { method: 'GetContainerEvents' }));
    }
  }

  /** Removes a container from every table; false when another call removed it first. */
  #forgetContainer(c: ContainerRecord): boolean {
    if (!this.#containers.delete(c.id)) return false;
    this.#containersByPod.delete(c.id, c.labels);
    this.#containersBySandbox.get(c.sandboxId)?.delete(c);
    this.#containerNames.delete(c.name);
    return true;
  }

  /** SIGKILLs a running container and waits until it is EXITED. */
  async #kill(c: ContainerRecord): Promise<void> {
    if (c.state !== ContainerState.RUNNING || c.kill === undefined || c.exited === undefined) return;
    c.kill.abort();
    await c.exited;
  }

  #startFailed(c: ContainerRecord, sb: SandboxRecord, message: string): never {
    c.state = ContainerState.EXITED;
    c.finishedAt = nowNs();
    c.exitCode = 128;
    c.reason = 'StartError';
    c.message = message;
    this.#emit(c.id, ContainerEventType.STOPPED, sb);
    throw new CriError('Unknown', message, { method: 'StartContainer' });
  }

  #onExit(c: ContainerRecord, code: number): void {
    c.log.flush();
    c.kill?.abort(); // PID 1 is gone: the rest of the container's processes die with it
    c.state = ContainerState.EXITED;
    c.finishedAt = nowNs();
    c.exitCode = code;
    c.reason = code === 0 ? 'Completed' : 'Error';
    c.message = '';
    c.process = undefined;
    c.kill = undefined;
    const sb = this.#sandboxes.get(c.sandboxId);
    if (sb !== undefined) this.#emit(c.id, ContainerEventType.STOPPED, sb);
  }

  // ---- RuntimeService ----

  async Version(_request: CriInput<VersionRequest>): Promise<VersionResponse> {
    await this.#enter('Version');
    return { version: '0.1.0', runtimeName: this.#runtimeName, runtimeVersion: this.#runtimeVersion, runtimeApiVersion: 'v1' };
  }

  async Status(_request: CriInput<StatusRequest>): Promise<StatusResponse> {
    await this.#enter('Status');
    return {
      status: {
        conditions: [
          { type: 'RuntimeReady', status: true, reason: '', message: '' },
          { type: 'NetworkReady', status: true, reason: '', message: '' },
        ],
      },
      info: {},
      runtimeHandlers: [],
    };
  }

  async RunPodSandbox(request: CriInput<RunPodSandboxRequest>): Promise<RunPodSandboxResponse> {
    this.#record('RunPodSandbox');
    this.#checkFailure('RunPodSandbox');
    const config = request.config ?? {};
    const md = config.metadata;
    if (md == null || str(md.name) === '' || str(md.uid) === '' || str(md.namespace) === '') {
      throw new CriError('InvalidArgument', 'sandbox config must include metadata with name, uid and namespace');
    }
    const metadata: PodSandboxMetadata = { name: str(md.name), uid: str(md.uid), namespace: str(md.namespace), attempt: md.attempt ?? 0 };
    const runtimeHandler = str(request.runtimeHandler);
    if (runtimeHandler !== '' && runtimeHandler !== 'runc') {
      throw new CriError('Unknown', `failed to get sandbox runtime: no runtime for "${runtimeHandler}" is configured`);
    }
    const id = newId();
    const name = `${metadata.name}_${metadata.namespace}_${metadata.uid}_${metadata.attempt}`;
    // containerd reserves the name first, so a concurrent or retried call for the same attempt fails.
    const holder = this.#sandboxNames.get(name);
    if (holder !== undefined) {
      throw new CriError('Unknown', `failed to reserve sandbox name "${name}": name "${name}" is reserved for "${holder}"`);
    }
    this.#sandboxNames.set(name, id);
    try {
      await this.#delay(this.#latencyOf('RunPodSandbox'));
    } catch (e) {
      this.#sandboxNames.delete(name);
      throw e;
    }
    const namespaceOptions = fillNamespaceOption(config.linux?.securityContext?.namespaceOptions);
    const hostNetwork = namespaceOptions.network === 'NODE';
    let ip = '';
    if (!hostNetwork) {
      const allocated = this.#ips.allocate();
      if (allocated === undefined) {
        this.#sandboxNames.delete(name);
        throw new CriError(
          'Unknown',
          `failed to setup network for sandbox "${id}": plugin type="bridge" failed (add): failed to allocate for range 0: no IP addresses available in range set: ${this.#ips.range}`,
        );
      }
      ip = allocated;
    }
    const sb: SandboxRecord = {
      id,
      name,
      metadata,
      state: PodSandboxState.READY,
      createdAt: nowNs(),
      ip,
      hostNetwork,
      hostname: str(config.hostname) || (hostNetwork ? osHostname() : metadata.name),
      logDirectory: str(config.logDirectory),
      namespaceOptions,
      labels: stringMap(config.labels),
      annotations: stringMap(config.annotations),
      runtimeHandler,
    };
    this.#sandboxes.set(id, sb);
    this.#sandboxesByPod.add(id, sb.labels);
    this.#emit(id, ContainerEventType.CREATED, sb);
    this.#emit(id, ContainerEventType.STARTED, sb);
    return { podSandboxId: id };
  }

  async StopPodSandbox(request: CriInput<StopPodSandboxRequest>): Promise<StopPodSandboxResponse> {
    await this.#enter('StopPodSandbox');
    const sb = this.#sandbox(request.podSandboxId);
    // containerd stops every container of the sandbox with timeout 0 (SIGKILL).
    await Promise.all(this.#containersOf(sb.id).map((c) => this.#kill(c)));
    if (sb.state === PodSandboxState.READY) {
      sb.state = PodSandboxState.NOTREADY;
      if (sb.ip !== '') this.#ips.release(sb.ip);
      this.#emit(sb.id, ContainerEventType.STOPPED, sb);
    }
    return {};
  }

  async RemovePodSandbox(request: CriInput<RemovePodSandboxRequest>): Promise<RemovePodSandboxResponse> {
    await this.#enter('RemovePodSandbox');
    const sb = this.#sandboxes.get(str(request.podSandboxId));
    if (sb === undefined) return {}; // already removed: not an error
    const containers = this.#containersOf(sb.id);
    await Promise.all(containers.map((c) => this.#kill(c)));
    if (sb.state === PodSandboxState.READY) {
      sb.state = PodSandboxState.NOTREADY;
      if (sb.ip !== '') this.#ips.release(sb.ip);
      this.#emit(sb.id, ContainerEventType.STOPPED, sb);
    }
    for (const c of containers) {
      if (!this.#forgetContainer(c)) continue;
      this.#emit(c.id, ContainerEventType.DELETED, sb);
    }
    if (!this.#sandboxes.delete(sb.id)) return {};
    this.#containersBySandbox.delete(sb.id);
    this.#sandboxesByPod.delete(sb.id, sb.labels);
    this.#sandboxNames.delete(sb.name);
    this.#emit(sb.id, ContainerEventType.DELETED, sb);
    return {};
  }

  async PodSandboxStatus(request: CriInput<PodSandboxStatusRequest>): Promise<PodSandboxStatusResponse> {
    await this.#enter('PodSandboxStatus');
    const sb = this.#sandbox(request.podSandboxId);
    const info: StringMap = request.verbose === true ? { info: JSON.stringify({ runtime: this.#runtimeName, hostname: sb.hostname, name: sb.name, simulated: true }) } : {};
    // Like containerd 1.6: no container statuses or timestamp (those are for evented PLEG runtimes).
    return { status: this.#sandboxStatus(sb), info, containersStatuses: [], timestamp: '0' };
  }

  async ListPodSandbox(request: CriInput<ListPodSandboxRequest>): Promise<ListPodSandboxResponse> {
    await this.#enter('ListPodSandbox');
    const f = request.filter;
    const items: Array<EncodedItem<PodSandbox>> = [];
    const matches = labelMatcher(f?.labelSelector);
    for (const sb of candidates(this.#sandboxes, this.#sandboxesByPod, f?.labelSelector)) {
      if (f != null) {
        if (str(f.id) !== '' && sb.id !== f.id) continue;
        if (f.state != null && sb.state !== (f.state.state ?? PodSandboxState.READY)) continue;
        if (!matches(sb.labels)) continue;
      }
      items.push(this.#sandboxItems.get(sb));
    }
    return listReply('items', items);
  }

  async CreateContainer(request: CriInput<CreateContainerRequest>): Promise<CreateContainerResponse> {
    this.#record('CreateContainer');
    this.#checkFailure('CreateContainer');
    const sandboxId = str(request.podSandboxId);
    const sb = this.#sandboxes.get(sandboxId);
    if (sb === undefined) throw new CriError('NotFound', `failed to find sandbox id "${sandboxId}": not found`);
    if (sb.state !== PodSandboxState.READY) {
      throw new CriError('NotFound', `failed to get sandbox container task: no running task found: task ${sb.id} not found`);
    }
    const config = request.config ?? {};
    const md = config.metadata;
    if (md == null || str(md.name) === '') throw new CriError('InvalidArgument', 'container config must include metadata with a name');
    const metadata: ContainerMetadata = { name: str(md.name), attempt: md.attempt ?? 0 };
    const imageSpec = fillImageSpec(config.image);
    const image = imageSpec.image === '' ? undefined : this.#images.status(imageSpec.image);
    if (image === undefined) throw new CriError('NotFound', `failed to resolve image "${imageSpec.image}": not found`);
    // containerd: <container>_<pod>_<namespace>_<uid>_<attempt>, from the request's sandbox config.
    const smd = request.sandboxConfig?.metadata;
    const podName = smd?.name || sb.metadata.name;
    const podNs = smd?.namespace || sb.metadata.namespace;
    const podUid = smd?.uid || sb.metadata.uid;
    const name = `${metadata.name}_${podName}_${podNs}_${podUid}_${metadata.attempt}`;
    const id = newId();
    const holder = this.#containerNames.get(name);
    if (holder !== undefined) throw new CriError('Unknown', `failed to reserve container name "${name}": name "${name}" is reserved for "${holder}"`);
    this.#containerNames.set(name, id);
    try {
      await this.#delay(this.#latencyOf('CreateContainer'));
    } catch (e) {
      this.#containerNames.delete(name);
      throw e;
    }
    const imageTag = image.repoTags[0] ?? imageSpec.image;
    const imgConfig = this.#imageConfig(imageTag) ?? {};
    const env: Record<string, string> = { PATH: DEFAULT_PATH };
    for (const kv of imgConfig.env ?? []) {
      const eq = kv.indexOf('=');
      if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
    env['HOSTNAME'] = sb.hostname;
    env['HOME'] ??= '/root';
    for (const kv of config.envs ?? []) if (str(kv.key) !== '') env[str(kv.key)] = str(kv.value);
    const command = (config.command ?? []).map(String);
    const args = (config.args ?? []).map(String);
    const mounts = (config.mounts ?? []).map(fillMount);
    const logRel = str(config.logPath);
    const logPath = logRel !== '' && sb.logDirectory !== '' ? path.join(sb.logDirectory, logRel) : logRel;
    const stopSignal = parseSignal(imgConfig.stopSignal ?? 'TERM');
    const c: ContainerRecord = {
      id,
      sandboxId: sb.id,
      name,
      metadata,
      imageSpec,
      imageId: image.id,
      imageTag,
      imageDigest: image.repoDigests[0] ?? image.id,
      // containerd/moby: no command → the image's ENTRYPOINT, plus CMD only when args are empty too.
      command: command.length > 0 ? command : (imgConfig.entrypoint ?? []),
      args: command.length === 0 && args.length === 0 ? (imgConfig.cmd ?? (imgConfig.entrypoint === undefined ? ['/pause'] : [])) : args,
      workingDir: str(config.workingDir) || imgConfig.workingDir || '/',
      env,
      stdin: config.stdin ?? false,
      pidNamespace: fillNamespaceOption(config.linux?.securityContext?.namespaceOptions).pid,
      stopSignal: stopSignal === undefined || stopSignal === 'EXIT' ? 'TERM' : stopSignal,
      setting: {
        user: userOf(config.linux?.securityContext),
        imagePrograms: imgConfig.programs ?? new Map(),
        unknown: imgConfig.unknownExecutable ?? 'not-found',
        processes: new Set(),
      },
      mounts,
      labels: stringMap(config.labels),
      annotations: stringMap(config.annotations),
      resources: fillResources(config.linux?.resources),
      logPath,
      state: ContainerState.CREATED,
      createdAt: nowNs(),
      startedAt: 0n,
      finishedAt: 0n,
      exitCode: 0,
      reason: '',
      message: '',
      fs: new ContainerFs(
        mounts.filter((m) => m.hostPath !== '').map((m) => ({ containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readonly })),
        sb.hostname,
      ),
      log: new CriLogWriter(logPath === '' ? undefined : logPath),
      kill: undefined,
      process: undefined,
      exited: undefined,
    };
    if (c.command.length === 0 && c.args.length === 0) {
      this.#containerNames.delete(name);
      throw new CriError('Unknown', `failed to generate container "${id}" spec: no command specified`);
    }
    this.#containers.set(id, c);
    this.#containersByPod.add(id, c.labels);
    let ofSandbox = this.#containersBySandbox.get(sb.id);
    if (ofSandbox === undefined) this.#containersBySandbox.set(sb.id, (ofSandbox = new Set()));
    ofSandbox.add(c);
    this.#emit(id, ContainerEventType.CREATED, sb);
    return { containerId: id };
  }

  async StartContainer(request: CriInput<StartContainerRequest>): Promise<StartContainerResponse> {
    await this.#enter('StartContainer');
    const c = this.#container(request.containerId);
    if (c.state !== ContainerState.CREATED) {
      throw new CriError('Unknown', `failed to set starting state for container "${c.id}": container is in ${c.state} state`);
    }
    const sb = this.#sandbox(c.sandboxId);
    if (sb.state !== PodSandboxState.READY) throw new CriError('Unknown', `sandbox container "${sb.id}" is not running`);
    try {
      c.log.open();
    } catch (e) {
      this.#startFailed(
        c,
        sb,
        `failed to create containerd task: failed to create container loggers: failed to create and open log file: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    const kill = new AbortController();
    let proc: SimProcess;
    try {
      proc = spawnProcess(
        [...c.command, ...c.args],
        {
          fs: c.fs,
          hostname: sb.hostname,
          env: c.env,
          cwd: c.workingDir,
          stdout: c.log.sink('stdout'),
          stderr: c.log.sink('stderr'),
          stdinOpen: c.stdin,
          kill: kill.signal,
          container: { ...c.setting, podIp: podIpOf(sb), containerKill: kill.signal },
        },
        { pid1: c.pidNamespace === 'CONTAINER', signals: true },
      );
    } catch (e) {
      if (!(e instanceof ExecNotFoundError)) throw e;
      this.#startFailed(
        c,
        sb,
        `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: ${e.message}: unknown`,
      );
    }
    c.kill = kill;
    c.process = proc;
    c.state = ContainerState.RUNNING;
    c.startedAt = nowNs();
    c.exited = proc.exited.then((code) => this.#onExit(c, code));
    this.#emit(c.id, ContainerEventType.STARTED, sb);
    return {};
  }

  async StopContainer(request: CriInput<StopContainerRequest>): Promise<StopContainerResponse> {
    await this.#enter('StopContainer');
    const c = this.#container(request.containerId);
    if (c.state !== ContainerState.RUNNING || c.exited === undefined) return {};
    const timeoutS = Number(request.timeout ?? 0);
    if (timeoutS > 0) {
      c.process?.signal(c.stopSignal);
      const exited = new AbortController();
      const waitExit = c.exited.then(() => exited.abort());
      await this.#delay(timeoutS * 1000, exited.signal);
      void waitExit;
    }
    await this.#kill(c);
    return {};
  }

  async RemoveContainer(request: CriInput<RemoveContainerRequest>): Promise<RemoveContainerResponse> {
    await this.#enter('RemoveContainer');
    const c = this.#containers.get(str(request.containerId));
    if (c === undefined) return {}; // already removed: not an error
    await this.#kill(c);
    if (!this.#forgetContainer(c)) return {};
    const sb = this.#sandboxes.get(c.sandboxId);
    if (sb !== undefined) this.#emit(c.id, ContainerEventType.DELETED, sb);
    return {};
  }

  async ListContainers(request: CriInput<ListContainersRequest>): Promise<ListContainersResponse> {
    await this.#enter('ListContainers');
    const f = request.filter;
    const containers: Array<EncodedItem<Container>> = [];
    const matches = labelMatcher(f?.labelSelector);
    for (const c of candidates(this.#containers, this.#containersByPod, f?.labelSelector)) {
      if (f != null) {
        if (str(f.id) !== '' && c.id !== f.id) continue;
        if (str(f.podSandboxId) !== '' && c.sandboxId !== f.podSandboxId) continue;
        if (f.state != null && c.state !== (f.state.state ?? ContainerState.CREATED)) continue;
        if (!matches(c.labels)) continue;
      }
      containers.push(this.#containerItems.get(c));
    }
    return listReply('containers', containers);
  }

  async ContainerStatus(request: CriInput<ContainerStatusRequest>): Promise<ContainerStatusResponse> {
    await this.#enter('ContainerStatus');
    const c = this.#container(request.containerId);
    const info: StringMap = request.verbose === true ? { info: JSON.stringify({ sandboxID: c.sandboxId, name: c.name, argv: [...c.command, ...c.args], simulated: true }) } : {};
    return { status: this.#containerStatus(c), info };
  }

  async ExecSync(request: CriInput<ExecSyncRequest>, options?: CallOptions): Promise<ExecSyncResponse> {
    await this.#enter('ExecSync');
    const c = this.#container(request.containerId);
    if (c.state !== ContainerState.RUNNING || c.kill === undefined) {
      throw new CriError('Unknown', `failed to exec in container: container is in ${c.state} state`);
    }
    const cmd = (request.cmd ?? []).map(String);
    const sb = this.#sandbox(c.sandboxId);
    const stdout: string[] = [];
    const stderr: string[] = [];
    const sink = (into: string[]): OutputSink => ({ write: (t) => into.push(t) });
    const execKill = new AbortController();
    const signals = [c.kill.signal, execKill.signal];
    if (options?.signal !== undefined) signals.push(options.signal);
    let proc: SimProcess;
    try {
      proc = spawnProcess(
        cmd,
        {
          fs: c.fs,
          hostname: sb.hostname,
          env: c.env,
          cwd: c.workingDir,
          stdout: sink(stdout),
          stderr: sink(stderr),
          stdinOpen: false,
          kill: AbortSignal.any(signals),
          container: { ...c.setting, podIp: podIpOf(sb), containerKill: c.kill.signal },
        },
        { pid1: false },
      );
    } catch (e) {
      if (!(e instanceof ExecNotFoundError)) throw e;
      throw new CriError(
        'Unknown',
        `failed to exec in container: failed to start exec "${newId()}": OCI runtime exec failed: exec failed: unable to start container process: ${e.message}: unknown`,
      );
    }
    const timeoutS = Number(request.timeout ?? 0);
    if (timeoutS > 0) {
      const finished = new AbortController();
      let done = false;
      void proc.exited.then(() => {
        done = true;
        finished.abort();
      });
      await this.#delay(timeoutS * 1000, finished.signal).catch((e: unknown) => {
        execKill.abort();
        throw e;
      });
      if (!done) {
        execKill.abort();
        await proc.exited;
        throw new CriError('DeadlineExceeded', `failed to exec in container: timeout ${timeoutS}s exceeded: context deadline exceeded`);
      }
    }
    const exitCode = await proc.exited;
    return { stdout: Buffer.from(stdout.join('')), stderr: Buffer.from(stderr.join('')), exitCode };
  }

  GetContainerEvents(_request: CriInput<GetEventsRequest>, options?: CallOptions): ContainerEventStream {
    const queue = new AsyncQueue<ContainerEventResponse>(() => this.#subscribers.delete(queue));
    try {
      this.#record('GetContainerEvents');
      this.#checkFailure('GetContainerEvents');
    } catch (e) {
      queue.fail(e);
      const established = Promise.reject(e);
      established.catch(() => undefined);
      return { established, [Symbol.asyncIterator]: () => queue };
    }
    const signal = options?.signal;
    if (signal?.aborted === true) queue.end();
    else {
      this.#subscribers.add(queue);
      signal?.addEventListener(
        'abort',
        () => {
          this.#subscribers.delete(queue);
          queue.end();
        },
        { once: true },
      );
    }
    return { established: Promise.resolve(), [Symbol.asyncIterator]: () => queue };
  }

  // ---- ImageService ----

  async ListImages(request: CriInput<ListImagesRequest>): Promise<ListImagesResponse> {
    await this.#enter('ListImages');
    const wanted = str(request.filter?.image?.image);
    if (wanted === '') return { images: this.#images.list() };
    const image = this.#images.status(wanted);
    return { images: image === undefined ? [] : [image] };
  }

  async ImageStatus(request: CriInput<ImageStatusRequest>): Promise<ImageStatusResponse> {
    await this.#enter('ImageStatus');
    const ref = str(request.image?.image);
    if (ref === '') throw new CriError('InvalidArgument', 'image spec must not be empty');
    const image = this.#images.status(ref) ?? null;
    const info: StringMap = request.verbose === true && image !== null ? { info: JSON.stringify({ imageSpec: { config: {} }, simulated: true }) } : {};
    return { image, info };
  }

  async PullImage(request: CriInput<PullImageRequest>): Promise<PullImageResponse> {
    this.#record('PullImage');
    const ref = str(request.image?.image);
    // The pull takes `latencyMs.PullImage` when set, else the simulated transfer of the image's layers.
    const latency = this.#latency.PullImage ?? (this.#latency.default ?? 0) + (ref === '' ? 0 : this.#images.pullTimeMs(ref, this.#pullBytesPerSecond));
    await this.#delay(latency);
    this.#checkFailure('PullImage');
    if (ref === '') throw new CriError('InvalidArgument', 'image spec must not be empty');
    return { imageRef: this.#images.pull(ref, request.auth) };
  }

  async RemoveImage(request: CriInput<RemoveImageRequest>): Promise<RemoveImageResponse> {
    await this.#enter('RemoveImage');
    const ref = str(request.image?.image);
    if (ref !== '') this.#images.remove(ref);
    return {};
  }

  async ImageFsInfo(_request: CriInput<ImageFsInfoRequest>): Promise<ImageFsInfoResponse> {
    await this.#enter('ImageFsInfo');
    const images = this.#images.list();
    const used = images.reduce((sum, i) => sum + Number(i.size), 0);
    return {
      imageFilesystems: [
        {
          timestamp: String(nowNs()),
          fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
          usedBytes: { value: String(used) },
          inodesUsed: { value: String(images.length * 100) },
        },
      ],
      containerFilesystems: [],
    };
  }
}

/**
 * Creates an in-memory CRI runtime. Use it in-process, or put it behind gRPC with `serveCri`.
 * Every method is safe to call concurrently; `close()` it when done (it owns timers).
 *
 * @example
 * const sim = createSimRuntime({ latencyMs: { PullImage: 200 } });
 * const server = await serveCri(sim, '/tmp/sim.sock');
 */
export function createSimRuntime(options: SimRuntimeOptions = {}): SimRuntime {
  return new SimRuntimeImpl(options);
}
