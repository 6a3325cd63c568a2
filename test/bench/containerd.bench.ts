/**
 * Real-runtime overhead (DESIGN.md §7, issue 3): busybox pods on the project's own containerd,
 * splitlet end to end (manifest written → Running reported) next to the same CRI calls made directly
 * (the runtime floor: the calls on the kubelet's path to a Running status — RunPodSandbox,
 * PodSandboxStatus, ImageStatus, CreateContainer, StartContainer, ContainerStatus), sequential and at
 * concurrency 5, with the ratio. Needs root and containerd/runc/CNI/busybox-static.
 *
 * Usage: npm run bench:containerd [-- --pods 10]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { GrpcRuntimeService } from '@splitlet/cri';
import { Buckets, Keys, PodStatusRecord } from '@splitlet/api';
import { startNatsServer } from '@splitlet/testkit';
import { waitReady } from '../integration/harness.ts';
import { ensureLocalRuntime, missingPrerequisites, stopContainerd } from '../../libs/node-setup/src/index.ts';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '10' } } });
const PODS = Number(values.pods);
const CONCURRENCY = 5;
const NODE = 'bench-ctr';
const IMAGE = 'docker.io/library/busybox:1.36';
const root = resolve(import.meta.dirname, '..', '..');

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};

/** Runs `task(i)` for i < n with at most `limit` in flight; returns each task's duration in ms. */
async function timed(n: number, limit: number, task: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      const t0 = performance.now();
      await task(i);
      out.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return out;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0 || missingPrerequisites().length > 0) {
    console.log(`skipped: needs root and ${missingPrerequisites().join(', ') || 'root'}`);
    return;
  }
  const stateDir = mkdtempSync(join(tmpdir(), 'splitlet-ctrbench-'));
  const { runtime } = await ensureLocalRuntime(stateDir);
  const cri = await GrpcRuntimeService.connect({ endpoint: runtime.socket });
  const logRoot = join(stateDir, 'direct-logs');
  const rows: string[] = [];
  try {
    // 1) The floor: the CRI calls a kubelet makes for one busybox pod, made directly.
    const direct = async (tag: string, i: number): Promise<void> => {
      const uid = `direct-${tag}-${i}-${Date.now()}`;
      const logDir = join(logRoot, uid);
      mkdirSync(join(logDir, 'c'), { recursive: true });
      const sandboxConfig = {
        metadata: { name: `d${tag}${i}`, namespace: 'default', uid, attempt: 0 },
        hostname: `d${tag}${i}`,
        logDirectory: logDir,
        labels: { 'io.kubernetes.pod.uid': uid },
        linux: { securityContext: { namespaceOptions: { network: 'POD' as const, pid: 'CONTAINER' as const, ipc: 'POD' as const } } },
      };
      const { podSandboxId } = await cri.RunPodSandbox({ config: sandboxConfig });
      await cri.PodSandboxStatus({ podSandboxId });
      await cri.ImageStatus({ image: { image: IMAGE } });
      const { containerId } = await cri.CreateContainer({
        podSandboxId,
        config: {
          metadata: { name: 'c', attempt: 0 },
          image: { image: IMAGE },
          command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"],
          logPath: 'c/0.log',
          linux: { securityContext: { namespaceOptions: { network: 'POD' as const, pid: 'CONTAINER' as const, ipc: 'POD' as const } } },
        },
        sandboxConfig,
      });
      await cri.StartContainer({ containerId });
      // "Running reported" needs the status read back, as the kubelet's GetPodStatus does.
      const { status } = await cri.ContainerStatus({ containerId });
      if (status?.state !== 'CONTAINER_RUNNING') throw new Error(`direct: container ${containerId} is ${status?.state}`);
    };
    const seq = await timed(PODS, 1, (i) => direct('s', i));
    const conc = await timed(PODS, CONCURRENCY, (i) => direct('c', i));
    for (const sb of (await cri.ListPodSandbox({})).items ?? []) {
      await cri.StopPodSandbox({ podSandboxId: sb.id });
      await cri.RemovePodSandbox({ podSandboxId: sb.id });
    }

    // 2) splitlet end to end on the same containerd.
    const nats = await startNatsServer();
    const child = spawn(process.execPath, [join(root, 'services/cli/bin/splitlet.js'), 'up', '--runtime', 'containerd', '--node-name', NODE, '--pod-workers', '2'], {
      env: { ...process.env, NATS_URL: nats.url, SPLITLET_STATE_DIR: stateDir, LOG_LEVEL: 'warn', PUBLISH_SPANS: 'false' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    try {
      await waitReady(stateDir, 60_000);
      const nc = await connect({ servers: nats.url });
      const kv = await new Kvm(nc).open(Buckets.status);
      const running = new Map<string, () => void>();
      const watch = await kv.watch({ key: Keys.nodePrefix(NODE), include: KvWatchInclude.UpdatesOnly });
      void (async () => {
        for await (const e of watch) {
          if (e.operation !== 'PUT') continue;
          const r = PodStatusRecord.safeParse(e.json());
          if (r.success && r.data.status.phase === 'Running') running.get(r.data.name)?.();
        }
      })();
      const viaSplitlet =
        (tag: string) =>
        async (i: number): Promise<void> => {
          const name = `s${tag}${i}`;
          const done = new Promise<void>((r) => running.set(`${name}-${NODE}`, r));
          writeFileSync(
            join(stateDir, 'manifests', `${name}.json`),
            JSON.stringify({
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name },
              spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }] },
            }),
          );
          await done;
        };
      const sSeq = await timed(PODS, 1, viaSplitlet('s'));
      const sConc = await timed(PODS, CONCURRENCY, viaSplitlet('c'));
      watch.stop();
      await nc.close();
      const row = (label: string, d: number[], s: number[]): string =>
        `${label.padEnd(16)} direct CRI p50 ${pct(d, 50).toFixed(0).padStart(5)} ms p90 ${pct(d, 90).toFixed(0).padStart(5)} ms | splitlet p50 ${pct(s, 50).toFixed(0).padStart(5)} ms p90 ${pct(s, 90).toFixed(0).padStart(5)} ms | ratio p50 ${(pct(s, 50) / pct(d, 50)).toFixed(2)}× p90 ${(pct(s, 90) / pct(d, 90)).toFixed(2)}×`;
      rows.push(`containerd ${runtime.version.runtimeVersion}, busybox pods, ${PODS} per row (target ratio ≤ 1.15×)`);
      rows.push(row('sequential', seq, sSeq));
      rows.push(row(`concurrency ${CONCURRENCY}`, conc, sConc));
      for (const f of Array.from({ length: PODS }, (_, i) => [`ss${i}`, `sc${i}`]).flat()) rmSync(join(stateDir, 'manifests', `${f}.json`), { force: true });
      await new Promise((r) => setTimeout(r, 8000));
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await nats.stop();
    }
  } finally {
    cri.close();
    await stopContainerd(stateDir, { removeState: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
  for (const r of rows) console.log(r);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
