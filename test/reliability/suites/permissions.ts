/**
 * The NATS permission matrix, against a real nats-server running the authorization `splitlet up`
 * generates (`renderAuthorization` of `@splitlet/bus`, scoped to one node):
 *
 * - each identity tries subjects it must not use (forged PodUpdates, statuses, kills, leases,
 *   another node's subjects, stream deletion, intercepting another process's requests) → refused
 *   by the server (a permissions violation), and the subjects its process needs → allowed;
 * - a connection without credentials, and one with a wrong password, is refused, so an
 *   unauthenticated process cannot publish anything;
 * - a process's `Bus.request` outside its permissions fails at once with `PermissionDenied`
 *   (not after its timeout), and the violation is logged.
 *
 * "Allowed" means the server did not refuse it: a reply, a PubAck, or no-responders.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { connect, PermissionViolationError, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { Subjects } from '@splitlet/api';
import { connectBus, IDENTITIES, isBusError, renderAuthorization, type Identity, type NatsCredential } from '@splitlet/bus';
import { startNatsServer } from '@splitlet/testkit';

const NODE = 'perm-node';
const OTHER = 'other-node';

type Op = 'pub' | 'sub';
interface Check {
  readonly op: Op;
  readonly subject: string;
  readonly allowed: boolean;
  /** Why this row is in the matrix (shown in the table). */
  readonly what: string;
}

const sl = (rest: string, node = NODE): string => `sl.${node}.${rest}`;
const uid = '1b2c3d4e-0000-4000-8000-000000000001';

/** Checks every non-admin identity must fail: the stream and consumer API beyond its own. */
const NOBODY: readonly Check[] = [
  { op: 'pub', subject: '$JS.API.STREAM.DELETE.SL_WORK', allowed: false, what: 'delete a stream' },
  { op: 'pub', subject: '$JS.API.STREAM.PURGE.SL_STATUS', allowed: false, what: 'purge a stream' },
  { op: 'pub', subject: `$JS.API.CONSUMER.DELETE.SL_PLEG.sync-loop-pleg-${NODE}`, allowed: false, what: 'delete a durable' },
  { op: 'pub', subject: '$JS.API.STREAM.CREATE.SL_EVIL', allowed: false, what: 'create a stream' },
];

