/**
 * Fuzz: bad input on every subject and KV key the processes read, against a real `splitlet up
 * --runtime sim`: malformed, truncated, oversized, wrong-typed, wrong-version and empty bodies. Each
 * one must be dead-lettered on `sl.<node>.dlq.<process>` naming the subject and the reason (requests:
 * answered with an error reply), no process crashes or stalls (same PIDs, health ok), the pod running
 * before is untouched and a pod created afterwards reaches Running. The table: messages tried and
 * handled per subject or key. `long` runs every variant 5 times (fresh UIDs each round).
 *
 * Not fuzzed, on purpose: the single-writer node records (`sl_node`, `sl_syncloop_leader`,
 * `sl_node_capacity`, `sl_cri_backoff` and real partition keys of `sl_leases`/`sl_cri_fences`): a
 * value there is the node's one copy, so overwriting it is a forgery, which NATS permissions refuse
 * (issue 12, identities), not bad input (`sl_cri_fences` is fuzzed under partition numbers no node
 * has); `sl.<node>.plegrelist`, a poke whose payload is ignored (the core subject that is read,
 * `sl.<node>.runtimeevents.*`, is fuzzed); and `SL_SPANS`, which no node
 * process reads (only `splitlet trace`).
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Buckets, ConfigOps, Keys, RuntimeOps, Subjects, VolumeOps, partitionOf } from '@splitlet/api';
import { podNamed, startSplitlet, waitFor, type Instance } from '../../integration/harness.ts';
import type { SuiteOptions, SuiteResult } from '../suite.ts';

const NODE = 'fuzz-node';

/** One subject or key a process reads, with the message type its readers expect. */
interface Target {
  readonly kind: 'stream' | 'rpc' | 'kv' | 'core';
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

/** A UID per target, variant and round (round 0 keeps the plain form). */
const uidFor = (label: string, v: string): string =>
  `fuzz-${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(-20)}-${v}`;

const unused = new Map<string, number>();
/** A partition number far above any node's partition count, one per variant name. */
function unusedPartition(v: string): number {
  if (!unused.has(v)) unused.set(v, 9000 + unused.size);
  return unused.get(v)!;
}

function targets(): Target[] {
  const t: Target[] = [
    { kind: 'stream', label: 'config.file', type: 'kubelet.config.PodUpdate.v1', at: () => Subjects.config(NODE, 'file') },
    { kind: 'stream', label: 'work.<p>.<uid>', type: 'kubelet.podworker.WorkPoke.v1', at: (v) => Subjects.work(NODE, partitionOf(uidFor('work', v)), uidFor('work', v)) },
    { kind: 'stream', label: 'pleg.<uid>', type: 'kubelet.pleg.PodLifecycleEvent.v1', at: (v) => Subjects.pleg(NODE, uidFor('pleg', v)) },
    { kind: 'stream', label: 'pleg.<uid> list', type: 'kubelet.pleg.PodLifecycleEventList.v1', at: (v) => Subjects.pleg(NODE, uidFor('pleg-list', v)) },
    { kind: 'stream', label: 'status.<uid>', type: 'kubelet.status.PodStatusUpdate.v1', at: (v) => Subjects.status(NODE, uidFor('status', v)) },
    // Read by status-manager's event poster (with the API server, which `splitlet up` starts).
    { kind: 'stream', label: 'events.<uid>', type: 'kubelet.events.Event.v1', at: (v) => Subjects.events(NODE, uidFor('events', v)) },
    { kind: 'stream', label: 'events.<uid> list', type: 'kubelet.events.EventList.v1', at: (v) => Subjects.events(NODE, uidFor('events-list', v)) },
    // Core NATS, read by pleg (the evented PLEG's runtime events from cri-adapter).
    { kind: 'core', label: 'runtimeevents.<uid>', type: 'kubelet.runtime.ContainerEvents.v1', at: (v) => Subjects.runtimeEvents(NODE, uidFor('runtimeevents', v)) },
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
  // cri-adapter lists its node's fence keys at start: bad values under partitions the node does not
  // have (a real partition's key is the node's one copy, see above).
  t.push({
    kind: 'kv',
    bucket: Buckets.criFences,
    label: `${Buckets.criFences} <node>.<p>`,
    type: 'kubelet.runtime.FenceEpoch.v1',
    at: (v) => Keys.fence(NODE, unusedPartition(v)),
    readAtStartBy: 'cri-adapter',
  });
  t.push({
    kind: 'kv',
    bucket: Buckets.apiPods,
    label: `${Buckets.apiPods} <node>.<ns>.<name>`,
    type: 'kubelet.config.ApiPod.v1',
    at: (v) => Keys.apiPod(NODE, 'default', `fuzz-${v}`),
    readAtStartBy: 'config-source',
  });
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

const pod = (name: string): string => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec: {containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]}\n`;

export async function run(opts: SuiteOptions): Promise<SuiteResult> {
  const rounds = opts.mode === 'long' ? 5 : 1;
  const log = opts.log ?? ((): void => undefined);
  const columns = ['subject / key', 'kind', 'tried', 'dead letters (one per reader) or error replies'];
  const rows: string[][] = [];
  const problems: string[] = [];
  let inst: Instance | undefined;
  let nc: NatsConnection | undefined;
  const dlq: DlqRecord[] = [];
  let crashes = 0;
  let expectedCount = 0;
  try {
    inst = await startSplitlet({ nodeName: NODE, podWorkers: 2, args: ['--runtime', 'sim'] });
    const stack = inst;
    const admin = stack.natsCredential('admin');
    nc = await connect({ servers: stack.info().natsUrl.split(','), name: 'fuzz', user: admin.user, pass: admin.password });
    nc.subscribe(`sl.${NODE}.dlq.>`, {
      callback: (_e, m) => {
        try {
          dlq.push(JSON.parse(new TextDecoder().decode(m.data)) as DlqRecord);
        } catch {
          problems.push(`a dead letter that is not JSON on ${m.subject}`);
        }
      },
    });
    await nc.flush();
    const manifests = join(stack.stateDir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    writeFileSync(join(manifests, 'keeper.yaml'), pod('keeper'));
    const keeperBefore = await waitFor(
      'keeper Running',
      async () => {
        const p = podNamed(await stack.pods(), `keeper-${NODE}`);
        return p?.status?.phase === 'Running' ? p : undefined;
      },
      60_000,
    );
    const pidsBefore = stack
      .info()
      .processes.map((p) => `${p.name}:${p.pid}`)
      .sort();

    const js = jetstream(nc);
    const kvm = new Kvm(nc);
    const tried = new Map<string, number>();
    const kinds = new Map<string, string>();
    const expected: { label: string; subject: string; variant: string; kind: Target['kind'] }[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const target of targets()) {
        kinds.set(target.label, target.kind);
        for (const v0 of Object.keys(variants(target.type, 'x'))) {
          // Later rounds: the same variants under new UIDs / keys.
          const v = round === 0 ? v0 : `${v0}-r${round}`;
          const at = target.at(v);
          const body = variants(target.type, uidFor(target.label, v))[v0] ?? '';
          const data = new TextEncoder().encode(body);
          if (target.kind === 'stream') {
            await js.publish(at, data);
            expected.push({ label: target.label, subject: at, variant: v, kind: target.kind });
          } else if (target.kind === 'core') {
            nc.publish(at, data);
            expected.push({ label: target.label, subject: at, variant: v, kind: target.kind });
          } else if (target.kind === 'kv') {
            const kv = await kvm.open(target.bucket ?? '');
            await kv.put(at, data);
            expected.push({ label: target.label, subject: `$KV.${target.bucket}.${at}`, variant: v, kind: target.kind });
          } else {
            const reply = await nc.request(at, data, { timeout: 20_000 });
            const env = JSON.parse(new TextDecoder().decode(reply.data)) as { ok?: boolean; error?: { code: string; message: string } };
            if (env.ok !== false || !env.error?.message.includes(at)) problems.push(`${at} ${v}: not an error reply naming the subject: ${JSON.stringify(env).slice(0, 200)}`);
            expected.push({ label: target.label, subject: at, variant: v, kind: target.kind });
          }
          tried.set(target.label, (tried.get(target.label) ?? 0) + 1);
        }
      }
    }
    expectedCount = expected.length;
    log(`fuzz: ${expected.length} messages sent on ${tried.size} subjects/keys`);

    // The processes that read a bucket only by listing it at start: restart them (SIGTERM; the
    // supervisor starts them again) so they read the bad keys.
    const restarted = [...new Set(targets().flatMap((t) => (t.readAtStartBy === undefined ? [] : [t.readAtStartBy])))];
    for (const name of restarted) {
      const old = stack.info().processes.find((p) => p.name === name);
      if (!old) throw new Error(`process ${name} does not run`);
      process.kill(old.pid, 'SIGTERM');
      await waitFor(`${name} restarted`, async () => stack.info().processes.some((p) => p.name === name && p.pid !== old.pid), 60_000);
    }

    // Every bad message dead-lettered, with its subject and a reason naming what was read: the
    // subject, or `<bucket>/<key>` for a KV value.
    const named = (subject: string): string => (subject.startsWith('$KV.') ? subject.slice('$KV.'.length).replace('.', '/') : subject);
    const rpcSubjects = new Set(expected.filter((e) => e.kind === 'rpc').map((e) => e.subject));
    const missing = (): string[] => {
      const left: string[] = [];
      const bySubject = new Map<string, number>();
      for (const e of expected) if (e.kind !== 'rpc') bySubject.set(e.subject, (bySubject.get(e.subject) ?? 0) + 1);
      for (const [subject, n] of bySubject) {
        const got = dlq.filter((r) => r.subject === subject && r.reason.includes(named(subject))).length;
        if (got < n) left.push(`${subject}: ${got}/${n}`);
      }
      return left;
    };
    await waitFor('every bad message dead-lettered', async () => missing().length === 0, 90_000).catch(() => problems.push(`not dead-lettered: ${missing().join(', ')}`));

    // Nothing crashed or stalled; the running pod is untouched; a new pod starts.
    const pidsAfter = stack
      .info()
      .processes.map((p) => `${p.name}:${p.pid}`)
      .sort();
    const unplanned = (name: string): boolean => !restarted.includes(name);
    crashes =
      pidsBefore.filter((p) => !pidsAfter.includes(p) && unplanned(p.split(':')[0] ?? '')).length +
      stack.output.filter((l) => /process exited with/.test(l) && !restarted.some((n) => l.includes(n))).length;
    for (const proc of stack.info().processes) {
      if (proc.healthPort === undefined) continue;
      await waitFor(`${proc.name} healthy`, async () => (await fetch(`http://127.0.0.1:${proc.healthPort}/healthz`)).ok, 30_000).catch((e: unknown) =>
        problems.push((e as Error).message),
      );
    }
    writeFileSync(join(manifests, 'after.yaml'), pod('after'));
    await waitFor('a pod created after the fuzz Running', async () => podNamed(await stack.pods(), `after-${NODE}`)?.status?.phase === 'Running', 60_000).catch((e: unknown) =>
      problems.push((e as Error).message),
    );
    const keeperAfter = podNamed(await stack.pods(), `keeper-${NODE}`);
    const ids = (p: typeof keeperAfter): string => JSON.stringify(p?.status?.containerStatuses?.map((c) => [c.containerID, c.restartCount]));
    if (keeperAfter?.status?.phase !== 'Running' || ids(keeperAfter) !== ids(keeperBefore))
      problems.push(`the pod running before the fuzz changed: ${ids(keeperBefore)} → ${keeperAfter?.status?.phase} ${ids(keeperAfter)}`);

    for (const [label, n] of tried) {
      const subjects = new Set(expected.filter((e) => e.label === label).map((e) => e.subject));
      const kind = kinds.get(label) ?? '';
      // Requests are answered (checked above); the rest is counted from the dead letters.
      const isRpc = [...subjects].some((x) => rpcSubjects.has(x));
      const handled = isRpc ? n - problems.filter((p) => [...subjects].some((x) => p.startsWith(`${x} `))).length : dlq.filter((r) => subjects.has(r.subject)).length;
      rows.push([label, kind, String(n), String(handled)]);
    }
  } catch (e) {
    problems.push((e as Error).message.split('\n').slice(0, 3).join(' '));
  } finally {
    await nc?.close();
    if (inst !== undefined) {
      const code = await inst.stop();
      if (code !== 0) problems.push(`splitlet up exited ${code}`);
    }
  }
  rows.push(['total', '', String(expectedCount), `${dlq.length} dead letters, ${crashes} crashes`]);
  for (const p of problems) rows.push(['PROBLEM', '', '', p]);
  return {
    title: `fuzz: bad messages on every subject and KV key the processes read (${expectedCount} messages, ${crashes} crashes)`,
    columns,
    rows,
    ok: problems.length === 0 && crashes === 0 && expectedCount > 0,
  };
}
