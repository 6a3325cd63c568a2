/**
 * createFakeRuntime(): a small stateful CRI runtime (RuntimeService & ImageService) for unit tests,
 * in the spirit of cri-api's `FakeRuntimeService`: sandboxes, containers and images in memory with
 * containerd's state machine, name reservation and error texts; knobs for latency, injected errors
 * and a call log. It runs no shell: what a container does is a {@link FakeProgram} the test supplies
 * per argv (default: run until stopped). The full simulator (busybox shell, registry, network) is the
 * sim-runtime service; services' unit tests use this instead. (A little over 450 lines: every CRI
 * RPC, each a few lines, in the one class whose tables they share.)
 *
 *   CreateContainer ─▶ CREATED ─ StartContainer ─▶ RUNNING ─ program returns / StopContainer ─▶ EXITED
 *   RunPodSandbox ─▶ READY ─ StopPodSandbox (kills its containers) ─▶ NOTREADY ─ RemovePodSandbox
 *
 * One file on purpose: a fake for unit tests whose whole behaviour is read at once (it is kept honest by the contract test against the simulator).
 */
import { createHash, randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { AsyncQueue } from '../async-queue.js';
import { CriError, parseCriErrorCode, type CriErrorCode } from '../cri-error.js';
import { CriLogWriter, nowNs } from '../cri-log-writer.js';
import { normalizeImageRef } from '../image-reference.js';
import type { CallOptions, ContainerEventStream, CriMethod, ImageService, RuntimeService } from '../services.js';
import {
  ContainerEventType,
  ContainerState,
  PodSandboxState,
  type AuthConfig,
  type ContainerEventResponse,
  type ContainerStatus,
  type CriInput,
  type Image,
  type Mount,
  type PodSandboxStatus,
  type StringMap,
} from '../types.js';

/** What a fake container's program sees. */
export interface FakeProcess {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Writes to the container's CRI log (or, in ExecSync, to the response). */
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads a file under one of the container's mounts; undefined when no mount covers it or it is absent. */
  readFile(containerPath: string): string | undefined;
  /** Writes a file under one of the container's mounts; throws when no writable mount covers it. */
  writeFile(containerPath: string, text: string): void;
  /** Resolves with the signal StopContainer sends (`TERM`), never for SIGKILL. */
  readonly signalled: Promise<string>;
  /** Aborted on SIGKILL (StopContainer's timeout, StopPodSandbox, RemoveContainer, close). */
  readonly killed: AbortSignal;
}

/** A container's (or exec's) behaviour: resolves with the exit code. */
export type FakeProgram = (p: FakeProcess) => Promise<number> | number;

/** Runs until stopped, exiting 0 on the stop signal (the pause process). */
export const runUntilStopped: FakeProgram = (p) => p.signalled.then(() => 0);

/** An injected failure for one RPC. */
export interface FakeFailure {
  code: CriErrorCode | (string & {});
  /** @default `injected failure` */
  message?: string;
  /** Fail only the next `times` calls. @default every call */
  times?: number;
}

/** Options of {@link createFakeRuntime}. */
export interface FakeRuntimeOptions {
  /** The program for an argv; undefined → {@link runUntilStopped}. @default every argv runs until stopped */
  programs?: (argv: readonly string[]) => FakeProgram | undefined;
  /** Images present from the start, or `'all'` (any reference, except names containing `missing`). @default 'all' */
  images?: readonly string[] | 'all';
  /** Called by PullImage before it succeeds; throw to fail the pull (e.g. a 401 for missing credentials). */
  onPull?: (image: string, auth: CriInput<AuthConfig> | null | undefined) => void;
}

/** One RPC as the fake saw it. */
export interface FakeCall {
  method: CriMethod;
  at: number;
}

/** The fake: a CRI runtime plus test knobs. */
export interface FakeRuntimeService extends RuntimeService, ImageService {
  /** Adds latency (ms) per RPC; 0 removes it. */
  setLatency(latency: Partial<Record<CriMethod, number>>): void;
  injectFailure(method: CriMethod, failure: FakeFailure): void;
  clearFailures(method?: CriMethod): void;
  calls(): readonly FakeCall[];
  /** Kills every container, ends event streams; later calls fail with Unavailable. Idempotent. */
  close(): Promise<void>;
}

interface Sandbox {
  status: PodSandboxStatus;
  name: string;
  logDirectory: string;
}

interface Ctr {
  status: ContainerStatus;
  sandboxId: string;
  name: string;
  argv: string[];
  env: Record<string, string>;
  log: CriLogWriter;
  run: { kill: AbortController; signal: (s: string) => void; exited: Promise<void> } | undefined;
}

const newId = (): string => randomBytes(32).toString('hex');
const s = (v: string | null | undefined): string => v ?? '';
const map = (m: CriInput<StringMap> | null | undefined): StringMap => Object.fromEntries(Object.entries(m ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'));
const matches = (labels: StringMap, selector: CriInput<StringMap> | null | undefined): boolean => Object.entries(map(selector)).every(([k, v]) => labels[k] === v);

class FakeRuntime implements FakeRuntimeService {
  readonly #programs: (argv: readonly string[]) => FakeProgram | undefined;
  readonly #onPull: FakeRuntimeOptions['onPull'];
  readonly #all: boolean;
  readonly #images = new Map<string, Image>();
  readonly #sandboxes = new Map<string, Sandbox>();
  readonly #containers = new Map<string, Ctr>();
  readonly #names = new Map<string, string>();
  readonly #latency = new Map<CriMethod, number>();
  readonly #failures = new Map<CriMethod, FakeFailure>();
  readonly #calls: FakeCall[] = [];
  readonly #subscribers = new Set<AsyncQueue<ContainerEventResponse>>();
  #nextIp = 2;
  #closed = false;

  constructor(o: FakeRuntimeOptions) {
    this.#programs = o.programs ?? (() => undefined);
    this.#onPull = o.onPull;
    this.#all = (o.images ?? 'all') === 'all';
    if (o.images !== undefined && o.images !== 'all') for (const i of o.images) this.#addImage(i);
  }

  setLatency(latency: Partial<Record<CriMethod, number>>): void {
    for (const [m, ms] of Object.entries(latency)) {
      if (ms === undefined || ms <= 0) this.#latency.delete(m as CriMethod);
      else this.#latency.set(m as CriMethod, ms);
    }
  }
  injectFailure(method: CriMethod, failure: FakeFailure): void {
    this.#failures.set(method, { ...failure });
  }
  clearFailures(method?: CriMethod): void {
    if (method === undefined) this.#failures.clear();
    else this.#failures.delete(method);
  }
  calls(): readonly FakeCall[] {
    return [...this.#calls];
  }
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const q of this.#subscribers) q.end();
    await Promise.all([...this.#containers.values()].map((c) => this.#kill(c)));
  }

  async #enter(method: CriMethod): Promise<void> {
    if (this.#closed) throw new CriError('Unavailable', 'fake runtime is closed');
    this.#calls.push({ method, at: Date.now() });
    const ms = this.#latency.get(method);
    if (ms !== undefined) await new Promise((r) => setTimeout(r, ms));
    const f = this.#failures.get(method);
    if (f === undefined) return;
    if (f.times !== undefined && --f.times <= 0) this.#failures.delete(method);
    throw new CriError(parseCriErrorCode(f.code) ?? 'Unknown', f.message ?? 'injected failure', { method });
  }

  #sandbox(id: string | null | undefined): Sandbox {
    const sb = this.#sandboxes.get(s(id));
    if (sb === undefined) throw new CriError('NotFound', `an error occurred when try to find sandbox "${s(id)}": not found`);
    return sb;
  }
  #container(id: string | null | undefined): Ctr {
    const c = this.#containers.get(s(id));
    if (c === undefined) throw new CriError('NotFound', `an error occurred when try to find container "${s(id)}": not found`);
    return c;
  }
  #reserve(name: string, id: string, what: string): void {
    const holder = this.#names.get(name);
    if (holder !== undefined) throw new CriError('Unknown', `failed to reserve ${what} name "${name}": name "${name}" is reserved for "${holder}"`);
    this.#names.set(name, id);
  }
  #emit(id: string, type: ContainerEventType, sandboxId: string): void {
    const sb = this.#sandboxes.get(sandboxId);
    if (sb === undefined) return;
    const containersStatuses = [...this.#containers.values()].filter((c) => c.sandboxId === sandboxId).map((c) => ({ ...c.status }));
    for (const q of this.#subscribers) q.push({ containerId: id, containerEventType: type, createdAt: String(nowNs()), podSandboxStatus: { ...sb.status }, containersStatuses });
  }
  async #kill(c: Ctr): Promise<void> {
    c.run?.kill.abort();
    await c.run?.exited;
  }
  #image(ref: string): Image | undefined {
    const byId = [...this.#images.values()].find((i) => i.id === ref || i.id === `sha256:${ref}`);
    if (byId !== undefined) return byId;
    const n = normalizeImageRef(ref).normalized;
    return this.#images.get(n) ?? (this.#all && !/missing|doesnotexist/.test(n) ? this.#addImage(n) : undefined);
  }
  #addImage(ref: string): Image {
    const r = normalizeImageRef(ref);
    const digest = createHash('sha256').update(r.normalized).digest('hex');
    const image: Image = {
      id: `sha256:${digest}`,
      repoTags: [r.normalized],
      repoDigests: [`${r.repository}@sha256:${digest}`],
      size: '1000000',
      uid: null,
      username: '',
      spec: null,
      pinned: false,
    };
    this.#images.set(r.normalized, image);
    return image;
  }
  #process(c: Ctr, argv: string[], out: (stream: 'stdout' | 'stderr', t: string) => void, kill: AbortSignal, signalled: Promise<string>): FakeProcess {
    const resolve = (p: string): Mount | undefined =>
      [...c.status.mounts].sort((a, b) => b.containerPath.length - a.containerPath.length).find((m) => p === m.containerPath || p.startsWith(`${m.containerPath}/`));
    const hostPathOf = (p: string, m: Mount): string => path.join(m.hostPath, path.relative(m.containerPath, p));
    return {
      argv,
      env: c.env,
      stdout: (t) => out('stdout', t),
      stderr: (t) => out('stderr', t),
      readFile: (p) => {
        const m = resolve(p);
        try {
          return m === undefined ? undefined : readFileSync(hostPathOf(p, m), 'utf8');
        } catch {
          return undefined;
        }
      },
      writeFile: (p, text) => {
        const m = resolve(p);
        if (m === undefined || m.readonly) throw new Error(`${p}: no writable mount`);
        writeFileSync(hostPathOf(p, m), text);
      },
      signalled,
      killed: kill,
    };
  }

  async Version(): Promise<Awaited<ReturnType<RuntimeService['Version']>>> {
    await this.#enter('Version');
    return { version: '0.1.0', runtimeName: 'fake', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }
  async Status(): Promise<Awaited<ReturnType<RuntimeService['Status']>>> {
    await this.#enter('Status');
    const ready = (type: string) => ({ type, status: true, reason: '', message: '' });
    return { status: { conditions: [ready('RuntimeReady'), ready('NetworkReady')] }, info: {}, runtimeHandlers: [] };
  }
  async RunPodSandbox(req: Parameters<RuntimeService['RunPodSandbox']>[0]): Promise<Awaited<ReturnType<RuntimeService['RunPodSandbox']>>> {
    await this.#enter('RunPodSandbox');
    const md = req.config?.metadata;
    if (s(md?.name) === '' || s(md?.uid) === '' || s(md?.namespace) === '')
      throw new CriError('InvalidArgument', 'sandbox config must include metadata with name, uid and namespace');
    const metadata = { name: s(md?.name), uid: s(md?.uid), namespace: s(md?.namespace), attempt: md?.attempt ?? 0 };
    const id = newId();
    const name = `${metadata.name}_${metadata.namespace}_${metadata.uid}_${metadata.attempt}`;
    this.#reserve(name, id, 'sandbox');
    const ns = req.config?.linux?.securityContext?.namespaceOptions;
    const options = { network: ns?.network ?? 'POD', pid: ns?.pid ?? 'POD', ipc: ns?.ipc ?? 'POD', targetId: s(ns?.targetId) };
    const ip = options.network === 'NODE' ? '' : `10.88.${Math.floor(this.#nextIp / 256) % 256}.${this.#nextIp++ % 256}`;
    const status: PodSandboxStatus = {
      id,
      metadata,
      state: PodSandboxState.READY,
      createdAt: String(nowNs()),
      network: { ip, additionalIps: [] },
      linux: { namespaces: { options } },
      labels: map(req.config?.labels),
      annotations: map(req.config?.annotations),
      runtimeHandler: s(req.runtimeHandler),
    };
    this.#sandboxes.set(id, { status, name, logDirectory: s(req.config?.logDirectory) });
    this.#emit(id, ContainerEventType.CREATED, id);
    this.#emit(id, ContainerEventType.STARTED, id);
    return { podSandboxId: id };
  }
  async StopPodSandbox(req: Parameters<RuntimeService['StopPodSandbox']>[0]): Promise<Awaited<ReturnType<RuntimeService['StopPodSandbox']>>> {
    await this.#enter('StopPodSandbox');
    const sb = this.#sandbox(req.podSandboxId);
    await Promise.all([...this.#containers.values()].filter((c) => c.sandboxId === sb.status.id).map((c) => this.#kill(c)));
    if (sb.status.state === PodSandboxState.READY) {
      sb.status = { ...sb.status, state: PodSandboxState.NOTREADY, network: { ip: '', additionalIps: [] } };
      this.#emit(sb.status.id, ContainerEventType.STOPPED, sb.status.id);
    }
    return {};
  }
  async RemovePodSandbox(req: Parameters<RuntimeService['RemovePodSandbox']>[0]): Promise<Awaited<ReturnType<RuntimeService['RemovePodSandbox']>>> {
    await this.#enter('RemovePodSandbox');
    const sb = this.#sandboxes.get(s(req.podSandboxId));
    if (sb === undefined) return {};
    // As containerd (and the simulator): stop what runs, then remove each container, then the sandbox.
    const containers = [...this.#containers.values()].filter((x) => x.sandboxId === sb.status.id);
    await Promise.all(containers.map((c) => this.#kill(c)));
    if (sb.status.state === PodSandboxState.READY) {
      sb.status = { ...sb.status, state: PodSandboxState.NOTREADY, network: { ip: '', additionalIps: [] } };
      this.#emit(sb.status.id, ContainerEventType.STOPPED, sb.status.id);
    }
    for (const c of containers) {
      this.#containers.delete(c.status.id);
      this.#names.delete(c.name);
      this.#emit(c.status.id, ContainerEventType.DELETED, sb.status.id);
    }
    this.#emit(sb.status.id, ContainerEventType.DELETED, sb.status.id);
    this.#sandboxes.delete(sb.status.id);
    this.#names.delete(sb.name);
    return {};
  }
  async PodSandboxStatus(req: Parameters<RuntimeService['PodSandboxStatus']>[0]): Promise<Awaited<ReturnType<RuntimeService['PodSandboxStatus']>>> {
    await this.#enter('PodSandboxStatus');
    return { status: { ...this.#sandbox(req.podSandboxId).status }, info: {}, containersStatuses: [], timestamp: '0' };
  }
  async ListPodSandbox(req: Parameters<RuntimeService['ListPodSandbox']>[0]): Promise<Awaited<ReturnType<RuntimeService['ListPodSandbox']>>> {
    await this.#enter('ListPodSandbox');
    const f = req.filter;
    const items = [...this.#sandboxes.values()]
      .map((sb) => sb.status)
      .filter((x) => (s(f?.id) === '' || x.id === f?.id) && (f?.state == null || x.state === (f.state.state ?? PodSandboxState.READY)) && matches(x.labels, f?.labelSelector))
      .map(({ id, metadata, state, createdAt, labels, annotations, runtimeHandler }) => ({ id, metadata, state, createdAt, labels, annotations, runtimeHandler }));
    return { items };
  }
  async CreateContainer(req: Parameters<RuntimeService['CreateContainer']>[0]): Promise<Awaited<ReturnType<RuntimeService['CreateContainer']>>> {
    await this.#enter('CreateContainer');
    const sb = this.#sandbox(req.podSandboxId);
    if (sb.status.state !== PodSandboxState.READY) throw new CriError('NotFound', `failed to get sandbox container task: no running task found: task ${sb.status.id} not found`);
    const cfg = req.config ?? {};
    const image = this.#image(s(cfg.image?.image));
    if (image === undefined) throw new CriError('NotFound', `failed to resolve image "${s(cfg.image?.image)}": not found`);
    const metadata = { name: s(cfg.metadata?.name), attempt: cfg.metadata?.attempt ?? 0 };
    const id = newId();
    const pod = sb.status.metadata;
    const name = `${metadata.name}_${pod?.name}_${pod?.namespace}_${pod?.uid}_${metadata.attempt}`;
    this.#reserve(name, id, 'container');
    const logPath = s(cfg.logPath) !== '' && sb.logDirectory !== '' ? path.join(sb.logDirectory, s(cfg.logPath)) : s(cfg.logPath);
    const mounts: Mount[] = (cfg.mounts ?? []).map((m) => ({
      containerPath: s(m.containerPath),
      hostPath: s(m.hostPath),
      readonly: m.readonly ?? false,
      selinuxRelabel: m.selinuxRelabel ?? false,
      propagation: m.propagation ?? 'PROPAGATION_PRIVATE',
      recursiveReadOnly: m.recursiveReadOnly ?? false,
      image: null,
    }));
    const env: Record<string, string> = Object.fromEntries((cfg.envs ?? []).map((kv) => [s(kv.key), s(kv.value)]));
    const c: Ctr = {
      run: undefined,
      sandboxId: sb.status.id,
      name,
      argv: [...(cfg.command ?? []), ...(cfg.args ?? [])].map(String),
      env,
      log: new CriLogWriter(logPath === '' ? undefined : logPath),
      status: {
        id,
        metadata,
        state: ContainerState.CREATED,
        createdAt: String(nowNs()),
        startedAt: '0',
        finishedAt: '0',
        exitCode: 0,
        image: { image: image.repoTags[0] ?? image.id, annotations: {}, userSpecifiedImage: s(cfg.image?.userSpecifiedImage), runtimeHandler: '' },
        imageRef: image.repoDigests[0] ?? image.id,
        reason: '',
        message: '',
        labels: map(cfg.labels),
        annotations: map(cfg.annotations),
        mounts,
        logPath,
        resources: null,
        imageId: image.id,
      },
    };
    this.#containers.set(id, c);
    this.#emit(id, ContainerEventType.CREATED, sb.status.id);
    return { containerId: id };
  }
  async StartContainer(req: Parameters<RuntimeService['StartContainer']>[0]): Promise<Awaited<ReturnType<RuntimeService['StartContainer']>>> {
    await this.#enter('StartContainer');
    const c = this.#container(req.containerId);
    if (c.status.state !== ContainerState.CREATED)
      throw new CriError('Unknown', `failed to set starting state for container "${c.status.id}": container is in ${c.status.state} state`);
    c.log.open();
    const kill = new AbortController();
    let signal: (sig: string) => void = () => undefined;
    const signalled = new Promise<string>((r) => (signal = r));
    const program = this.#programs(c.argv) ?? runUntilStopped;
    const proc = this.#process(c, c.argv, (stream, t) => c.log.sink(stream).write(t), kill.signal, signalled);
    const killed = new Promise<number>((r) => kill.signal.addEventListener('abort', () => r(137), { once: true }));
    const exited = Promise.race([Promise.resolve().then(() => program(proc)), killed]).then(
      (code) => this.#exited(c, code),
      () => this.#exited(c, 1),
    );
    c.run = { kill, signal, exited };
    c.status = { ...c.status, state: ContainerState.RUNNING, startedAt: String(nowNs()) };
    this.#emit(c.status.id, ContainerEventType.STARTED, c.sandboxId);
    return {};
  }
  #exited(c: Ctr, code: number): void {
    c.log.flush();
    c.run?.kill.abort();
    c.run = undefined;
    c.status = { ...c.status, state: ContainerState.EXITED, finishedAt: String(nowNs()), exitCode: code, reason: code === 0 ? 'Completed' : 'Error' };
    this.#emit(c.status.id, ContainerEventType.STOPPED, c.sandboxId);
  }
  async StopContainer(req: Parameters<RuntimeService['StopContainer']>[0]): Promise<Awaited<ReturnType<RuntimeService['StopContainer']>>> {
    await this.#enter('StopContainer');
    const c = this.#container(req.containerId);
    const run = c.run;
    if (run === undefined) return {};
    const timeoutMs = Number(req.timeout ?? 0) * 1000;
    if (timeoutMs > 0) {
      run.signal('TERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([run.exited, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
    }
    await this.#kill(c);
    return {};
  }
  async RemoveContainer(req: Parameters<RuntimeService['RemoveContainer']>[0]): Promise<Awaited<ReturnType<RuntimeService['RemoveContainer']>>> {
    await this.#enter('RemoveContainer');
    const c = this.#containers.get(s(req.containerId));
    if (c === undefined) return {};
    await this.#kill(c);
    this.#containers.delete(c.status.id);
    this.#names.delete(c.name);
    this.#emit(c.status.id, ContainerEventType.DELETED, c.sandboxId);
    return {};
  }
  async ListContainers(req: Parameters<RuntimeService['ListContainers']>[0]): Promise<Awaited<ReturnType<RuntimeService['ListContainers']>>> {
    await this.#enter('ListContainers');
    const f = req.filter;
    const containers = [...this.#containers.values()]
      .filter(
        (c) =>
          (s(f?.id) === '' || c.status.id === f?.id) &&
          (s(f?.podSandboxId) === '' || c.sandboxId === f?.podSandboxId) &&
          (f?.state == null || c.status.state === (f.state.state ?? ContainerState.CREATED)) &&
          matches(c.status.labels, f?.labelSelector),
      )
      .map((c) => {
        const x = c.status;
        return {
          id: x.id,
          podSandboxId: c.sandboxId,
          metadata: x.metadata,
          image: x.image,
          imageRef: x.imageId,
          state: x.state,
          createdAt: x.createdAt,
          labels: x.labels,
          annotations: x.annotations,
          imageId: x.imageId,
        };
      });
    return { containers };
  }
  async ContainerStatus(req: Parameters<RuntimeService['ContainerStatus']>[0]): Promise<Awaited<ReturnType<RuntimeService['ContainerStatus']>>> {
    await this.#enter('ContainerStatus');
    return { status: { ...this.#container(req.containerId).status }, info: {} };
  }
  async ExecSync(req: Parameters<RuntimeService['ExecSync']>[0]): Promise<Awaited<ReturnType<RuntimeService['ExecSync']>>> {
    await this.#enter('ExecSync');
    const c = this.#container(req.containerId);
    if (c.run === undefined) throw new CriError('Unknown', `failed to exec in container: container is in ${c.status.state} state`);
    const cmd = (req.cmd ?? []).map(String);
    const out = { stdout: '', stderr: '' };
    const kill = new AbortController();
    const program = this.#programs(cmd) ?? runUntilStopped;
    const run = Promise.resolve().then(() => program(this.#process(c, cmd, (stream, t) => (out[stream] += t), kill.signal, new Promise(() => undefined))));
    const timeoutMs = Number(req.timeout ?? 0) * 1000;
    let timer: NodeJS.Timeout | undefined;
    const deadline = timeoutMs > 0 ? new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))) : new Promise<never>(() => undefined);
    const result = await Promise.race([run, deadline]).finally(() => clearTimeout(timer));
    if (result === 'timeout') {
      kill.abort();
      throw new CriError('DeadlineExceeded', `failed to exec in container: timeout ${timeoutMs / 1000}s exceeded: context deadline exceeded`);
    }
    return { stdout: Buffer.from(out.stdout), stderr: Buffer.from(out.stderr), exitCode: result };
  }
  GetContainerEvents(_req: unknown, options?: CallOptions): ContainerEventStream {
    const queue = new AsyncQueue<ContainerEventResponse>(() => this.#subscribers.delete(queue));
    this.#subscribers.add(queue);
    options?.signal?.addEventListener('abort', () => (this.#subscribers.delete(queue), queue.end()), { once: true });
    return { established: Promise.resolve(), [Symbol.asyncIterator]: () => queue };
  }

  async ListImages(): Promise<Awaited<ReturnType<ImageService['ListImages']>>> {
    await this.#enter('ListImages');
    return { images: [...this.#images.values()] };
  }
  async ImageStatus(req: Parameters<ImageService['ImageStatus']>[0]): Promise<Awaited<ReturnType<ImageService['ImageStatus']>>> {
    await this.#enter('ImageStatus');
    return { image: this.#image(s(req.image?.image)) ?? null, info: {} };
  }
  async PullImage(req: Parameters<ImageService['PullImage']>[0]): Promise<Awaited<ReturnType<ImageService['PullImage']>>> {
    await this.#enter('PullImage');
    const ref = normalizeImageRef(s(req.image?.image)).normalized;
    this.#onPull?.(ref, req.auth);
    if (/missing|doesnotexist/.test(ref)) throw new CriError('NotFound', `failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`);
    return { imageRef: (this.#images.get(ref) ?? this.#addImage(ref)).id };
  }
  async RemoveImage(req: Parameters<ImageService['RemoveImage']>[0]): Promise<Awaited<ReturnType<ImageService['RemoveImage']>>> {
    await this.#enter('RemoveImage');
    const image = this.#image(s(req.image?.image));
    for (const [k, v] of this.#images) if (v === image) this.#images.delete(k);
    return {};
  }
  async ImageFsInfo(): Promise<Awaited<ReturnType<ImageService['ImageFsInfo']>>> {
    await this.#enter('ImageFsInfo');
    return { imageFilesystems: [], containerFilesystems: [] };
  }
}

/** Creates a fake runtime; `close()` it when done. */
export function createFakeRuntime(options: FakeRuntimeOptions = {}): FakeRuntimeService {
  return new FakeRuntime(options);
}
