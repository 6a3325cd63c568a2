/**
 * Who may publish and subscribe to what: one NATS identity per process, each limited to the
 * subjects it owns or consumes (docs/architecture.md, "Identities and permissions").
 *
 * The lists were measured, not guessed: every process was run under `splitlet up` against a
 * nats-server with protocol tracing (`-V`) through a pod's whole life (apply, Running, probes,
 * logs, exec, delete) and each connection's PUB/SUB subjects were collected; they are written here
 * by what they are for (a KV bucket read, a KV bucket written, a durable consumed, a stream read,
 * a request made, a request served), so a process's list reads like its row in the architecture
 * table. `test/integration/nats-permissions.test.ts` checks the matrix against a real server.
 *
 * JetStream's API subjects each identity needs:
 * - every process: `$JS.API.INFO` (jetstreamManager) and `$JS.API.STREAM.INFO.*` (the topology
 *   check at connect); creating and updating streams and buckets is the `admin` identity's alone
 *   (`splitlet up` provisions before the processes start; compose/k8s run `splitlet provision`);
 * - a KV read: the message get (`STREAM.MSG.GET`, or `DIRECT.GET` where the bucket allows direct
 *   gets), and an ordered consumer for `watch`/`keys`/`list` (`CONSUMER.CREATE`, its flow control
 *   `$JS.FC`, `CONSUMER.DELETE` when it is reset after a reconnect);
 * - a KV write: `$KV.<bucket>.<keys>`, and `STREAM.MSG.DELETE` of the bucket for removing its old
 *   delete markers (one message at a time: never a purge, see `deleteStoredMessage`);
 * - a durable pull consumer: `CONSUMER.CREATE` / `INFO` / `MSG.NEXT` and the acks `$JS.ACK`; and
 *   `CONSUMER.DELETE` of it where a new holder takes it over (`ConsumeOptions.takeOver`);
 * - replies come back on the connection's own `_INBOX.>`; a responder answers on the reply subject
 *   it was given (`allow_responses`: only to messages it received, any number of progress beats).
 */
import { Buckets, Consumers, DEFAULT_PARTITIONS, Streams, nodeToken } from '@splitlet/api';

/** The NATS identities of a splitlet installation: `admin` (provisioning, operators), the CLI, and one per process type. */
export const IDENTITIES = ['admin', 'cli', 'config-source', 'sync-loop', 'pod-worker', 'pleg', 'volume-manager', 'status-manager', 'prober', 'cri-adapter', 'apiserver'] as const;
export type Identity = (typeof IDENTITIES)[number];

/** One identity's permissions, in nats-server's terms. */
export interface NatsPermissions {
  /** Subjects it may publish to (`>` for admin). */
  readonly publish: readonly string[];
  /** Subjects it may subscribe to. */
  readonly subscribe: readonly string[];
  /** May answer requests it received (on their reply subject), with progress beats. */
  readonly allowResponses: boolean;
}

/** What the subjects are scoped to. */
export interface PermissionScope {
  /** Restrict every `sl.<node>.…` subject and node-keyed KV key to this node; without it any node (`*`). */
  readonly node?: string | undefined;
  /** The embedded API server's bucket. @default sl_api */
  readonly apiBucket?: string | undefined;
  /** The node's pod-worker partitions (`PARTITIONS`), whose durables a pod-worker takes over. @default DEFAULT_PARTITIONS */
  readonly partitions?: number | undefined;
}

const API = '$JS.API';

/** Reading a KV bucket: get, and watch/keys/list through an ordered consumer. */
function kvRead(bucket: string): string[] {
  const s = `KV_${bucket}`;
  return [
    `${API}.STREAM.MSG.GET.${s}`,
    `${API}.DIRECT.GET.${s}`,
    `${API}.DIRECT.GET.${s}.>`,
    `${API}.CONSUMER.CREATE.${s}`,
    `${API}.CONSUMER.CREATE.${s}.>`,
    `${API}.CONSUMER.INFO.${s}.>`,
    `${API}.CONSUMER.DELETE.${s}.>`,
    `$JS.FC.${s}.>`,
  ];
}

/**
 * Writing a KV bucket's keys (put, create, update, delete): `keys` is the key pattern (node-scoped);
 * plus deleting the bucket's old delete markers (a writer compacts what it deleted).
 */
function kvWrite(bucket: string, keys: string): string[] {
  return [`$KV.${bucket}.${keys}`, `${API}.STREAM.MSG.DELETE.KV_${bucket}`];
}

