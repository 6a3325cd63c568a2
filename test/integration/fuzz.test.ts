/**
 * Bad input on every subject and KV key the processes read, against a real `splitlet up --runtime
 * sim`: malformed, truncated, oversized, wrong-typed, wrong-version and empty bodies. Each one must be
 * dead-lettered on `sl.<node>.dlq.<process>` naming the subject and the reason (requests: answered
 * with an error reply), no process crashes or stalls (same PIDs, health ok), the pod running before is
 * untouched and a pod created afterwards reaches Running. Prints the count tried per subject.
 *
 * Not fuzzed, on purpose: the single-writer node records (`sl_node`, `sl_syncloop_leader`,
 * `sl_node_capacity`, `sl_cri_backoff` and real partition keys of `sl_leases`/`sl_cri_fences`): a
 * value there is the node's one copy, so overwriting it is a forgery, which NATS permissions refuse
 * (issue 12, identities), not bad input; and `sl.<node>.plegrelist`, a poke whose payload is ignored.
 */
import assert from 'node:assert/strict';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, ConfigOps, Keys, RuntimeOps, Subjects, VolumeOps, partitionOf } from '../../libs/api/src/index.ts';
import { podNamed, startSplitlet, waitFor, type Instance } from './harness.ts';

const NODE = 'fuzz-node';

/** One subject or key a process reads, with the message type its readers expect. */
interface Target {
  readonly kind: 'stream' | 'rpc' | 'kv';
  /** For kv: the bucket. */
  readonly bucket?: string;
  /** Builds the subject (stream, rpc) or key (kv) for variant `v`. */
  readonly at: (v: string) => string;
  readonly type: string;
  /** The template printed in the table. */
  readonly label: string;
  /** A KV key read only by a listing at start: the reading process is restarted (SIGTERM) to read it. */
  readonly readAtStartBy?: string;
}

const uidFor = (label: string, v: string): string => `fuzz-${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(-20)}-${v}`;

function targets(): Target[] {
  const t: Target[] = [
    { kind: 'stream', label: 'config.file', type: 'kubelet.config.PodUpdate.v1', at: () => Subjects.config(NODE, 'file') },
    { kind: 'stream', label: 'work.<p>.<uid>', type: 'kubelet.podworker.WorkPoke.v1', at: (v) => Subjects.work(NODE, partitionOf(uidFor('work', v)), uidFor('work', v)) },
    { kind: 'stream', label: 'pleg.<uid>', type: 'kubelet.pleg.PodLifecycleEvent.v1', at: (v) => Subjects.pleg(NODE, uidFor('pleg', v)) },
    { kind: 'stream', label: 'status.<uid>', type: 'kubelet.status.PodStatusUpdate.v1', at: (v) => Subjects.status(NODE, uidFor('status', v)) },
  ];
  const runtimeTypes: Record<string, string> = {
    syncPod: 'SyncPodRequest',
    killPod: 'KillPodRequest',
    getPodStatus: 'GetPodStatusRequest',
    relist: 'RelistRequest',
    garbageCollect: 'GarbageCollectRequest',
    exec: 'ExecRequest',
  };
  for (const op of RuntimeOps) t.push({ kind: 'rpc', label: `rpc.runtime.${op}`, type: `kubelet.runtime.${runtimeTypes[op]}.v1`, at: () => Subjects.rpc.runtime(NODE, op) });
  const volumeTypes: Record<string, string> = { mount: 'MountRequest', unmount: 'UnmountRequest', cleanup: 'CleanupRequest' };
  for (const op of VolumeOps) t.push({ kind: 'rpc', label: `rpc.volume.${op}`, type: `kubelet.volume.${volumeTypes[op]}.v1`, at: () => Subjects.rpc.volume(NODE, op) });
  const configTypes: Record<string, string> = { apply: 'ApplyPods', delete: 'DeletePod' };
  for (const op of ConfigOps) t.push({ kind: 'rpc', label: `rpc.config.${op}`, type: `kubelet.config.${configTypes[op]}.v1`, at: () => Subjects.rpc.config(NODE, op) });
  t.push({ kind: 'rpc', label: 'rpc.logs.read', type: 'kubelet.logs.Read.v1', at: () => Subjects.rpc.logs(NODE) });
  const perPod: [string, string, boolean, string?][] = [
    [Buckets.desired, 'kubelet.podworker.DesiredPod.v1', true],
    [Buckets.kill, 'kubelet.podworker.KillRequest.v1', true],
    [Buckets.worker, 'kubelet.podworker.WorkerRecord.v1', true],
    [Buckets.runtime, 'kubelet.pleg.RuntimeCacheEntry.v1', false],
    [Buckets.volumes, 'kubelet.volume.PodVolumeState.v1', false, 'volume-manager'],
    [Buckets.status, 'kubelet.status.PodStatusRecord.v1', false, 'status-manager'],
    [Buckets.probe, 'kubelet.prober.PodProbeResults.v1', false],
  ];
  for (const [bucket, type, partitioned, readAtStartBy] of perPod) {
    const label = partitioned ? `${bucket} <node>.<p>.<uid>` : `${bucket} <node>.<uid>`;
    const at = (v: string): string => (partitioned ? Keys.podInPartition(NODE, partitionOf(uidFor(bucket, v)), uidFor(bucket, v)) : Keys.pod(NODE, uidFor(bucket, v)));
    t.push({ kind: 'kv', bucket, label, type, at, ...(readAtStartBy === undefined ? {} : { readAtStartBy }) });
  }
  t.push({ kind: 'kv', bucket: Buckets.members, label: `${Buckets.members} <node>.<instance>`, type: 'kubelet.podworker.Member.v1', at: (v) => Keys.member(NODE, `fuzz-${v}`) });
  t.push({ kind: 'kv', bucket: Buckets.apiPods, label: `${Buckets.apiPods} <node>.<ns>.<name>`, type: 'kubelet.config.ApiPod.v1', at: (v) => Keys.apiPod(NODE, 'default', `fuzz-${v}`), readAtStartBy: 'config-source' });
  return t;
}

