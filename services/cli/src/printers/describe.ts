/**
 * `describe pod`: the kubectl describe layout (status, containers, conditions, volumes, events).
 * Models kubectl pkg/describe describePod, describeContainers and DescribeEvents.
 */
import type { Container, ContainerState, ContainerStatus, KubeEvent, Pod } from '@splitlet/api';
import { formatTable, humanDuration } from './pod-table.js';

/** RFC1123Z-like time as kubectl prints it: `Sun, 29 Nov 2026 10:45:54 +0000`. */
export function kubectlTime(iso: string | undefined): string {
  if (!iso) return '<unknown>';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${days[d.getUTCDay()]}, ${p(d.getUTCDate())} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

class Out {
  readonly lines: string[] = [];
  kv(indent: number, key: string, value: string, width = 18): void {
    const pad = ' '.repeat(indent);
    this.lines.push(`${pad}${`${key}:`.padEnd(Math.max(width - indent, key.length + 2))}${value}`.trimEnd());
  }
  line(indent: number, text: string): void {
    this.lines.push(`${' '.repeat(indent)}${text}`.trimEnd());
  }
  map(indent: number, key: string, m: Record<string, string> | undefined, width = 18): void {
    const entries = Object.entries(m ?? {}).sort(([a], [b]) => a.localeCompare(b));
    if (entries.length === 0) return this.kv(indent, key, '<none>', width);
    entries.forEach(([k, v], i) => {
      if (i === 0) this.kv(indent, key, `${k}=${v}`, width);
      else this.line(Math.max(width, key.length + 2 + indent), `${k}=${v}`);
    });
  }
}

function describeState(out: Out, indent: number, title: string, s: ContainerState | undefined): void {
  if (s?.running) {
    out.kv(indent, title, 'Running');
    out.kv(indent + 2, 'Started', kubectlTime(s.running.startedAt));
  } else if (s?.waiting) {
    out.kv(indent, title, 'Waiting');
    if (s.waiting.reason) out.kv(indent + 2, 'Reason', s.waiting.reason);
    if (s.waiting.message) out.kv(indent + 2, 'Message', s.waiting.message);
  } else if (s?.terminated) {
    out.kv(indent, title, 'Terminated');
    if (s.terminated.reason) out.kv(indent + 2, 'Reason', s.terminated.reason);
    if (s.terminated.message) out.kv(indent + 2, 'Message', s.terminated.message);
    out.kv(indent + 2, 'Exit Code', String(s.terminated.exitCode));
    if (s.terminated.signal) out.kv(indent + 2, 'Signal', String(s.terminated.signal));
    out.kv(indent + 2, 'Started', kubectlTime(s.terminated.startedAt));
    out.kv(indent + 2, 'Finished', kubectlTime(s.terminated.finishedAt));
  } else {
    out.kv(indent, title, title === 'State' ? 'Waiting' : '');
  }
}

function describeContainers(out: Out, heading: string, specs: Container[], statuses: ContainerStatus[]): void {
  if (specs.length === 0) return;
  out.line(0, `${heading}:`);
  for (const c of specs) {
    const st = statuses.find((s) => s.name === c.name);
    out.line(2, `${c.name}:`);
    if (st?.containerID) out.kv(4, 'Container ID', st.containerID);
    out.kv(4, 'Image', c.image ?? '');
    if (st) out.kv(4, 'Image ID', st.imageID);
    const ports = (c.ports ?? []).map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`);
    out.kv(4, 'Port', ports.length ? ports.join(', ') : '<none>');
    const hostPorts = (c.ports ?? []).map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`);
    out.kv(4, 'Host Port', hostPorts.length ? hostPorts.join(', ') : '<none>');
    if (c.command?.length) {
      out.line(4, 'Command:');
      for (const a of c.command) out.line(6, a);
    }
    if (c.args?.length) {
      out.line(4, 'Args:');
      for (const a of c.args) out.line(6, a);
    }
    describeState(out, 4, 'State', st?.state);
    if (st?.lastState && Object.keys(st.lastState).length > 0) describeState(out, 4, 'Last State', st.lastState);
    out.kv(4, 'Ready', st?.ready ? 'True' : 'False');
    out.kv(4, 'Restart Count', String(st?.restartCount ?? 0));
    const limits = c.resources?.limits;
    const requests = c.resources?.requests;
    if (limits && Object.keys(limits).length) {
      out.line(4, 'Limits:');
      for (const [k, v] of Object.entries(limits)) out.kv(6, k, v);
    }
    if (requests && Object.keys(requests).length) {
      out.line(4, 'Requests:');
      for (const [k, v] of Object.entries(requests)) out.kv(6, k, v);
    }
    const env = c.env ?? [];
    if (env.length === 0) out.kv(4, 'Environment', '<none>');
    else {
      out.line(4, 'Environment:');
      for (const e of env) {
        // Values from secrets are never shown (kubectl shows the reference only).
        const v = e.value ?? (e.valueFrom?.fieldRef ? ` (${e.valueFrom.fieldRef.apiVersion ?? 'v1'}:${e.valueFrom.fieldRef.fieldPath})` : '<set to a reference>');
        out.line(6, `${e.name}:${e.value !== undefined ? ' ' : ''}${v}`);
      }
    }
    const mounts = c.volumeMounts ?? [];
    if (mounts.length === 0) out.kv(4, 'Mounts', '<none>');
    else {
      out.line(4, 'Mounts:');
      for (const m of mounts) out.line(6, `${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'})`);
    }
  }
}

