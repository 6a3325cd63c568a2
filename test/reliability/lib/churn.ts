/**
 * Pod churn against a real `splitlet up`, and the invariants the reliability suites check after it.
 *
 * The churn goes through config-source's api source over the bus (`sl.<node>.rpc.config.apply` and
 * `.delete`, what `splitlet apply --nats-url` sends): creates, image updates (busybox 1.36 ⇄ 1.37,
 * which the kubelet applies by restarting the container) and deletes, spread over a window. A request
 * that fails (config-source or NATS killed) is retried as a user would; re-applying is idempotent
 * and a delete answered NotFound after a retry was done by the first attempt.
 *
 * The invariants, observed through the CLI (`get pods -o json`, the statuses the node publishes) and
 * the runtime itself (CRI ListPodSandbox / ListContainers on the simulator's socket):
 * - converged: every desired pod Running with one ready sandbox and one running container of its
 *   desired image; no sandbox ready, no container running and no pod listed for a deleted pod;
 * - duplicate sandboxes: a pod with more than one sandbox (any state) in the runtime;
 * - lost statuses: a pod whose runtime state converged but whose published status does not show it
 *   (phase, readiness, image or container ID) when the deadline passes;
 * - started twice: a pod whose sandbox was created again (sandbox attempt > 0), or whose container
 *   ran more often than its updates explain (the running container plus the stopped ones that ever
 *   started, per CRI ContainerStatus, > 1 + updates applied). A container created but never started
 *   (its creator died before StartContainer) and then replaced, as the kubelet does, is no second start.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { GrpcRuntimeService } from '@splitlet/cri';
import { ApplyPodsReply, ApplyPodsRequest, DeletePodReply, DeletePodRequest, Subjects } from '@splitlet/api';
import { connectBus, isBusError, type NatsBus } from '@splitlet/bus';
import { createLogger } from '@splitlet/telemetry';
import type { Instance, PodJson } from '../../integration/harness.ts';

export const IMAGES = ['busybox:1.36', 'busybox:1.37'] as const;
const NAMESPACE = 'default';

/**
 * A desired pod: its image, how many image updates it has had since it was created, and how many
 * more starts a runtime that lost its state forces on it.
 */
interface Desired {
  image: string;
  updates: number;
  lost: number;
}

/** A bus client for the driver: reconnects forever (NATS may be killed under it). */
export async function driverBus(inst: Instance, servers?: string[]): Promise<NatsBus> {
  const admin = inst.natsCredential('admin');
  return connectBus({
    user: admin.user,
    pass: admin.password,
    servers: servers ?? inst.info().natsUrl.split(','),
    process: 'reliability-driver',
    node: inst.nodeName,
    provision: false,
    logger: createLogger({ service: 'reliability-driver', level: 'error', stream: process.stderr }),
  });
}

function podManifest(name: string, image: string): ApplyPodsRequest['pods'][number] {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'c', image, command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }],
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function pick<T>(from: T[], n: number): T[] {
  const copy = [...from];
  const out: T[] = [];
  while (out.length < n && copy.length > 0) out.push(copy.splice(Math.floor(Math.random() * copy.length), 1)[0]!);
  return out;
}

/** The observed state of the node against the desired one. */
export interface Observation {
  /** Desired pods not (yet) running as desired in the runtime. */
  notConverged: string[];
  /** Deleted pods still listed, or with a ready sandbox / running container. */
  leftovers: string[];
  /** Pods whose runtime state converged but whose status does not show it. */
  statusBehind: string[];
  duplicateSandboxes: string[];
  startedTwice: string[];
  /** Why the observation could not be made (CLI or runtime unreachable), if so. */
  error?: string;
}

export function converged(o: Observation): boolean {
  return o.error === undefined && o.notConverged.length === 0 && o.leftovers.length === 0 && o.statusBehind.length === 0;
}

/** Drives the churn and checks the invariants. One per stack; pod names never repeat. */
export class Churn {
  readonly desired = new Map<string, Desired>();
  readonly deleted = new Set<string>();
  #seq = 0;
  /** Requests that had to be retried (their first attempt failed). */
  retries = 0;

  constructor(
    private readonly inst: Instance,
    private readonly bus: NatsBus,
    private readonly prefix: string,
  ) {}

