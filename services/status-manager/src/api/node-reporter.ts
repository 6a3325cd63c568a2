/**
 * Registers this node with the API server and keeps its status and Lease current (cluster mode).
 *
 * Models pkg/kubelet/kubelet_node_status.go (registerWithAPIServer, syncNodeStatus: every 10 s, a
 * PATCH of `nodes/<node>/status` only when something changed or 5 min passed), nodestatus/setters.go
 * (capacity/allocatable, addresses, nodeInfo, the Ready/MemoryPressure/DiskPressure/PIDPressure
 * conditions with the kubelet's reasons and messages) and pkg/kubelet/nodelease (the Lease
 * `kube-node-lease/<node>`, holderIdentity = node, 40 s, renewed every 10 s, owned by the Node).
 * Capacity and allocatable come from the node's own record (`sl_node_capacity`, volume-manager).
 */
import { readFileSync } from 'node:fs';
import { arch, hostname, networkInterfaces, release } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import type { NodeCapacity, NodeRuntimeStatus } from '@splitlet/api';
import { errorMessage } from '@splitlet/api';
import { sleep, type Clock } from '@splitlet/service';
import type { Logger } from '@splitlet/telemetry';
import { kubeError, STRATEGIC_MERGE_PATCH, uidOf, type KubeRest } from './kube-rest.js';

/** nodeStatusUpdateFrequency. */
export const NODE_STATUS_UPDATE_MS = 10_000;
/** nodeStatusReportFrequency. */
export const NODE_STATUS_REPORT_MS = 300_000;
/** nodeLeaseDurationSeconds, renewed every 0.25 × of it. */
export const LEASE_DURATION_SECONDS = 40;
export const LEASE_RENEW_MS = 10_000;
/** The kubelet version the Node reports. */
export const KUBELET_VERSION = 'v1.32.0-splitlet';

type Json = Record<string, unknown>;

/** Dependencies of {@link NodeReporter}. */
export interface NodeReporterOptions {
  readonly api: KubeRest;
  readonly node: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The node's capacity record, or undefined while it is not published yet. */
  readonly capacity: () => Promise<NodeCapacity | undefined>;
  /** The container runtime's state as cri-adapter last reported it; undefined: not reported (yet). */
  readonly runtime?: () => Promise<NodeRuntimeStatus | undefined>;
  /** `containerRuntimeVersion`, e.g. `containerd://2.0.0`. */
  readonly runtimeVersion?: string;
  /** nodeStatusUpdateFrequency. @default {@link NODE_STATUS_UPDATE_MS} */
  readonly statusUpdateMs?: number;
  /** nodeStatusReportFrequency. @default {@link NODE_STATUS_REPORT_MS} */
  readonly statusReportMs?: number;
  /** nodeLeaseDurationSeconds; the Lease is renewed every quarter of it. @default {@link LEASE_DURATION_SECONDS} */
  readonly leaseDurationSeconds?: number;
}

/**
 * The node's record is stale (its volume-manager stopped measuring) after this many measuring
 * periods: Ready turns False.
 */
export const NODE_RECORD_STALE_MS = 60_000;

/** The node's status computation and the calls that report it. */
export class NodeReporter {
  readonly #o: NodeReporterOptions;
  #nodeUid: string | undefined;
  #lastStatus: Json | undefined;
  #lastReportAt = 0;
  readonly #conditions = new Map<string, Json>();
  #leaseRenewedAt: number | undefined;

  constructor(options: NodeReporterOptions) {
    this.#o = options;
  }

  /** When the Lease was last created or renewed (clock ms), undefined before the first time. */
  get leaseRenewedAt(): number | undefined {
    return this.#leaseRenewedAt;
  }

  /** The registered Node's uid (after `register`). */
  get nodeUid(): string | undefined {
    return this.#nodeUid;
  }

