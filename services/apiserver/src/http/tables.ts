/**
 * Server-side `Table` output, so `kubectl get` prints the real columns: pods (NAME READY STATUS
 * RESTARTS AGE, wide: IP NODE NOMINATED NODE READINESS GATES), nodes, events, namespaces and a
 * NAME AGE default for the rest.
 *
 * Models pkg/printers/internalversion/printers.go (AddHandlers: podColumnDefinitions,
 * nodeColumnDefinitions, eventColumnDefinitions) and apiserver's tableconvertor default.
 */
import type { Pod } from '@splitlet/api';
import { humanDuration, podRow } from '@splitlet/kube';
import type { ResourceDef } from '../registry/resources.js';
import type { KubeObject } from '../storage/object-store.js';

interface Column {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date';
  readonly format?: string;
  readonly description: string;
  /** 0 = default columns, 1 = `-o wide`. */
  readonly priority: number;
}

type Cells = (o: KubeObject, now: number) => unknown[];

const col = (name: string, type: Column['type'], description: string, priority = 0, format?: string): Column => ({
  name,
  type,
  description,
  priority,
  ...(format === undefined ? {} : { format }),
});

const age = (o: KubeObject, now: number): string => {
  const t = o.metadata?.['creationTimestamp'];
  return typeof t === 'string' ? humanDuration(now - Date.parse(t)) : '<unknown>';
};

const NAME = col('Name', 'string', 'Name must be unique within a namespace.', 0, 'name');
const AGE = col('Age', 'string', 'CreationTimestamp is a timestamp representing the server time when this object was created.');