  /** Retries `fn` until it succeeds or `timeoutMs` passed. */
  async #retrying<T>(what: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (attempt === 0) this.retries++;
        if (Date.now() > deadline) throw new Error(`${what}: still failing after ${timeoutMs / 1000} s: ${(e as Error).message}`, { cause: e });
        await sleep(500);
      }
    }
  }

  async #apply(pods: ApplyPodsRequest['pods']): Promise<void> {
    if (pods.length === 0) return;
    await this.#retrying('apply', () =>
      this.bus.request(
        ApplyPodsRequest,
        ApplyPodsReply,
        Subjects.rpc.config(this.inst.nodeName, 'apply'),
        { type: 'kubelet.config.ApplyPods.v1', pods, origin: 'reliability churn' },
        { timeoutMs: 15_000 },
      ),
    );
  }

  async #delete(name: string): Promise<void> {
    let first = true;
    await this.#retrying(`delete ${name}`, async () => {
      try {
        await this.bus.request(
          DeletePodRequest,
          DeletePodReply,
          Subjects.rpc.config(this.inst.nodeName, 'delete'),
          { type: 'kubelet.config.DeletePod.v1', namespace: NAMESPACE, name },
          { timeoutMs: 15_000 },
        );
      } catch (e) {
        // NotFound on a retry: the first attempt did it before its reply was lost.
        if (!first && isBusError(e, 'Remote') && e.remoteCode === 'NotFound') return;
        throw e;
      } finally {
        first = false;
      }
    });
  }

  /**
   * `n` operations (about 40 % creates, 30 % image updates, 30 % deletes; more deletes while more
   * than `population` pods exist) in 10 batches spread over `spreadMs`. Resolves when all were accepted.
   */
  async step(n: number, spreadMs: number, population = 60): Promise<void> {
    const batches = 10;
    const alive = this.desired.size;
    const deletes = Math.round(n * 0.3) + Math.max(0, Math.min(Math.round(n * 0.2), alive - population));
    const updates = Math.round(n * 0.3);
    const creates = n - deletes - updates;
    for (let b = 0; b < batches; b++) {
      const t0 = Date.now();
      const share = (total: number): number => Math.floor((total * (b + 1)) / batches) - Math.floor((total * b) / batches);
      const pods: ApplyPodsRequest['pods'] = [];
      const existing = [...this.desired.keys()];
      for (let i = 0; i < share(creates); i++) {
        const name = `${this.prefix}-${this.#seq++}`;
        this.desired.set(name, { image: IMAGES[0], updates: 0, lost: 0 });
        pods.push(podManifest(name, IMAGES[0]));
      }
      const toUpdate = pick(existing, share(updates));
      for (const name of toUpdate) {
        const d = this.desired.get(name)!;
        d.image = d.image === IMAGES[0] ? IMAGES[1] : IMAGES[0];
        d.updates++;
        pods.push(podManifest(name, d.image));
      }
      const toDelete = pick(
        existing.filter((x) => !toUpdate.includes(x)),
        share(deletes),
      );
      for (const name of toDelete) {
        this.desired.delete(name);
        this.deleted.add(name);
      }
      await Promise.all([this.#apply(pods), ...toDelete.map((name) => this.#delete(name))]);
      await sleep(Math.max(0, spreadMs / batches - (Date.now() - t0)));
    }
  }

  /** The runtime lost every sandbox and container: each pod desired now starts once more. */
  runtimeLost(): void {
    for (const d of this.desired.values()) d.lost++;
  }

  /** Deletes every desired pod. */
  async deleteAll(): Promise<void> {
    const names = [...this.desired.keys()];
    for (const name of names) {
      this.desired.delete(name);
      this.deleted.add(name);
    }
    for (let i = 0; i < names.length; i += 20) await Promise.all(names.slice(i, i + 20).map((name) => this.#delete(name)));
  }

  /** One look at the node. */
  async observe(): Promise<Observation> {
    const o: Observation = { notConverged: [], leftovers: [], statusBehind: [], duplicateSandboxes: [], startedTwice: [] };
    let pods: PodJson[];
    let sandboxes: Awaited<ReturnType<GrpcRuntimeService['ListPodSandbox']>>['items'];
    let containers: Awaited<ReturnType<GrpcRuntimeService['ListContainers']>>['containers'];
    const tagsById = new Map<string, string[]>();
    const everStarted = new Set<string>();
    try {
      pods = (await this.inst.pods()).filter((p) => p.metadata.name.startsWith(`${this.prefix}-`));
      const rt = await GrpcRuntimeService.connect({ endpoint: `unix://${join(this.inst.stateDir, 'run', 'sim-runtime.sock')}`, timeoutMs: 10_000 });
      try {
        sandboxes = (await rt.ListPodSandbox({})).items ?? [];
        containers = (await rt.ListContainers({})).containers ?? [];
        for (const img of (await rt.ListImages({})).images ?? []) tagsById.set(img.id, img.repoTags ?? []);
        // Whether each stopped container of a desired pod ever ran (a container created but never
        // started, e.g. when cri-adapter died between Create and Start, is replaced, not restarted).
        const mine = new Set(sandboxes.filter((b) => this.desired.has(b.metadata?.name ?? '')).map((b) => b.id));
        for (const c of containers) {
          if (!mine.has(c.podSandboxId) || c.state === 'CONTAINER_RUNNING') continue;
          try {
            const st = (await rt.ContainerStatus({ containerId: c.id, verbose: false })).status;
            if (st && st.startedAt !== '0' && st.startedAt !== '') everStarted.add(c.id);
          } catch {
            // removed meanwhile
          }
        }
      } finally {
        rt.close();
      }
    } catch (e) {
      // A failed CLI call's first line is only "Command failed: <argv>": its stderr says why.
      const raw = (e as { stderr?: unknown }).stderr;
      const stderr = (typeof raw === 'string' ? raw : '').trim().split('\n').at(-1);
      return { ...o, error: `${(e as Error).message.split('\n')[0] ?? 'unreachable'}${stderr ? `: ${stderr}` : ''}` };
    }
    const ours = (name: string | undefined): boolean => name !== undefined && name.startsWith(`${this.prefix}-`);
    const byName = new Map<string, PodJson>(pods.map((p) => [p.metadata.name, p]));
    const sbByName = new Map<string, typeof sandboxes>();
    for (const sb of sandboxes) {
      const name = sb.metadata?.name;
      if (!ours(name)) continue;
      sbByName.set(name!, [...(sbByName.get(name!) ?? []), sb]);
    }
    const ctrsOf = (sandboxId: string): typeof containers => containers.filter((c) => c.podSandboxId === sandboxId);
    for (const [name, d] of this.desired) {
      const sbs = sbByName.get(name) ?? [];
      if (sbs.length > 1) o.duplicateSandboxes.push(`${name}: ${sbs.length} sandboxes`);
      const ready = sbs.filter((s) => s.state === 'SANDBOX_READY');
      const running = ready.flatMap((s) => ctrsOf(s.id)).filter((c) => c.state === 'CONTAINER_RUNNING');
      // The runtime names a container's image by ID (ListContainers); its tags come from ListImages.
      const tags = (c: (typeof containers)[number]): string[] => [c.image?.image ?? '', ...(tagsById.get(c.image?.image ?? '') ?? []), ...(tagsById.get(c.imageRef) ?? [])];
      const runtimeOk = ready.length === 1 && running.length === 1 && tags(running[0]!).some((t) => t.endsWith(d.image));
      if (!runtimeOk) {
        o.notConverged.push(
          `${name}: ${ready.length} ready sandboxes, ${running.length} running containers${running[0] ? ` (${tags(running[0]).join(' ')})` : ''}, want ${d.image}`,
        );
        continue;
      }
      const sb = ready[0]!;
      const c = running[0]!;
      if ((sb.metadata?.attempt ?? 0) > d.lost) o.startedTwice.push(`${name}: sandbox attempt ${sb.metadata?.attempt}`);
      // Starts of the container: the running one plus every stopped one that ran (the runtime's
      // garbage collection may have removed older ones, never added any).
      const starts = 1 + sbs.flatMap((b) => ctrsOf(b.id)).filter((x) => x.state !== 'CONTAINER_RUNNING' && everStarted.has(x.id)).length;
      if (starts > 1 + d.updates + d.lost)
        o.startedTwice.push(`${name}: container started ${starts} times after ${d.updates} updates${d.lost ? `, ${d.lost} runtime losses` : ''}`);
      const p = byName.get(name);
      const cs = p?.status?.containerStatuses?.[0];
      const statusOk =
        p?.status?.phase === 'Running' && cs?.ready === true && (cs.image ?? '').endsWith(d.image) && (cs.containerID ?? '').endsWith(c.id) && cs.state?.running !== undefined;
      if (!statusOk) {
        o.statusBehind.push(`${name}: status ${p?.status?.phase ?? 'none'} ${cs?.image ?? ''} ${cs?.containerID ?? ''}, runtime ${c.id.slice(0, 12)} ${d.image}`);
      }
    }
    for (const name of this.deleted) {
      const live = (sbByName.get(name) ?? []).filter((s) => s.state === 'SANDBOX_READY');
      const running = (sbByName.get(name) ?? []).flatMap((s) => ctrsOf(s.id)).filter((c) => c.state === 'CONTAINER_RUNNING');
      if (byName.has(name) || live.length > 0 || running.length > 0)
        o.leftovers.push(`${name}: listed ${byName.has(name)}, ${live.length} ready sandboxes, ${running.length} running`);
    }
    for (const p of pods) if (!this.desired.has(p.metadata.name) && !this.deleted.has(p.metadata.name)) o.leftovers.push(`${p.metadata.name}: listed, never applied`);
    return o;
  }

  /** Observes until converged or `timeoutMs` passed; the last observation and the time it took. */
  async settle(timeoutMs: number): Promise<{ o: Observation; ms: number; converged: boolean }> {
    const t0 = Date.now();
    const seenDuplicates = new Map<string, string>();
    const seenTwice = new Map<string, string>();
    for (;;) {
      const o = await this.observe();
      // A duplicate or second start seen once counts even if it is cleaned up later.
      for (const d of o.duplicateSandboxes) if (!seenDuplicates.has(d.split(':')[0]!)) seenDuplicates.set(d.split(':')[0]!, d);
      for (const d of o.startedTwice) if (!seenTwice.has(d.split(':')[0]!)) seenTwice.set(d.split(':')[0]!, d);
      const done = converged(o);
      if (done || Date.now() - t0 > timeoutMs) {
        return { o: { ...o, duplicateSandboxes: [...seenDuplicates.values()], startedTwice: [...seenTwice.values()] }, ms: Date.now() - t0, converged: done };
      }
      await sleep(1000);
    }
  }
}

/** Summary cells of a settled observation. */
export function describeProblems(o: Observation): string {
  const parts: string[] = [];
  if (o.error) parts.push(`error: ${o.error}`);
  if (o.notConverged.length) parts.push(`not converged: ${o.notConverged.slice(0, 3).join('; ')}${o.notConverged.length > 3 ? ` (+${o.notConverged.length - 3})` : ''}`);
  if (o.leftovers.length) parts.push(`leftovers: ${o.leftovers.slice(0, 3).join('; ')}`);
  if (o.statusBehind.length) parts.push(`status behind: ${o.statusBehind.slice(0, 3).join('; ')}`);
  if (o.duplicateSandboxes.length) parts.push(`duplicates: ${o.duplicateSandboxes.slice(0, 3).join('; ')}`);
  if (o.startedTwice.length) parts.push(`started twice: ${o.startedTwice.slice(0, 3).join('; ')}`);
  return parts.join(' | ');
}

/**
 * The last `n` lines every process logged about the pod `name` (by `namespace/name` or, when it is
 * still listed, its uid), in time order: what a pod that did not converge went through last.
 */
export async function logTrail(inst: Instance, name: string, n = 30): Promise<string> {
  let uid: string | undefined;
  try {
    uid = (await inst.pods()).find((p) => p.metadata.name === name)?.metadata.uid;
  } catch {
    // the CLI is unreachable: by name only
  }
  const needles = [`${NAMESPACE}/${name}"`, ...(uid ? [uid] : [])];
  const dir = join(inst.stateDir, 'logs');
  const lines: string[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (needles.some((x) => line.includes(x))) lines.push(`${f}: ${line.slice(0, 600)}`);
  }
  const time = (l: string): string => /"time":"([^"]+)"/.exec(l)?.[1] ?? '';
  return `the last lines about ${name}${uid ? ` (${uid})` : ''}:\n${lines
    .sort((a, b) => time(a).localeCompare(time(b)))
    .slice(-n)
    .join('\n')}`;
}
