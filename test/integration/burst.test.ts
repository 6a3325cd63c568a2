/**
 * Invariants 1 and 3 with real OS processes: 3 pod-worker replicas, 200 pods created and deleted in
 * a burst; no pod ever has two syncs in flight across replicas; every pod converges; and a kill -9
 * of one process in the middle of the burst (the supervisor restarts it) changes none of that.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GrpcRuntimeService } from '@splitlet/cri';
import { startSplitlet, waitFor } from './harness.ts';
import type { Instance, PodJson } from './harness.ts';

const NODE = 'burst-node';
const PODS = 200;

function manifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }] },
  });
}

interface SyncLine {
  t: number;
  msg: 'sync start' | 'sync end';
  uid: string;
  instance: string;
}

/** Every `sync start` / `sync end` line the pod-workers logged (their log files survive restarts). */
function syncLines(stateDir: string): SyncLine[] {
  const out: SyncLine[] = [];
  for (const f of readdirSync(join(stateDir, 'logs')).filter((n) => n.startsWith('pod-worker-'))) {
    for (const line of readFileSync(join(stateDir, 'logs', f), 'utf8').split('\n')) {
      if (!line.includes('"sync ')) continue;
      try {
        const j = JSON.parse(line) as { time: string; msg: string; uid?: string; instance?: string };
        if ((j.msg === 'sync start' || j.msg === 'sync end') && j.uid && j.instance) {
          out.push({ t: Date.parse(j.time), msg: j.msg, uid: j.uid, instance: `${f}:${j.instance}` });
        }
      } catch {
        // a line cut by kill -9
      }
    }
  }
  return out;
}

/** Partitions each pod-worker log says its replica holds now (acquired − released − lost). */
function ownedPartitions(stateDir: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of readdirSync(join(stateDir, 'logs')).filter((n) => n.startsWith('pod-worker-'))) {
    const held = new Set<number>();
    for (const line of readFileSync(join(stateDir, 'logs', f), 'utf8').split('\n')) {
      if (!line.includes('partition')) continue;
      try {
        const j = JSON.parse(line) as { msg: string; partition?: number };
        if (j.partition === undefined) continue;
        if (j.msg === 'partition acquired') held.add(j.partition);
        else if (j.msg === 'releasing partition' || j.msg === 'partition lease lost') held.delete(j.partition);
      } catch {
        // a line cut by kill -9
      }
    }
    out.set(f, held.size);
  }
  return out;
}

/**
 * Checks invariant 1 from the logs: per pod, the intervals [start, end] of different instances never
 * overlap. An interval cut short by a kill -9 ends at the kill.
 */
function assertNoOverlap(lines: SyncLine[], killedAt: Map<string, number>): { syncs: number; pods: number } {
  const byUid = new Map<string, SyncLine[]>();
  for (const l of lines) {
    const list = byUid.get(l.uid) ?? [];
    list.push(l);
    byUid.set(l.uid, list);
  }
  let syncs = 0;
  for (const [uid, list] of byUid) {
    const intervals: { instance: string; start: number; end: number }[] = [];
    const open = new Map<string, number>();
    for (const l of list.sort((a, b) => a.t - b.t)) {
      if (l.msg === 'sync start') {
        const prevStart = open.get(l.instance);
        const killed = killedAt.get(l.instance.split(':')[0]!);
        if (prevStart !== undefined && killed !== undefined && prevStart <= killed && killed <= l.t) {
          // The previous incarnation of this process was killed mid-sync; its sync ended then.
          intervals.push({ instance: l.instance, start: prevStart, end: killed });
          open.delete(l.instance);
        }
        assert.ok(!open.has(l.instance), `pod ${uid}: instance ${l.instance} started a second sync while one was in flight`);
        open.set(l.instance, l.t);
      } else {
        const s = open.get(l.instance);
        if (s !== undefined) {
          intervals.push({ instance: l.instance, start: s, end: l.t });
          open.delete(l.instance);
        }
      }
    }
    for (const [instance, s] of open) intervals.push({ instance, start: s, end: killedAt.get(instance.split(':')[0]!) ?? Number.MAX_SAFE_INTEGER });
    syncs += intervals.length;
    intervals.sort((a, b) => a.start - b.start);
    for (let i = 1; i < intervals.length; i++) {
      const prev = intervals[i - 1]!;
      const cur = intervals[i]!;
      if (prev.instance !== cur.instance) {
        assert.ok(cur.start >= prev.end, `pod ${uid}: a sync on ${cur.instance} started at ${cur.start} while ${prev.instance}'s ran until ${prev.end}`);
      }
    }
  }
  return { syncs, pods: byUid.size };
}

/** A pod in one line: name, uid, phase, container states. */
function described(p: PodJson): string {
  const states = (p.status?.containerStatuses ?? []).map((c) => `${c.name} ${Object.keys(c.state ?? {}).join('/') || 'none'}`);
  return `${p.metadata.name} ${p.metadata.uid ?? ''} ${p.status?.phase ?? 'no phase'} [${states.join(', ')}]`;
}

/** The last lines any process logged about the pod: what a stuck pod did last. */
function logTrail(stateDir: string, uid: string | undefined): string {
  if (uid === undefined || uid === '') return '';
  const lines: string[] = [];
  for (const f of readdirSync(join(stateDir, 'logs'))) {
    for (const line of readFileSync(join(stateDir, 'logs', f), 'utf8').split('\n')) if (line.includes(uid)) lines.push(`${f}: ${line}`);
  }
  const time = (l: string): string => /"time":"([^"]+)"/.exec(l)?.[1] ?? '';
  return `; the last lines about ${uid}:\n${lines
    .sort((a, b) => time(a).localeCompare(time(b)))
    .slice(-20)
    .join('\n')}`;
}