const TABLES: Readonly<Record<string, { columns: Column[]; cells: Cells }>> = {
  pods: {
    columns: [
      NAME,
      col('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
      col('Status', 'string', 'The aggregate status of the containers in this pod.'),
      col('Restarts', 'string', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'),
      AGE,
      col('IP', 'string', 'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', 1),
      col('Node', 'string', 'NodeName is a request to schedule this pod onto a specific node.', 1),
      col('Nominated Node', 'string', 'nominatedNodeName is set when this pod preempts other pods on the node.', 1),
      col('Readiness Gates', 'string', 'If specified, all readiness gates will be evaluated for pod readiness.', 1),
    ],
    cells: (o, now) => {
      const r = podRow(o as unknown as Pod, now);
      return [r.name, r.ready, r.status, r.restarts, r.age, r.ip, r.node, r.nominatedNode, r.readinessGates];
    },
  },
  nodes: {
    columns: [
      NAME,
      col('Status', 'string', 'The status of the node'),
      col('Roles', 'string', 'The roles of the node'),
      AGE,
      col('Version', 'string', 'Kubelet Version reported by the node.'),
      col('Internal-IP', 'string', 'List of addresses reachable to the node.', 1),
      col('External-IP', 'string', 'List of addresses reachable to the node.', 1),
      col('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', 1),
      col('Kernel-Version', 'string', 'Kernel Version reported by the node.', 1),
      col('Container-Runtime', 'string', 'Container Runtime Version reported by the node.', 1),
    ],
    cells: (o, now) => {
      const status = (o['status'] as Record<string, unknown> | undefined) ?? {};
      const conditions = (status['conditions'] as { type: string; status: string }[] | undefined) ?? [];
      const ready = conditions.find((c) => c.type === 'Ready');
      let st = ready === undefined ? 'Unknown' : ready.status === 'True' ? 'Ready' : 'NotReady';
      if ((o['spec'] as { unschedulable?: boolean } | undefined)?.unschedulable === true) st += ',SchedulingDisabled';
      const labels = (o.metadata?.['labels'] as Record<string, string> | undefined) ?? {};
      const roles = Object.keys(labels)
        .filter((k) => k.startsWith('node-role.kubernetes.io/'))
        .map((k) => k.slice('node-role.kubernetes.io/'.length))
        .sort();
      const info = (status['nodeInfo'] as Record<string, string> | undefined) ?? {};
      const addrs = (status['addresses'] as { type: string; address: string }[] | undefined) ?? [];
      const addr = (t: string): string => addrs.find((a) => a.type === t)?.address ?? '<none>';
      return [
        o.metadata?.['name'],
        st,
        roles.length > 0 ? roles.join(',') : '<none>',
        age(o, now),
        info['kubeletVersion'] ?? '',
        addr('InternalIP'),
        addr('ExternalIP'),
        info['osImage'] ?? '<unknown>',
        info['kernelVersion'] ?? '<unknown>',
        info['containerRuntimeVersion'] ?? '<unknown>',
      ];
    },
  },
  events: {
    columns: [
      col('Last Seen', 'string', 'Time when last this event was observed.'),
      col('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future.'),
      col('Reason', 'string', "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
      col('Object', 'string', 'The object that this event is about.'),
      col('Subobject', 'string', 'The subobject (e.g. a container) that this event is about.', 1),
      col('Source', 'string', 'The component reporting this event.', 1),
      col('Message', 'string', 'A human-readable description of the status of this operation.'),
      col('First Seen', 'string', 'The time at which the event was first recorded.', 1),
      col('Count', 'string', 'The number of times this event has occurred.', 1),
      // The event's name is a wide column (kubectl get events prints LAST SEEN TYPE REASON OBJECT MESSAGE).
      col('Name', 'string', 'Name must be unique within a namespace.', 1, 'name'),
    ],
    cells: (o, now) => {
      const e = o as Record<string, unknown>;
      const last = (e['lastTimestamp'] ?? e['eventTime'] ?? o.metadata?.['creationTimestamp']) as string | undefined;
      const first = (e['firstTimestamp'] ?? e['eventTime'] ?? o.metadata?.['creationTimestamp']) as string | undefined;
      const inv = (e['involvedObject'] as Record<string, string> | undefined) ?? {};
      const src = (e['source'] as Record<string, string> | undefined) ?? {};
      const ago = (t: string | undefined): string => (t === undefined ? '<unknown>' : humanDuration(now - Date.parse(t)));
      return [
        ago(last),
        e['type'] ?? '',
        e['reason'] ?? '',
        `${String(inv['kind'] ?? '').toLowerCase()}/${inv['name'] ?? ''}`,
        inv['fieldPath'] ?? '',
        [src['component'], src['host']].filter((x) => x !== undefined && x !== '').join(', '),
        (typeof e['message'] === 'string' ? e['message'] : '').trim(),
        ago(first),
        typeof e['count'] === 'number' && e['count'] > 0 ? e['count'] : 1,
        o.metadata?.['name'],
      ];
    },
  },
  configmaps: {
    columns: [NAME, col('Data', 'integer', 'Data contains the configuration data.'), AGE],
    cells: (o, now) => [
      o.metadata?.['name'],
      Object.keys((o['data'] as object | undefined) ?? {}).length + Object.keys((o['binaryData'] as object | undefined) ?? {}).length,
      age(o, now),
    ],
  },
  secrets: {
    columns: [NAME, col('Type', 'string', 'Used to facilitate programmatic handling of secret data.'), col('Data', 'integer', 'Data contains the secret data.'), AGE],
    cells: (o, now) => [o.metadata?.['name'], o['type'] ?? 'Opaque', Object.keys((o['data'] as object | undefined) ?? {}).length, age(o, now)],
  },
  leases: {
    columns: [NAME, col('Holder', 'string', 'holderIdentity contains the identity of the holder of a current lease.'), AGE],
    cells: (o, now) => [o.metadata?.['name'], (o['spec'] as { holderIdentity?: string } | undefined)?.holderIdentity ?? '', age(o, now)],
  },
  namespaces: {
    columns: [NAME, col('Status', 'string', 'The status of the namespace'), AGE],
    cells: (o, now) => [o.metadata?.['name'], (o['status'] as { phase?: string } | undefined)?.phase ?? '', age(o, now)],
  },
};

const DEFAULT_TABLE = { columns: [NAME, AGE], cells: ((o, now) => [o.metadata?.['name'], age(o, now)]) as Cells };

/** True when the request's Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return accept !== undefined && /as=Table/.test(accept);
}

/** A `meta.k8s.io/v1` Table of `items`, rows carrying their object's metadata as kubectl expects. */
export function toTable(r: ResourceDef, items: readonly KubeObject[], listMeta: Record<string, unknown>, now: number, withHeaders = true): Record<string, unknown> {
  const t = TABLES[r.name] ?? DEFAULT_TABLE;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    ...(withHeaders ? { columnDefinitions: t.columns } : { columnDefinitions: [] }),
    rows: items.map((o) => ({
      cells: t.cells(o, now),
      object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata ?? {} },
    })),
  };
}