/** Aggregates identical events (kubectl shows `Age (xN over T)`). */
function eventRows(events: KubeEvent[], now: number): string[][] {
  type Agg = { e: KubeEvent; count: number; first: number; last: number };
  const agg = new Map<string, Agg>();
  for (const e of events) {
    const key = `${e.eventType}|${e.reason}|${e.message}|${e.source.component}`;
    const t = Date.parse(e.timestamp);
    const a = agg.get(key);
    if (a) {
      a.count++;
      a.last = Math.max(a.last, t);
      a.first = Math.min(a.first, t);
    } else agg.set(key, { e, count: 1, first: t, last: t });
  }
  return [...agg.values()]
    .sort((a, b) => a.last - b.last)
    .map((a) => {
      const age = a.count > 1 ? `${humanDuration(now - a.last)} (x${a.count} over ${humanDuration(now - a.first)})` : humanDuration(now - a.last);
      return [a.e.eventType, a.e.reason, age, a.e.source.component, a.e.message];
    });
}

/** The full `describe pod` text. */
export function describePod(pod: Pod, events: KubeEvent[], now: number, terminating: boolean): string {
  const out = new Out();
  const st = pod.status ?? {};
  out.kv(0, 'Name', pod.metadata.name ?? '');
  out.kv(0, 'Namespace', pod.metadata.namespace ?? 'default');
  out.kv(0, 'Priority', String(pod.spec.priority ?? 0));
  if (pod.spec.serviceAccountName) out.kv(0, 'Service Account', pod.spec.serviceAccountName);
  out.kv(0, 'Node', `${pod.spec.nodeName ?? '<none>'}/${st.hostIP ?? ''}`);
  out.kv(0, 'Start Time', st.startTime ? kubectlTime(st.startTime) : '<unknown>');
  out.map(0, 'Labels', pod.metadata.labels);
  out.map(0, 'Annotations', pod.metadata.annotations);
  const terminal = st.phase === 'Succeeded' || st.phase === 'Failed';
  out.kv(0, 'Status', (pod.metadata.deletionTimestamp || terminating) && !terminal ? 'Terminating' : (st.phase ?? 'Pending'));
  if (st.reason) out.kv(0, 'Reason', st.reason);
  if (st.message) out.kv(0, 'Message', st.message);
  out.kv(0, 'IP', st.podIP ?? '');
  out.line(0, 'IPs:');
  if (!st.podIPs?.length) out.line(2, '<none>');
  for (const ip of st.podIPs ?? []) out.kv(2, 'IP', ip.ip, 6);
  describeContainers(out, 'Init Containers', pod.spec.initContainers ?? [], st.initContainerStatuses ?? []);
  describeContainers(out, 'Containers', pod.spec.containers, st.containerStatuses ?? []);
  const conds = st.conditions ?? [];
  if (conds.length) {
    out.line(0, 'Conditions:');
    const t = formatTable(
      ['Type', 'Status'],
      conds.map((c) => [c.type, c.status]),
    );
    for (const l of t.trimEnd().split('\n')) out.line(2, l);
  }
  const vols = pod.spec.volumes ?? [];
  if (vols.length === 0) out.kv(0, 'Volumes', '<none>');
  else {
    out.line(0, 'Volumes:');
    for (const v of vols) {
      out.line(2, `${v.name}:`);
      if (v.emptyDir !== undefined) {
        out.kv(4, 'Type', "EmptyDir (a temporary directory that shares a pod's lifetime)", 16);
        out.kv(4, 'Medium', v.emptyDir?.medium ?? '', 16);
        out.kv(4, 'SizeLimit', v.emptyDir?.sizeLimit ?? '<unset>', 16);
      } else if (v.hostPath) {
        out.kv(4, 'Type', 'HostPath (bare host directory volume)', 16);
        out.kv(4, 'Path', v.hostPath.path, 16);
        out.kv(4, 'HostPathType', v.hostPath.type ?? '', 16);
      } else {
        const kind = Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
        out.kv(4, 'Type', kind, 16);
      }
    }
  }
  out.kv(0, 'QoS Class', st.qosClass ?? '', 29);
  out.map(0, 'Node-Selectors', pod.spec.nodeSelector, 29);
  const tols = (pod.spec.tolerations ?? []).map(
    (t) => `${t.key ?? ''}${t.value ? `=${t.value}` : ''}:${t.effect ?? ''} op=${t.operator ?? 'Equal'}${t.tolerationSeconds !== undefined ? ` for ${t.tolerationSeconds}s` : ''}`,
  );
  out.kv(0, 'Tolerations', tols.length ? tols[0]! : '<none>', 29);
  for (const t of tols.slice(1)) out.line(29, t);
  const rows = eventRows(events, now);
  if (rows.length === 0) out.kv(0, 'Events', '<none>');
  else {
    out.line(0, 'Events:');
    const header = ['Type', 'Reason', 'Age', 'From', 'Message'];
    const sep = header.map((h) => '-'.repeat(h.length));
    const t = formatTable(header, [sep, ...rows]);
    for (const l of t.trimEnd().split('\n')) out.line(2, l);
  }
  return out.lines.join('\n') + '\n';
}