const MATRIX: Readonly<Record<Identity, readonly Check[]>> = {
  admin: [
    { op: 'pub', subject: '$JS.API.STREAM.INFO.SL_CONFIG', allowed: true, what: 'stream info' },
    { op: 'pub', subject: `$KV.sl_desired.${NODE}.0.${uid}`, allowed: true, what: 'any KV write' },
    { op: 'sub', subject: '>', allowed: true, what: 'see everything' },
  ],
  cli: [
    { op: 'pub', subject: '$JS.API.STREAM.MSG.GET.KV_sl_status', allowed: true, what: 'read a status' },
    { op: 'pub', subject: '$JS.API.CONSUMER.CREATE.SL_EVENTS.x.sl.perm-node.events.>', allowed: true, what: 'read events' },
    { op: 'pub', subject: sl('rpc.config.apply'), allowed: true, what: 'apply' },
    { op: 'pub', subject: sl('rpc.config.delete'), allowed: true, what: 'delete' },
    { op: 'pub', subject: sl('rpc.logs.read'), allowed: true, what: 'logs' },
    { op: 'pub', subject: sl('rpc.runtime.exec'), allowed: true, what: 'exec' },
    { op: 'pub', subject: sl('config.api'), allowed: false, what: 'forge a PodUpdate' },
    { op: 'pub', subject: `$KV.sl_desired.${NODE}.0.${uid}`, allowed: false, what: 'write desired' },
    { op: 'pub', subject: `$KV.sl_status.${NODE}.${uid}`, allowed: false, what: 'forge a status' },
    { op: 'pub', subject: sl('rpc.runtime.killPod'), allowed: false, what: 'kill a pod directly' },
    { op: 'sub', subject: sl('rpc.config.apply'), allowed: false, what: 'intercept apply' },
  ],
  'config-source': [
    { op: 'pub', subject: sl('config.api'), allowed: true, what: 'PodUpdate' },
    { op: 'pub', subject: `$KV.sl_api_pods.${NODE}.default.web`, allowed: true, what: 'its bucket' },
    { op: 'sub', subject: sl('rpc.config.apply'), allowed: true, what: 'serve apply' },
    { op: 'pub', subject: sl('work.0.x'), allowed: false, what: 'poke a worker' },
    { op: 'pub', subject: `$KV.sl_desired.${NODE}.0.${uid}`, allowed: false, what: 'write desired' },
    { op: 'pub', subject: sl('status.x'), allowed: false, what: 'forge a status' },
    { op: 'pub', subject: sl('config.api', OTHER), allowed: false, what: "another node's PodUpdate" },
  ],
  'sync-loop': [
    { op: 'pub', subject: sl(`work.0.${uid}`), allowed: true, what: 'WorkPoke' },
    { op: 'pub', subject: `$KV.sl_desired.${NODE}.0.${uid}`, allowed: true, what: 'desired' },
    { op: 'pub', subject: `$KV.sl_kill.${NODE}.0.${uid}`, allowed: true, what: 'kill' },
    { op: 'pub', subject: `$KV.sl_syncloop_leader.${NODE}`, allowed: true, what: 'its leader lease' },
    { op: 'pub', subject: `$KV.sl_node.${NODE}._applied`, allowed: true, what: 'the applied config updates' },
    { op: 'pub', subject: `$KV.sl_node.${NODE}._other`, allowed: false, what: 'another sl_node key of the node' },
    { op: 'pub', subject: `$JS.API.CONSUMER.INFO.SL_CONFIG.sync-loop-config-${NODE}`, allowed: true, what: 'its PodUpdates durable' },
    { op: 'pub', subject: sl('config.api'), allowed: false, what: 'forge a PodUpdate' },
    { op: 'pub', subject: `$KV.sl_leases.${NODE}.0`, allowed: false, what: 'forge a partition lease' },
    { op: 'pub', subject: `$KV.sl_runtime.${NODE}.${uid}`, allowed: false, what: 'forge the runtime cache' },
    { op: 'pub', subject: sl('rpc.runtime.syncPod'), allowed: false, what: 'bypass a pod-worker' },
    { op: 'pub', subject: sl(`work.0.${uid}`, OTHER), allowed: false, what: "another node's work" },
  ],
  'pod-worker': [
    { op: 'pub', subject: sl(`status.${uid}`), allowed: true, what: 'PodStatusUpdate' },
    { op: 'pub', subject: `$KV.sl_leases.${NODE}.0`, allowed: true, what: 'partition lease' },
    { op: 'pub', subject: `$KV.sl_worker.${NODE}.0.${uid}`, allowed: true, what: 'WorkerRecord' },
    { op: 'pub', subject: sl('rpc.runtime.syncPod'), allowed: true, what: 'syncPod' },
    { op: 'pub', subject: sl('rpc.volume.mount'), allowed: true, what: 'mount' },
    { op: 'pub', subject: `$JS.ACK.SL_WORK.pod-worker-${NODE}-0.1.1.1.1.1`, allowed: true, what: 'ack its work' },
    { op: 'pub', subject: `$JS.API.CONSUMER.DELETE.SL_WORK.pod-worker-${NODE}-0`, allowed: true, what: "take a partition's durable over" },
    { op: 'pub', subject: `$JS.API.CONSUMER.DELETE.SL_WORK.pod-worker-${OTHER}-0`, allowed: false, what: "delete another node's partition durable" },
    { op: 'pub', subject: '$JS.API.STREAM.MSG.DELETE.KV_sl_worker', allowed: true, what: 'remove old delete markers from its bucket' },
    { op: 'pub', subject: '$JS.API.STREAM.PURGE.KV_sl_worker', allowed: false, what: 'purge its bucket (markers go one message at a time)' },
    { op: 'pub', subject: `$KV.sl_desired.${NODE}.0.${uid}`, allowed: false, what: 'write desired' },
    { op: 'pub', subject: '$JS.API.STREAM.MSG.DELETE.KV_sl_desired', allowed: false, what: "delete from sync-loop's bucket" },
    { op: 'pub', subject: sl(`work.0.${uid}`), allowed: false, what: 'poke itself' },
    { op: 'pub', subject: sl(`pleg.${uid}`), allowed: false, what: 'forge a PLEG event' },
    { op: 'pub', subject: `$KV.sl_syncloop_leader.${NODE}`, allowed: false, what: 'take the leader lease' },
    { op: 'pub', subject: sl(`status.${uid}`, OTHER), allowed: false, what: "another node's status" },
    { op: 'sub', subject: sl('rpc.runtime.syncPod'), allowed: false, what: 'intercept syncPod' },
  ],
  pleg: [
    { op: 'pub', subject: sl(`pleg.${uid}`), allowed: true, what: 'PodLifecycleEvent' },
    { op: 'pub', subject: `$KV.sl_runtime.${NODE}.${uid}`, allowed: true, what: 'runtime cache' },
    { op: 'pub', subject: sl('rpc.runtime.relist'), allowed: true, what: 'relist' },
    { op: 'sub', subject: sl('plegrelist'), allowed: true, what: 'relist pokes' },
    { op: 'sub', subject: sl(`runtimeevents.${uid}`), allowed: true, what: 'runtime events' },
    { op: 'pub', subject: sl(`runtimeevents.${uid}`), allowed: false, what: 'forge a runtime event' },
    { op: 'pub', subject: sl(`status.${uid}`), allowed: false, what: 'forge a status' },
    { op: 'pub', subject: `$KV.sl_status.${NODE}.${uid}`, allowed: false, what: 'write status' },
    { op: 'pub', subject: sl('rpc.runtime.killPod'), allowed: false, what: 'kill a pod' },
  ],
  'volume-manager': [
    { op: 'pub', subject: `$KV.sl_volumes.${NODE}.${uid}`, allowed: true, what: 'volume state' },
    { op: 'pub', subject: `$KV.sl_node_capacity.${NODE}`, allowed: true, what: 'node capacity' },
    { op: 'sub', subject: sl('rpc.volume.mount'), allowed: true, what: 'serve mount' },
    { op: 'pub', subject: `$KV.sl_desired.${NODE}.0.${uid}`, allowed: false, what: 'write desired' },
    { op: 'pub', subject: sl('rpc.runtime.killPod'), allowed: false, what: 'kill a pod' },
    { op: 'sub', subject: sl('rpc.runtime.syncPod'), allowed: false, what: 'intercept syncPod' },
  ],
  'status-manager': [
    { op: 'pub', subject: `$KV.sl_status.${NODE}.${uid}`, allowed: true, what: 'PodStatusRecord' },
    { op: 'pub', subject: `$JS.API.CONSUMER.INFO.SL_STATUS.status-manager-${NODE}`, allowed: true, what: 'its durable' },
    { op: 'pub', subject: `$JS.API.CONSUMER.DELETE.SL_STATUS.status-manager-${NODE}`, allowed: true, what: 'take its durable over after a restart' },
    { op: 'pub', subject: `$JS.API.CONSUMER.DELETE.SL_STATUS.status-manager-${OTHER}`, allowed: false, what: "another node's durable" },
    { op: 'pub', subject: sl(`status.${uid}`), allowed: false, what: 'forge a status update' },
    { op: 'pub', subject: `$KV.sl_worker.${NODE}.0.${uid}`, allowed: false, what: 'write a WorkerRecord' },
    { op: 'pub', subject: sl('rpc.runtime.killPod'), allowed: false, what: 'kill a pod' },
  ],
  prober: [
    { op: 'pub', subject: `$KV.sl_probe.${NODE}.${uid}`, allowed: true, what: 'probe results' },
    { op: 'pub', subject: sl(`events.${uid}`), allowed: true, what: 'Unhealthy event' },
    { op: 'pub', subject: sl(`status.${uid}`), allowed: false, what: 'forge a status' },
    { op: 'pub', subject: `$KV.sl_runtime.${NODE}.${uid}`, allowed: false, what: 'forge the runtime cache' },
    { op: 'pub', subject: sl('rpc.runtime.killPod'), allowed: false, what: 'kill a pod' },
    { op: 'pub', subject: sl('plegrelist'), allowed: false, what: 'poke pleg' },
    { op: 'pub', subject: sl(`runtimeevents.${uid}`), allowed: false, what: 'forge a runtime event' },
  ],
  'cri-adapter': [
    { op: 'pub', subject: `$KV.sl_cri_fences.${NODE}.0`, allowed: true, what: 'fence epoch' },
    { op: 'pub', subject: `$KV.sl_node_runtime.${NODE}`, allowed: true, what: "the runtime's state (the Node's Ready)" },
    { op: 'pub', subject: sl('plegrelist'), allowed: true, what: 'poke pleg' },
    { op: 'pub', subject: sl(`runtimeevents.${uid}`), allowed: true, what: 'runtime events' },
    { op: 'pub', subject: sl('runtimeevents._stream'), allowed: true, what: 'runtime event stream state' },
    { op: 'sub', subject: sl('rpc.runtime.syncPod'), allowed: true, what: 'serve syncPod' },
    { op: 'pub', subject: sl(`status.${uid}`), allowed: false, what: 'forge a status' },
    { op: 'pub', subject: `$KV.sl_leases.${NODE}.0`, allowed: false, what: 'forge a partition lease' },
    { op: 'pub', subject: `$KV.sl_runtime.${NODE}.${uid}`, allowed: false, what: 'forge the runtime cache' },
    { op: 'sub', subject: sl('rpc.config.apply'), allowed: false, what: 'intercept apply' },
  ],
  apiserver: [
    { op: 'pub', subject: '$KV.sl_api.pods.default.web', allowed: true, what: 'its object store' },
    { op: 'pub', subject: sl('rpc.logs.read'), allowed: true, what: 'pods/log from the node' },
    { op: 'pub', subject: sl('rpc.runtime.exec'), allowed: false, what: 'exec in a pod' },
    { op: 'pub', subject: sl('config.api'), allowed: false, what: 'forge a PodUpdate' },
    { op: 'pub', subject: `$KV.sl_api_pods.${NODE}.default.web`, allowed: false, what: "config-source's bucket" },
    { op: 'pub', subject: '$JS.API.STREAM.DELETE.SL_CONFIG', allowed: false, what: 'delete a stream' },
  ],
};

