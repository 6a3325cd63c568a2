/**
 * Pod admission against this node: OS, resource fit, node affinity/selector, node name, host ports and
 * NoExecute taints. The first failure wins.
 *
 * Models pkg/kubelet/lifecycle/predicate.go (predicateAdmitHandler.Admit, generalFilter) and
 * pkg/scheduler (AdmissionCheck: noderesources.Fits, nodeaffinity, nodename, nodeports).
 */
import type { Pod, PodSpec } from '@splitlet/api';
import { podRequests, type ResourceAmounts } from './pod-requests.js';
import { isStaticPod } from './pod-source.js';
import { resourceAmount } from './quantity.js';

/**
 * A node taint.
 *
 * Models k8s.io/api/core/v1 Taint.
 */
export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
}

/**
 * What admission needs to know about the node.
 *
 * Models pkg/kubelet/lifecycle/predicate.go (the node from getNodeAnyWayFunc, as NodeInfo).
 */
export interface AdmissionNode {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Allocatable resources (`cpu`, `memory`, `pods`, `ephemeral-storage`, extended). A missing one is 0. */
  readonly allocatable: Readonly<Record<string, string | number>>;
  readonly taints?: readonly Taint[];
  /** The node OS (runtime.GOOS). @default 'linux' */
  readonly os?: string;
}

/**
 * The admit result: admitted, or a reason (`OutOfcpu`, `NodeAffinity` …) and message.
 *
 * Models pkg/kubelet/lifecycle/interfaces.go (PodAdmitResult).
 */
export type AdmitResult = { readonly admit: true } | { readonly admit: false; readonly reason: string; readonly message: string };

type Failure = { reason: string; message: string };

const OUT_OF: Readonly<Record<string, string>> = {
  cpu: 'OutOfcpu',
  memory: 'OutOfmemory',
  'ephemeral-storage': 'OutOfephemeral-storage',
  pods: 'OutOfpods',
};
const BASE_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage', 'pods']);

/**
 * Decides whether `pod` may run on `node` next to `existingPods` (the admitted, non-terminal pods
 * without `pod` itself; not mutated afterwards: their requests are remembered per pod object).
 * Order, first failure wins:
 * 1. pod label `kubernetes.io/os` ≠ node OS → `PodOSSelectorNodeLabelDoesNotMatch`;
 * 2. `spec.os.name` ≠ node OS → `PodOSNotSupported`;
 * 3. resources: `pods` count, `cpu`, `memory`, `ephemeral-storage`, extended (sorted by name) →
 *    `OutOf<name>` "Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d";
 * 4. `NodeAffinity` (nodeSelector and required node affinity), `NodeName`, `NodePorts` →
 *    "Predicate <Name> failed: <desc>";
 * 5. an untolerated NoExecute taint (non-static pods only) → `TaintToleration`.
 *
 * Models predicateAdmitHandler.Admit.
 */