async function runtimeCounts(s: Instance): Promise<{ readySandboxes: number; running: number; duplicates: string[] }> {
  const rt = await GrpcRuntimeService.connect({ endpoint: `unix://${join(s.stateDir, 'run', 'sim-runtime.sock')}`, timeoutMs: 10_000 });
  try {
    const sbs = (await rt.ListPodSandbox({})).items ?? [];
    const cs = (await rt.ListContainers({})).containers ?? [];
    const ready = sbs.filter((b) => b.state === 'SANDBOX_READY');
    const perPod = new Map<string, number>();
    for (const b of ready) {
      const uid = b.metadata?.uid ?? '';
      perPod.set(uid, (perPod.get(uid) ?? 0) + 1);
    }
    const running = cs.filter((c) => c.state === 'CONTAINER_RUNNING');
    const perContainer = new Map<string, number>();
    for (const c of running) {
      const key = `${c.labels?.['io.kubernetes.pod.uid']}/${c.metadata?.name}`;
      perContainer.set(key, (perContainer.get(key) ?? 0) + 1);
    }
    const duplicates = [...perPod]
      .filter(([, n]) => n > 1)
      .map(([u]) => `sandbox ${u}`)
      .concat([...perContainer].filter(([, n]) => n > 1).map(([k]) => `container ${k}`));
    return { readySandboxes: ready.length, running: running.length, duplicates };
  } finally {
    rt.close();
  }
}

async function burst(s: Instance, prefix: string, chaos?: () => Promise<void>): Promise<void> {
  const dir = join(s.stateDir, 'manifests');
  for (let i = 0; i < PODS; i++) writeFileSync(join(dir, `${prefix}-${i}.json`), manifest(`${prefix}-${i}`));
  if (chaos) await chaos();
  await waitFor(
    `${PODS} pods Running`,
    async () => {
      const pods = (await s.pods()).filter((p) => p.metadata.name.startsWith(`${prefix}-`));
      const behind = pods.filter((p) => !(p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready));
      if (pods.length === PODS && behind.length === 0) return true;
      throw new Error(
        `${pods.length} listed, ${behind.length} not Running and ready (${behind.slice(0, 5).map(described).join('; ')})${behind[0] ? logTrail(s.stateDir, behind[0].metadata.uid) : ''}`,
      );
    },
    180_000,
    1000,
  );
  const up = await runtimeCounts(s);
  assert.deepEqual(up.duplicates, [], 'no duplicate sandbox or container for one pod');
  assert.equal(up.readySandboxes, PODS);
  assert.equal(up.running, PODS);
  for (let i = 0; i < PODS; i++) rmSync(join(dir, `${prefix}-${i}.json`));
  await waitFor(
    'every pod gone',
    async () => {
      const left = (await s.pods()).filter((p) => p.metadata.name.startsWith(`${prefix}-`));
      if (left.length > 0) throw new Error(`${left.length} left (${left.slice(0, 5).map(described).join('; ')})${logTrail(s.stateDir, left[0]!.metadata.uid)}`);
      return true;
    },
    180_000,
    1000,
  );
  const down = await runtimeCounts(s);
  assert.equal(down.readySandboxes, 0, 'no sandbox left ready');
  assert.equal(down.running, 0, 'no container left running');
}

describe('burst of 200 pods over 3 pod-worker replicas', { timeout: 900_000 }, () => {
  let s: Instance;
  const killedAt = new Map<string, number>();

  before(async () => {
    // maxPods defaults to 110 (the kubelet's): raise it so all 200 pods are admitted.
    s = await startSplitlet({ nodeName: NODE, podWorkers: 3, env: { NODE_MAX_PODS: '500' } });
    // The first replica up takes every partition; the others get theirs on the next balance rounds.
    // The burst starts once the 32 partitions are spread, so all three replicas take part.
    await waitFor(
      'the partitions spread over the three replicas',
      async () => {
        const owned = [...ownedPartitions(s.stateDir).values()];
        return owned.length === 3 && owned.every((n) => n >= 8);
      },
      60_000,
      250,
    );
  });

  after(async () => {
    await s.stop();
  });

  test('200 pods created and deleted: all converge, never two syncs of one pod at once', async () => {
    await burst(s, 'calm');
    const { syncs, pods } = assertNoOverlap(syncLines(s.stateDir), killedAt);
    assert.ok(pods >= PODS, `saw syncs for ${pods} pods`);
    assert.ok(syncs >= 2 * PODS, `saw ${syncs} syncs`);
    const owners = new Set(syncLines(s.stateDir).map((l) => l.instance));
    assert.equal(owners.size, 3, `all three replicas synced pods: ${[...owners].join(', ')}`);
  });

  for (const victim of ['pod-worker-2', 'cri-adapter', 'sync-loop']) {
    test(`kill -9 of ${victim} during a burst, restarted by the supervisor: all converge, no overlap`, async () => {
      await burst(s, `k-${victim}`, async () => {
        await new Promise((r) => setTimeout(r, 1500));
        const p = s.info().processes.find((x) => x.name === victim)!;
        killedAt.set(`${victim}.log`, Date.now());
        process.kill(p.pid, 'SIGKILL');
        await waitFor(`${victim} restarted`, async () => {
          const now = s.info().processes.find((x) => x.name === victim)!;
          return now.pid !== p.pid && now.pid > 0;
        });
      });
      assertNoOverlap(syncLines(s.stateDir), killedAt);
    });
  }
});
