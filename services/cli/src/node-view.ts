/**
 * What the CLI shows: a node's pods as v1 Pods with their status, read from the buckets each
 * process publishes (status-manager's statuses, sync-loop's desired pods and kill requests).
 */
import { Buckets, DesiredPod, KillRequest, KubeEventMessage, Keys, PodStatusRecord, Streams, Subjects, kubeEventsOf, type KubeEvent } from '@splitlet/api';
import type { Pod } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';

/** A pod as the CLI lists it. */
export interface PodView {
  pod: Pod;
  /** A kill is pending and the pod has not finished. */
  terminating: boolean;
  /** The W3C trace context of the pod's creation episode (from its desired record). */
  creationTrace?: Record<string, string> | undefined;
}

/** Every pod of the node: those with a status, plus desired pods not yet reported (Pending). */
export async function listPods(bus: Bus, node: string): Promise<PodView[]> {
  const [statusKv, desiredKv, killKv] = await Promise.all([bus.kv(Buckets.status, PodStatusRecord), bus.kv(Buckets.desired, DesiredPod), bus.kv(Buckets.kill, KillRequest)]);
  const [statuses, desired, kills] = await Promise.all([statusKv.list(Keys.nodePrefix(node)), desiredKv.list(Keys.nodePrefix(node)), killKv.list(Keys.nodePrefix(node))]);
  const killed = new Set(kills.map((k) => k.value?.uid).filter((u): u is string => u !== undefined));
  const byUid = new Map<string, PodView>();
  for (const e of statuses) {
    const r = e.value;
    if (!r) continue;
    byUid.set(r.uid, { pod: { ...r.pod, status: r.status }, terminating: killed.has(r.uid) && !r.finished });
  }
  for (const e of desired) {
    const d = e.value;
    if (!d) continue;
    const uid = d.pod.metadata.uid;
    const known = byUid.get(uid);
    if (known) {
      // The desired spec is newer than the one the status was written with.
      byUid.set(uid, { pod: { ...d.pod, status: known.pod.status ?? {} }, terminating: known.terminating, creationTrace: d.creationTrace });
    } else {
      byUid.set(uid, { pod: { ...d.pod, status: d.pod.status ?? { phase: 'Pending' } }, terminating: killed.has(uid), creationTrace: d.creationTrace });
    }
  }
  return [...byUid.values()].sort((a, b) => {
    const an = `${a.pod.metadata.namespace}/${a.pod.metadata.name}`;
    const bn = `${b.pod.metadata.namespace}/${b.pod.metadata.name}`;
    return an.localeCompare(bn);
  });
}

/** Finds a pod by name (`<name>` or `<name>-<node>`) and namespace. */
export function findPod(pods: PodView[], name: string, namespace: string, node: string): PodView | undefined {
  return (
    pods.find((p) => p.pod.metadata.name === name && p.pod.metadata.namespace === namespace) ??
    pods.find((p) => p.pod.metadata.name === `${name}-${node}` && p.pod.metadata.namespace === namespace)
  );
}

/** The recorded events of one pod, oldest first. */
export async function podEvents(bus: Bus, node: string, uid: string): Promise<KubeEvent[]> {
  const out: KubeEvent[] = [];
  await bus.readStream(KubeEventMessage, Streams.events, Subjects.events(node, uid), (m) => out.push(...kubeEventsOf(m)));
  return out;
}