export function canAdmitPod(node: AdmissionNode, existingPods: readonly Pod[], pod: Pod): AdmitResult {
  const os = node.os ?? 'linux';
  const podOsLabel = pod.metadata.labels?.['kubernetes.io/os'];
  if (podOsLabel !== undefined && podOsLabel !== os) {
    return {
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  }
  if (pod.spec.os !== undefined && pod.spec.os.name !== os) {
    return { admit: false, reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  }
  const failures = [...resourceFailures(node, existingPods, pod), ...predicateFailures(node, existingPods, pod)];
  const first = failures[0];
  return first === undefined ? { admit: true } : { admit: false, reason: first.reason, message: first.message };
}

function insufficient(name: string, requested: number, used: number, capacity: number): Failure {
  return {
    reason: OUT_OF[name] ?? `OutOf${name}`,
    message: `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  };
}

function resourceFailures(node: AdmissionNode, existingPods: readonly Pod[], pod: Pod): Failure[] {
  const out: Failure[] = [];
  const alloc = (name: string): number => {
    const q = node.allocatable[name];
    return q === undefined ? 0 : resourceAmount(name, q);
  };
  const allowedPods = alloc('pods');
  if (existingPods.length + 1 > allowedPods) out.push(insufficient('pods', 1, existingPods.length, allowedPods));

  const req = podRequests(pod);
  // Extended resources the node does not know are dropped (removeMissingExtendedResources).
  for (const name of Object.keys(req)) {
    if (!BASE_RESOURCES.has(name) && name.includes('/') && node.allocatable[name] === undefined) delete req[name];
  }
  const used: Record<string, number> = {};
  for (const p of existingPods) {
    for (const [k, v] of Object.entries(existingRequests(p))) used[k] = (used[k] ?? 0) + v;
  }
  const scalar = Object.keys(req)
    .filter((n) => !BASE_RESOURCES.has(n))
    .sort();
  if ((req['cpu'] ?? 0) === 0 && (req['memory'] ?? 0) === 0 && (req['ephemeral-storage'] ?? 0) === 0 && scalar.length === 0) {
    return out;
  }
  for (const name of ['cpu', 'memory', 'ephemeral-storage', ...scalar]) {
    const r = req[name] ?? 0;
    const u = used[name] ?? 0;
    const cap = alloc(name);
    if (r > 0 && r > cap - u) out.push(insufficient(name, r, u, cap));
  }
  return out;
}

/** {@link podRequests} of pods already weighed as existing ones, by pod object (see {@link existingRequests}). */
const requestsByPod = new WeakMap<object, { readonly amounts: Readonly<ResourceAmounts> } | { readonly error: unknown }>();

/**
 * The requests of an existing pod, parsed once per pod object: every admission weighs the new pod
 * against all existing ones, so parsing them each time would cost O(pods) quantity parses per
 * admitted pod. A pod's quantities do not change (`existingPods` must not be mutated; a changed pod
 * is a new object); one that does not parse throws the same error every time.
 */
function existingRequests(pod: Pod): Readonly<ResourceAmounts> {
  let r = requestsByPod.get(pod);
  if (r === undefined) {
    try {
      r = { amounts: podRequests(pod) };
    } catch (e) {
      r = { error: e };
    }
    requestsByPod.set(pod, r);
  }
  if ('error' in r) throw r.error;
  return r.amounts;
}

function predicate(name: string, desc: string): Failure {
  return { reason: name, message: `Predicate ${name} failed: ${desc}` };
}

function predicateFailures(node: AdmissionNode, existingPods: readonly Pod[], pod: Pod): Failure[] {
  const out: Failure[] = [];
  if (!matchesNodeSelectorAndAffinity(pod.spec, node)) {
    out.push(predicate('NodeAffinity', "node(s) didn't match Pod's node affinity/selector"));
  }
  if (pod.spec.nodeName !== undefined && pod.spec.nodeName !== '' && pod.spec.nodeName !== node.name) {
    out.push(predicate('NodeName', "node(s) didn't match the requested node name"));
  }
  if (hostPortsConflict(existingPods, pod)) {
    out.push(predicate('NodePorts', "node(s) didn't have free ports for the requested pod ports"));
  }
  if (!isStaticPod(pod) && hasUntoleratedNoExecuteTaint(node.taints ?? [], pod.spec.tolerations ?? [])) {
    out.push(predicate('TaintToleration', "node(s) had taints that the pod didn't tolerate"));
  }
  return out;
}

interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}
interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/**
 * True when the node's labels satisfy `spec.nodeSelector` and the required node affinity terms
 * (OR of terms; each term ANDs its expressions; operators In, NotIn, Exists, DoesNotExist, Gt, Lt;
 * `matchFields` on `metadata.name`).
 *
 * Models component-helpers/scheduling/corev1/nodeaffinity (GetRequiredNodeAffinity(pod).Match).
 */
export function matchesNodeSelectorAndAffinity(spec: PodSpec, node: Pick<AdmissionNode, 'name' | 'labels'>): boolean {
  const labels = node.labels ?? {};
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const affinity = spec.affinity as { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } } | undefined;
  const required = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined) return true;
  return (required.nodeSelectorTerms ?? []).some((term) => {
    const exprs = term.matchExpressions ?? [];
    const fields = term.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) return false;
    return exprs.every((r) => matchRequirement(r, labels[r.key])) && fields.every((r) => r.key === 'metadata.name' && matchRequirement(r, node.name));
  });
}

function matchRequirement(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1) return false;
      const a = Number.parseInt(value, 10);
      const b = Number.parseInt(values[0] ?? '', 10);
      if (Number.isNaN(a) || Number.isNaN(b)) return false;
      return r.operator === 'Gt' ? a > b : a < b;
    }
    default:
      return false;
  }
}

function hostPorts(pod: Pod): Array<{ ip: string; protocol: string; port: number }> {
  const containers = [...pod.spec.containers, ...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')];
  const out: Array<{ ip: string; protocol: string; port: number }> = [];
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if (p.hostPort === undefined || p.hostPort <= 0) continue;
      out.push({ ip: p.hostIP === undefined || p.hostIP === '' ? '0.0.0.0' : p.hostIP, protocol: p.protocol ?? 'TCP', port: p.hostPort });
    }
  }
  return out;
}

function hostPortsConflict(existingPods: readonly Pod[], pod: Pod): boolean {
  const wanted = hostPorts(pod);
  if (wanted.length === 0) return false;
  const used = existingPods.flatMap(hostPorts);
  return wanted.some((w) => used.some((u) => u.port === w.port && u.protocol === w.protocol && (u.ip === w.ip || u.ip === '0.0.0.0' || w.ip === '0.0.0.0')));
}

interface TolerationLike {
  key?: string | undefined;
  operator?: string | undefined;
  value?: string | undefined;
  effect?: string | undefined;
}

function tolerates(t: TolerationLike, taint: Taint): boolean {
  if ((t.effect ?? '') !== '' && t.effect !== taint.effect) return false;
  if ((t.key ?? '') !== '' && t.key !== taint.key) return false;
  switch (t.operator ?? '') {
    case '':
    case 'Equal':
      return (t.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

function hasUntoleratedNoExecuteTaint(taints: readonly Taint[], tolerations: readonly TolerationLike[]): boolean {
  return taints.some((taint) => taint.effect === 'NoExecute' && !tolerations.some((t) => tolerates(t, taint)));
}