/** Publishes as a request: the server refuses it (PermissionViolationError at once) or lets it through. */
async function tryPublish(nc: NatsConnection, subject: string): Promise<string> {
  try {
    await nc.request(subject, '{}', { timeout: 5000 });
    return 'allowed';
  } catch (e) {
    const cause = e instanceof Error && e.cause !== undefined ? e.cause : e;
    if (cause instanceof PermissionViolationError || e instanceof PermissionViolationError) return 'refused';
    const name = cause instanceof Error ? cause.name : '';
    if (name === 'NoResponders' || name === 'NoRespondersError' || (e instanceof Error && /no responders/i.test(e.message))) return 'allowed';
    return `error: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** Subscribes and flushes: the server's refusal (sent before the PONG) reaches the subscription first. */
async function trySubscribe(nc: NatsConnection, subject: string): Promise<string> {
  let refused = false;
  const sub = nc.subscribe(subject, {
    callback: (err) => {
      if (err instanceof PermissionViolationError) refused = true;
    },
  });
  const closed = sub.closed.then(
    (v) => (v instanceof PermissionViolationError ? (refused = true) : undefined),
    (e: unknown) => (e instanceof PermissionViolationError ? (refused = true) : undefined),
  );
  await nc.flush();
  await nc.flush();
  if (!refused) sub.unsubscribe();
  await Promise.race([closed, new Promise((r) => setTimeout(r, 200))]);
  return refused ? 'refused' : 'allowed';
}

/** The matrix as a table. */
export async function run(): Promise<{ title: string; columns: string[]; rows: string[][]; ok: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), 'splitlet-perm-'));
  const creds = new Map<Identity, NatsCredential>(IDENTITIES.map((id) => [id, { user: id, password: `pw-${id}-${Math.random().toString(36).slice(2)}` }]));
  const conf = join(dir, 'auth.conf');
  writeFileSync(conf, renderAuthorization(creds, { node: NODE }), { mode: 0o600 });
  const server = await startNatsServer({ args: ['-c', conf] });
  const rows: string[][] = [];
  let ok = true;
  const row = (identity: string, op: string, subject: string, what: string, expected: string, got: string): void => {
    const pass = got === expected;
    ok &&= pass;
    rows.push([identity, op, subject, what, expected, got, pass ? 'ok' : 'FAIL']);
  };
  const conns: NatsConnection[] = [];
  try {
    const admin = creds.get('admin')!;
    // The topology, as `splitlet up` provisions it (admin), so allowed stream publishes are acked.
    const provisioner = await connectBus({ servers: server.url, process: 'provision', node: NODE, logger: quietLogger, user: admin.user, pass: admin.password, failFast: true });
    await provisioner.close();

    for (const id of IDENTITIES) {
      const c = creds.get(id)!;
      const nc = await connect({ servers: server.url, user: c.user, pass: c.password, name: `perm-${id}` });
      conns.push(nc);
      const checks = id === 'admin' ? MATRIX[id] : [...MATRIX[id], ...NOBODY];
      for (const ch of checks) {
        const got = ch.op === 'pub' ? await tryPublish(nc, ch.subject) : await trySubscribe(nc, ch.subject);
        row(id, ch.op === 'pub' ? 'publish' : 'subscribe', ch.subject, ch.what, ch.allowed ? 'allowed' : 'refused', got);
      }
    }

    // Unauthenticated and wrongly authenticated connections: refused, so nothing can be forged.
    for (const [label, auth] of [
      ['(no credentials)', {}],
      ['(wrong password)', { user: 'pod-worker', pass: 'guess' }],
    ] as const) {
      let got: string;
      try {
        const nc = await connect({ servers: server.url, ...auth, maxReconnectAttempts: 0, timeout: 5000 });
        conns.push(nc);
        got = `connected; forged status ${await tryPublish(nc, sl(`status.${uid}`))}`;
      } catch (e) {
        got = e instanceof Error && /authorization/i.test(`${e.message} ${e.cause === undefined ? '' : inspect(e.cause)}`) ? 'refused' : `error: ${String(e)}`;
      }
      row(label, 'connect', server.url, 'forge a status', 'refused', got);
    }

    // A process's own request path outside its permissions: PermissionDenied at once, logged.
    const prober = creds.get('prober')!;
    const logged: string[] = [];
    const bus = await connectBus({
      servers: server.url,
      process: 'prober',
      node: NODE,
      user: prober.user,
      pass: prober.password,
      provision: false,
      failFast: true,
      logger: { ...quietLogger, error: (msg: string, f?: Record<string, unknown>) => void logged.push(`${msg} ${JSON.stringify(f ?? {})}`) },
    });
    try {
      const t0 = performance.now();
      let ms = 0;
      let got: string;
      try {
        await bus.request(z.object({}), z.unknown(), Subjects.rpc.config(NODE, 'apply'), {}, { timeoutMs: 15_000 });
        got = 'answered';
      } catch (e) {
        ms = Math.round(performance.now() - t0);
        got = isBusError(e, 'PermissionDenied') ? (ms < 5000 ? 'PermissionDenied' : `PermissionDenied after ${ms} ms`) : `error: ${String(e)}`;
      }
      row('prober (Bus.request)', 'request', Subjects.rpc.config(NODE, 'apply'), `fails fast (${ms} ms; its timeout 15 s)`, 'PermissionDenied', got);
      const seen = await waitUntil(() => logged.some((l) => l.includes('permissions violation') && l.includes('rpc.config.apply')), 5000);
      row('prober (Bus.request)', 'log', Subjects.rpc.config(NODE, 'apply'), 'violation logged', 'logged', seen ? 'logged' : 'not logged');
    } finally {
      await bus.close();
    }
  } finally {
    await Promise.allSettled(conns.map((nc) => nc.close()));
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    title: 'NATS permissions: each identity against subjects it needs (allowed) and must not use (refused)',
    columns: ['identity', 'operation', 'subject', 'what', 'expected', 'got', 'result'],
    rows,
    ok,
  };
}

async function waitUntil(f: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return f();
}

const quietLogger = {
  debug: (): void => undefined,
  info: (): void => undefined,
  warn: (): void => undefined,
  error: (): void => undefined,
};