/** The bad bodies, by name, for a reader expecting `type`. */
function variants(type: string, uid: string): Record<string, string> {
  const plausible = JSON.stringify({ type, uid, kind: 'create', op: 'ADD', pod: { metadata: { uid, name: uid } }, sentAt: new Date().toISOString() });
  return {
    malformed: `{"type": "${type}", uid: ${uid}`,
    truncated: plausible.slice(0, Math.floor(plausible.length / 2)),
    // Half a MiB: the type tag itself is the oversized field, so even a reader of `{type}` alone must refuse it.
    oversized: JSON.stringify({ type: `${type}${'x'.repeat(512 * 1024)}`, uid }),
    wrongtyped: JSON.stringify({ type: [type], uid: 12345, kind: [], op: {}, pod: 'pod', items: 7, sentAt: false }),
    wrongversion: JSON.stringify({ type: type.replace(/\.v1$/, '.v9'), uid, kind: 'create', op: 'ADD', pod: { metadata: { uid, name: uid } } }),
    empty: '',
  };
}

interface DlqRecord {
  subject: string;
  reason: string;
  process: string;
}

describe('fuzz: bad input on every subject and KV key', { timeout: 600_000 }, () => {
  let s: Instance | undefined;
  let nc: NatsConnection | undefined;
  const dlq: DlqRecord[] = [];

  before(async () => {
    s = await startSplitlet({ nodeName: NODE, podWorkers: 2 });
    nc = await connect({ servers: s.info().natsUrl, name: 'fuzz' });
    nc.subscribe(`sl.${NODE}.dlq.>`, {
      callback: (_e, m) => {
        const r = JSON.parse(new TextDecoder().decode(m.data)) as DlqRecord;
        dlq.push(r);
      },
    });
    await nc.flush();
  });

  after(async () => {
    await nc?.close();
    await s?.stop();
  });

  test('every bad message is dead-lettered or answered with an error; nothing crashes, stalls or is affected', async () => {
    assert.ok(s && nc);
    const inst = s;
    const manifests = join(inst.stateDir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    const pod = (name: string) => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec: {containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]}\n`;
    writeFileSync(join(manifests, 'keeper.yaml'), pod('keeper'));
    const keeperBefore = await waitFor('keeper Running', async () => {
      const p = podNamed(await inst.pods(), `keeper-${NODE}`);
      return p?.status?.phase === 'Running' ? p : undefined;
    }, 60_000);
    const pidsBefore = inst.info().processes.map((p) => `${p.name}:${p.pid}`).sort();

    const js = jetstream(nc);
    const kvm = new Kvm(nc);
    const tried = new Map<string, number>();
    const expected: { label: string; subject: string; variant: string; kind: Target['kind'] }[] = [];
    const rpcFailures: string[] = [];
    for (const target of targets()) {
      for (const v of Object.keys(variants(target.type, 'x'))) {
        const at = target.at(v);
        const body = variants(target.type, uidFor(target.label, v))[v] ?? '';
        const data = new TextEncoder().encode(body);
        if (target.kind === 'stream') {
          await js.publish(at, data);
          expected.push({ label: target.label, subject: at, variant: v, kind: target.kind });
        } else if (target.kind === 'kv') {
          const kv = await kvm.open(target.bucket ?? '');
          await kv.put(at, data);
          expected.push({ label: target.label, subject: `$KV.${target.bucket}.${at}`, variant: v, kind: target.kind });
        } else {
          const reply = await nc.request(at, data, { timeout: 20_000 });
          const env = JSON.parse(new TextDecoder().decode(reply.data)) as { ok?: boolean; error?: { code: string; message: string } };
          if (env.ok !== false || !env.error?.message.includes(at)) rpcFailures.push(`${at} ${v}: ${JSON.stringify(env).slice(0, 200)}`);
          expected.push({ label: target.label, subject: at, variant: v, kind: target.kind });
        }
        tried.set(target.label, (tried.get(target.label) ?? 0) + 1);
      }
    }
    assert.deepEqual(rpcFailures, [], 'every bad request is answered with an error naming the subject');

    // The processes that read a bucket only by listing it at start: restart them (SIGTERM; the
    // supervisor starts them again) so they read the bad keys.
    const restarted = [...new Set(targets().flatMap((t) => (t.readAtStartBy === undefined ? [] : [t.readAtStartBy])))];
    for (const name of restarted) {
      const old = inst.info().processes.find((p) => p.name === name);
      assert.ok(old, `process ${name} runs`);
      process.kill(old.pid, 'SIGTERM');
      await waitFor(`${name} restarted`, async () => inst.info().processes.some((p) => p.name === name && p.pid !== old.pid), 60_000);
    }

    // Every bad message dead-lettered, with its subject and a reason.
    const missing = () => {
      const left: string[] = [];
      const bySubject = new Map<string, number>();
      for (const e of expected) bySubject.set(e.subject, (bySubject.get(e.subject) ?? 0) + 1);
      for (const [subject, n] of bySubject) {
        // The reason names what was read: the subject, or `<bucket>/<key>` for a KV value.
        const named = subject.startsWith('$KV.') ? subject.slice('$KV.'.length).replace('.', '/') : subject;
        const got = dlq.filter((r) => r.subject === subject && r.reason.includes(named)).length;
        if (got < n) left.push(`${subject}: ${got}/${n}`);
      }
      return left;
    };
    try {
      await waitFor('every bad message dead-lettered', async () => missing().length === 0, 60_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}; not dead-lettered: ${missing().join(', ')}`);
    }

    // Nothing crashed or stalled; the running pod is untouched; a new pod starts.
    const pidsAfter = inst.info().processes.map((p) => `${p.name}:${p.pid}`).sort();
    const unplanned = (name: string): boolean => !restarted.includes(name);
    const crashes =
      pidsBefore.filter((p) => !pidsAfter.includes(p) && unplanned(p.split(':')[0] ?? '')).length +
      inst.output.filter((l) => /process exited with/.test(l) && !restarted.some((n) => l.includes(n))).length;
    for (const proc of inst.info().processes) {
      if (proc.healthPort === undefined) continue;
      await waitFor(`${proc.name} healthy`, async () => (await fetch(`http://127.0.0.1:${proc.healthPort}/healthz`)).ok, 30_000);
    }
    writeFileSync(join(manifests, 'after.yaml'), pod('after'));
    await waitFor('a pod created after the fuzz Running', async () => podNamed(await inst.pods(), `after-${NODE}`)?.status?.phase === 'Running', 60_000);
    const keeperAfter = podNamed(await inst.pods(), `keeper-${NODE}`);
    assert.equal(keeperAfter?.status?.phase, 'Running');
    assert.deepEqual(
      keeperAfter?.status?.containerStatuses?.map((c) => [c.containerID, c.restartCount]),
      keeperBefore.status?.containerStatuses?.map((c) => [c.containerID, c.restartCount]),
      'the pod running before the fuzz kept its container',
    );

    const width = Math.max(...[...tried.keys()].map((k) => k.length));
    console.log(`${'SUBJECT / KEY'.padEnd(width)}  TRIED  DEAD-LETTERED/ERROR`);
    for (const [label, n] of tried) {
      const subjects = new Set(expected.filter((e) => e.label === label).map((e) => e.subject));
      const handled = dlq.filter((r) => subjects.has(r.subject)).length;
      console.log(`${label.padEnd(width)}  ${String(n).padStart(5)}  ${handled}`);
    }
    console.log(`total: ${expected.length} messages on ${tried.size} subjects/keys, ${dlq.length} dead letters, ${crashes} crashes`);
    assert.equal(crashes, 0, 'no process crashed');
  });
});