  /**
   * Creates the Node, or finds the existing one (AlreadyExists). Returns false while the capacity
   * record is missing (the kubelet registers with its capacity).
   */
  async register(): Promise<boolean> {
    const capacity = await this.#o.capacity();
    if (capacity === undefined) return false;
    const { node } = this.#o;
    const body = { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: this.#labels() }, spec: {}, status: this.#status(capacity, await this.#o.runtime?.()) };
    const res = await this.#o.api.request('POST', '/api/v1/nodes', body);
    if (res.status === 201 || res.status === 200) {
      this.#nodeUid = uidOf(res.body);
      this.#o.logger.info('Successfully registered node', { node });
    } else if (res.status === 409) {
      const got = await this.#o.api.request('GET', `/api/v1/nodes/${encodeURIComponent(node)}`);
      if (got.status !== 200) throw kubeError(`GET node ${node}`, got);
      this.#nodeUid = uidOf(got.body);
      this.#o.logger.info('Node was previously registered', { node });
    } else throw kubeError(`Unable to register node with API server: POST node ${node}`, res);
    this.#lastStatus = undefined;
    return true;
  }

  /** syncNodeStatus: PATCHes the status when it changed or the report period passed. Returns whether it patched. */
  async syncStatus(): Promise<boolean> {
    if (this.#nodeUid === undefined && !(await this.register())) return false;
    const capacity = await this.#o.capacity();
    if (capacity === undefined) return false;
    const status = this.#status(capacity, await this.#o.runtime?.());
    const now = this.#o.clock.now();
    if (
      this.#lastStatus !== undefined &&
      isDeepStrictEqual(withoutHeartbeats(status), withoutHeartbeats(this.#lastStatus)) &&
      now - this.#lastReportAt < (this.#o.statusReportMs ?? NODE_STATUS_REPORT_MS)
    )
      return false;
    const res = await this.#o.api.request('PATCH', `/api/v1/nodes/${encodeURIComponent(this.#o.node)}/status`, { status }, STRATEGIC_MERGE_PATCH);
    if (res.status === 404) {
      this.#nodeUid = undefined;
      throw kubeError(`error getting node "${this.#o.node}"`, res);
    }
    if (res.status !== 200) throw kubeError(`PATCH node ${this.#o.node} status`, res);
    this.#lastStatus = status;
    this.#lastReportAt = now;
    return true;
  }

  /** Renews (or creates) the node's Lease. */
  async renewLease(): Promise<void> {
    const { api, node } = this.#o;
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encodeURIComponent(node)}`;
    const renewTime = new Date(this.#o.clock.now()).toISOString().replace('Z', '000Z');
    const got = await api.request('GET', path);
    const spec = { holderIdentity: node, leaseDurationSeconds: this.leaseDurationSeconds, renewTime };
    if (got.status === 404) {
      const owner = this.#nodeUid === undefined ? {} : { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: this.#nodeUid }] };
      const res = await api.request('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: node, namespace: 'kube-node-lease', ...owner },
        spec,
      });
      if (res.status !== 201 && res.status !== 200) throw kubeError(`failed to create lease kube-node-lease/${node}`, res);
      this.#leaseRenewedAt = this.#o.clock.now();
      return;
    }
    if (got.status !== 200) throw kubeError(`failed to get lease kube-node-lease/${node}`, got);
    const lease = got.body as Json;
    const res = await api.request('PUT', path, { ...lease, spec: { ...(lease['spec'] as Json | undefined), ...spec } });
    if (res.status !== 200) throw kubeError(`failed to update lease kube-node-lease/${node}`, res);
    this.#leaseRenewedAt = this.#o.clock.now();
  }

  /** nodeLeaseDurationSeconds. */
  get leaseDurationSeconds(): number {
    return this.#o.leaseDurationSeconds ?? LEASE_DURATION_SECONDS;
  }

  /** Runs registration, status and Lease loops until `signal` aborts. Resolves when they stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const loop = async (name: string, every: number, fn: () => Promise<unknown>): Promise<void> => {
      while (!signal.aborted) {
        try {
          await fn();
        } catch (e) {
          this.#o.logger.warn(`${name} failed`, { node: this.#o.node, err: errorMessage(e) });
        }
        await sleep(every, signal);
      }
    };
    await Promise.all([
      loop('Error updating node status, will retry', this.#o.statusUpdateMs ?? NODE_STATUS_UPDATE_MS, () => this.syncStatus()),
      // nodelease: renewInterval = 0.25 × the lease duration (10 s of 40 s).
      loop('failed to renew lease', this.#o.leaseDurationSeconds === undefined ? LEASE_RENEW_MS : this.#o.leaseDurationSeconds * 250, () => this.renewLease()),
    ]);
  }

  #labels(): Record<string, string> {
    return { 'kubernetes.io/hostname': this.#o.node, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': goArch(arch()) };
  }

  #status(capacity: NodeCapacity, runtime: NodeRuntimeStatus | undefined): Json {
    const now = new Date(this.#o.clock.now()).toISOString().replace(/\.\d+Z$/, 'Z');
    const conditions = nodeConditions(capacity, this.#o.clock.now(), runtime).map((c) => this.#condition(c.type, c.status, c.reason, c.message, now));
    return {
      capacity: capacity.capacity,
      allocatable: capacity.allocatable,
      conditions,
      addresses: addresses(),
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: readOr('/etc/machine-id', ''),
        systemUUID: '',
        bootID: readOr('/proc/sys/kernel/random/boot_id', ''),
        kernelVersion: release(),
        osImage: osImage(),
        containerRuntimeVersion: this.#o.runtimeVersion ?? 'unknown',
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: goArch(arch()),
      },
    };
  }

  /** A condition whose lastTransitionTime moves only when its status changes. */
  #condition(type: string, status: string, reason: string, message: string, now: string): Json {
    const prev = this.#conditions.get(type);
    const c = { type, status, lastHeartbeatTime: now, lastTransitionTime: prev !== undefined && prev['status'] === status ? prev['lastTransitionTime'] : now, reason, message };
    this.#conditions.set(type, c);
    return c;
  }
}

/** One computed node condition, before its times. */
export interface NodeConditionValue {
  readonly type: 'MemoryPressure' | 'DiskPressure' | 'PIDPressure' | 'Ready';
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
}

/**
 * The node's conditions from its records: the pressure flags the node's eviction thresholds set
 * (volume-manager measures them every 10 s); Ready while that record is fresh and the container
 * runtime is up (cri-adapter's record, when there is one: not ready, or older than a minute, is
 * NotReady with the kubelet's runtime error).
 *
 * Models nodestatus/setters.go MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition
 * and ReadyCondition (reasons and messages verbatim).
 */
export function nodeConditions(record: NodeCapacity, nowMs: number, runtime?: NodeRuntimeStatus): NodeConditionValue[] {
  const p = record.pressure;
  const isStale = (at: string): boolean => {
    const age = nowMs - Date.parse(at);
    return !Number.isFinite(age) || age > NODE_RECORD_STALE_MS;
  };
  const errors: string[] = [];
  if (runtime !== undefined) {
    if (isStale(runtime.observedAt))
      errors.push(`container runtime status check may not have completed yet: not reported by cri-adapter on ${record.node} since ${runtime.observedAt}`);
    else if (!runtime.ready) errors.push(runtime.message || 'container runtime is down');
  }
  if (isStale(record.observedAt)) errors.push(`node status not measured since ${record.observedAt}: volume-manager on ${record.node} is not running`);
  return [
    p?.memory === true
      ? { type: 'MemoryPressure', status: 'True', reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' }
      : { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
    p?.disk === true
      ? { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' }
      : { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
    p?.pid === true
      ? { type: 'PIDPressure', status: 'True', reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' }
      : { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
    errors.length > 0
      ? // utilerrors.NewAggregate of the errors: the one message, or "[e1, e2]".
        { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: errors.length === 1 ? (errors[0] as string) : `[${errors.join(', ')}]` }
      : { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' },
  ];
}

function withoutHeartbeats(status: Json): Json {
  return { ...status, conditions: (status['conditions'] as Json[]).map(({ lastHeartbeatTime: _h, ...c }) => c) };
}

function addresses(): Json[] {
  const out: Json[] = [];
  for (const list of Object.values(networkInterfaces())) {
    const ip = list?.find((a) => a.family === 'IPv4' && !a.internal);
    if (ip !== undefined && out.length === 0) out.push({ type: 'InternalIP', address: ip.address });
  }
  if (out.length === 0) out.push({ type: 'InternalIP', address: '127.0.0.1' });
  out.push({ type: 'Hostname', address: hostname() });
  return out;
}

function osImage(): string {
  const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readOr('/etc/os-release', ''));
  return m?.[1] ?? 'Unknown';
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return fallback;
  }
}

function goArch(a: string): string {
  return a === 'x64' ? 'amd64' : a === 'ia32' ? '386' : a;
}