/** Consuming a durable pull consumer on a stream (create if missing, info, fetch, ack). */
function durable(stream: string): string[] {
  return [
    `${API}.CONSUMER.CREATE.${stream}.>`,
    `${API}.CONSUMER.DURABLE.CREATE.${stream}.>`,
    `${API}.CONSUMER.INFO.${stream}.>`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.>`,
    `$JS.ACK.${stream}.>`,
  ];
}

/** Reading a stream with an ordered (ephemeral) consumer: `splitlet events`, `trace`. */
function streamRead(stream: string): string[] {
  return [`${API}.CONSUMER.CREATE.${stream}.>`, `${API}.CONSUMER.MSG.NEXT.${stream}.>`, `${API}.CONSUMER.DELETE.${stream}.>`, `$JS.FC.${stream}.>`];
}

/**
 * The permissions of one identity. `admin` may do anything; every other identity gets exactly the
 * subjects listed in its branch plus what every process needs (the topology check, its inbox, its
 * spans and its dead letters).
 */
export function identityPermissions(id: Identity, scope: PermissionScope = {}): NatsPermissions {
  if (id === 'admin') return { publish: ['>'], subscribe: ['>'], allowResponses: true };
  const n = scope.node === undefined ? '*' : nodeToken(scope.node);
  const sl = (rest: string): string => `sl.${n}.${rest}`;
  const keys = `${n}.>`;
  const nodeKey = n;
  const rpc = (rest: string): string => sl(`rpc.${rest}`);
  const common = [`${API}.INFO`, `${API}.STREAM.INFO.*`];
  const inbox = ['_INBOX.>'];
  /** Every node process: the topology check, its spans (`SL_SPANS`) and its dead letters (`SL_DLQ`). */
  const proc = (name: string): string[] => [...common, sl('spans.*'), sl(`dlq.${name}`)];
  const events = sl('events.*');
  switch (id) {
    case 'cli':
      // Read-mostly: every bucket and the history streams; writes only through the requests
      // apply / delete (config-source), logs and exec (cri-adapter).
      return {
        publish: [
          ...common,
          ...Object.values(Buckets).flatMap(kvRead),
          ...streamRead(Streams.events),
          ...streamRead(Streams.spans),
          ...streamRead(Streams.deadLetter),
          // Any node on this NATS, as `--node-name` picks (its reads are not node-scoped either).
          'sl.*.rpc.config.apply',
          'sl.*.rpc.config.delete',
          'sl.*.rpc.logs.read',
          'sl.*.rpc.runtime.exec',
        ],
        subscribe: inbox,
        allowResponses: false,
      };
    case 'config-source':
      return {
        publish: [...proc(id), sl('config.*'), ...kvRead(Buckets.apiPods), ...kvWrite(Buckets.apiPods, keys), events],
        subscribe: [...inbox, rpc('config.apply'), rpc('config.delete')],
        allowResponses: true,
      };
    case 'sync-loop':
      return {
        publish: [
          ...proc(id),
          ...durable(Streams.config),
          // A new leader takes its config consumer over (recreates it at the ack floor).
          `${API}.CONSUMER.DELETE.${Streams.config}.${scope.node === undefined ? '*' : Consumers.syncLoopConfig(scope.node)}`,
          ...durable(Streams.pleg),
          sl('work.*.*'),
          events,
          sl('status.*'),
          rpc('volume.cleanup'),
          rpc('runtime.garbageCollect'),
          ...[Buckets.desired, Buckets.kill, Buckets.node, Buckets.syncLoopLeader, Buckets.worker, Buckets.runtime, Buckets.probe, Buckets.nodeCapacity].flatMap(kvRead),
          ...kvWrite(Buckets.desired, keys),
          ...kvWrite(Buckets.kill, keys),
          ...kvWrite(Buckets.node, nodeKey),
          ...kvWrite(Buckets.node, `${n}._applied`),
          ...kvWrite(Buckets.syncLoopLeader, nodeKey),
        ],
        subscribe: inbox,
        allowResponses: false,
      };
    case 'pod-worker':
      return {
        publish: [
          ...proc(id),
          ...durable(Streams.work),
          // The new owner of a partition takes its durable over (recreates it at the ack floor).
          ...(scope.node === undefined
            ? [`${API}.CONSUMER.DELETE.${Streams.work}.*`]
            : Array.from({ length: scope.partitions ?? DEFAULT_PARTITIONS }, (_, pp) => `${API}.CONSUMER.DELETE.${Streams.work}.${Consumers.podWorkerPartition(scope.node!, pp)}`)),
          sl('status.*'),
          events,
          rpc('runtime.syncPod'),
          rpc('runtime.killPod'),
          rpc('volume.mount'),
          rpc('volume.unmount'),
          ...[Buckets.desired, Buckets.kill, Buckets.worker, Buckets.leases, Buckets.members, Buckets.runtime, Buckets.status, Buckets.probe].flatMap(kvRead),
          ...kvWrite(Buckets.worker, keys),
          ...kvWrite(Buckets.leases, keys),
          ...kvWrite(Buckets.members, keys),
          ...kvWrite(Buckets.kill, keys),
        ],
        subscribe: inbox,
        allowResponses: false,
      };
    case 'pleg':
      return {
        publish: [...proc(id), sl('pleg.*'), rpc('runtime.relist'), ...[Buckets.runtime, Buckets.desired].flatMap(kvRead), ...kvWrite(Buckets.runtime, keys)],
        // cri-adapter's relist pokes, and its runtime events (the evented PLEG) with their stream state.
        subscribe: [...inbox, sl('plegrelist'), sl('runtimeevents.*')],
        allowResponses: false,
      };
    case 'volume-manager':
      return {
        publish: [...proc(id), events, ...[Buckets.volumes, Buckets.nodeCapacity].flatMap(kvRead), ...kvWrite(Buckets.volumes, keys), ...kvWrite(Buckets.nodeCapacity, nodeKey)],
        subscribe: [...inbox, rpc('volume.mount'), rpc('volume.unmount'), rpc('volume.cleanup')],
        allowResponses: true,
      };
    case 'status-manager':
      return {
        publish: [
          ...proc(id),
          ...durable(Streams.status),
          // A restarted status-manager takes its status consumer over (recreates it at the ack floor).
          `${API}.CONSUMER.DELETE.${Streams.status}.${scope.node === undefined ? '*' : Consumers.statusManager(scope.node)}`,
          ...durable(Streams.events),
          ...[Buckets.status, Buckets.nodeCapacity, Buckets.nodeRuntime].flatMap(kvRead),
          ...kvWrite(Buckets.status, keys),
        ],
        subscribe: inbox,
        allowResponses: false,
      };
    case 'prober':
      return {
        publish: [...proc(id), events, ...[Buckets.probe, Buckets.desired, Buckets.runtime].flatMap(kvRead), ...kvWrite(Buckets.probe, keys)],
        subscribe: inbox,
        allowResponses: false,
      };
    case 'cri-adapter':
      return {
        publish: [
          ...proc(id),
          events,
          sl('plegrelist'),
          sl('runtimeevents.*'),
          ...[Buckets.criBackoff, Buckets.criFences, Buckets.nodeRuntime].flatMap(kvRead),
          ...kvWrite(Buckets.criBackoff, `${n}`),
          ...kvWrite(Buckets.criBackoff, keys),
          ...kvWrite(Buckets.criFences, keys),
          ...kvWrite(Buckets.nodeRuntime, nodeKey),
        ],
        subscribe: [...inbox, ...['syncPod', 'killPod', 'getPodStatus', 'relist', 'garbageCollect', 'exec'].map((op) => rpc(`runtime.${op}`)), rpc('logs.read')],
        allowResponses: true,
      };
    case 'apiserver': {
      // Its own bucket (the cluster's objects), which it creates and compacts itself; pods/log reads
      // the log files of any node's cri-adapter (the kubelet's containerLogs).
      const b = scope.apiBucket ?? 'sl_api';
      return {
        publish: [
          `${API}.INFO`,
          `${API}.STREAM.INFO.KV_${b}`,
          `${API}.STREAM.CREATE.KV_${b}`,
          `${API}.STREAM.UPDATE.KV_${b}`,
          `${API}.STREAM.MSG.DELETE.KV_${b}`,
          ...kvRead(b),
          `$KV.${b}.>`,
          'sl.*.rpc.logs.read',
        ],
        subscribe: inbox,
        allowResponses: false,
      };
    }
  }
}

/** The topology buckets an identity writes (and so compacts): read off its permissions. */
export function writtenBuckets(id: Identity): string[] {
  if (id === 'admin') return [];
  const out = new Set<string>();
  for (const s of identityPermissions(id).publish) if (s.startsWith('$KV.')) out.add(s.split('.')[1]!);
  return [...out];
}

/** One identity's credentials. */
export interface NatsCredential {
  readonly user: string;
  readonly password: string;
}

/** The `authorization { users = [...] }` block of a nats-server config giving each identity its permissions. */
export function renderAuthorization(credentials: ReadonlyMap<Identity, NatsCredential>, scope: PermissionScope = {}): string {
  const q = (s: string): string => JSON.stringify(s);
  const list = (xs: readonly string[]): string => `[${[...new Set(xs)].map(q).join(', ')}]`;
  const users = [...credentials].map(([id, c]) => {
    const p = identityPermissions(id, scope);
    const responses = p.allowResponses ? `\n        allow_responses: { max: ${RESPONSE_MAX_MSGS}, expires: "${RESPONSE_EXPIRES}" }` : '';
    return [
      `    {`,
      `      user: ${q(c.user)}`,
      `      password: ${q(c.password)}`,
      `      permissions: {`,
      `        publish: { allow: ${list(p.publish)} }`,
      `        subscribe: { allow: ${list(p.subscribe)} }${responses}`,
      `      }`,
      `    }`,
    ].join('\n');
  });
  return `authorization {\n  users = [\n${users.join('\n')}\n  ]\n}\n`;
}

/**
 * A responder may answer a request with progress beats (every 5 s) for as long as the work takes
 * (an image pull): many responses, for up to an hour.
 */
const RESPONSE_MAX_MSGS = 100_000;
const RESPONSE_EXPIRES = '1h';
