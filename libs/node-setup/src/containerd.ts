/**
 * A local containerd that splitlet starts itself: its own config, root, state, socket, runc root
 * and CNI network, all under `<stateDir>/containerd/`, so it neither needs nor disturbs a
 * machine-wide containerd (and two instances can run side by side).
 *
 *   <stateDir>/containerd/
 *     config.toml          generated on every start (containerd 1.6, config version 2)
 *     containerd.sock      the gRPC socket (CRI v1 and containerd's own API); .ttrpc beside it
 *     containerd.pid       the daemon's pid (it runs detached, in its own process group)
 *     containerd.log       its stdout and stderr
 *     network.json         the chosen pod network (name, bridge, subnet), reused across restarts
 *     root/ state/         containerd's --root and --state
 *     runc/                runc's state root (the runc runtime option `Root`)
 *     cni/net.d/           the CNI conflist;  cni/ipam/  host-local's store
 *     opt/                 the opt plugin's folder (instead of /opt/containerd)
 *     images/              built image archives, cached by content hash
 *     certs.d/             the CRI registry config_path: <host>/hosts.toml per registry host
 *     start.lock           held while a process starts the daemon (concurrent starts wait)
 *
 * Lifecycle (one state dir):
 *
 *   startContainerd ──► [running] ──stop()/stopContainerd──► [stopped: pods drained, bridge deleted,
 *        ▲    │                                                      state kept unless removeState]
 *        └────┘ a containerd of this state dir is alive (pid file, else found in /proc) and
 *               answers CRI: reuse it, never a second daemon
 *
 * One file on purpose: the lifecycle of one containerd (config, start, readiness, stop, its network) keeps its state-dir layout in one place; images and CNI are modules of their own.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, readSync, rmSync, statSync, writeFileSync, fstatSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { GrpcRuntimeService } from '@splitlet/cri';
import type { VersionResponse } from '@splitlet/cri';
import { CNI_BIN_DIR, CNI_PLUGINS, choosePodNetwork, deleteBridge, linkExists, writePodNetworkConfig } from './cni-network.js';
import type { PodNetwork } from './cni-network.js';
import { containerdConfigToml } from './containerd-config.js';
import type { ContainerdPaths, Snapshotter } from './containerd-config.js';
import { RUNTIME_PATH, hostCommand } from './host-command.js';
import { IMAGES } from './images.js';
import { RuntimeError } from './runtime-error.js';

/** The longest unix socket path Linux accepts (sun_path is 108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

/** Options of {@link startContainerd}. */
export interface StartContainerdOptions {
  /** The splitlet state dir; everything goes under `<stateDir>/containerd/`. */
  stateDir: string;
  /**
   * The pods' IPv4 subnet. Must not overlap anything on the host.
   * @default a free 10.x.y.0/24 (x in 200–249) derived from a hash of the state dir, then kept
   */
  subnet?: string;
  /**
   * The CNI network name.
   * @default `splitlet-<6 hex of the state dir's hash>`
   */
  name?: string;
  /**
   * How long to wait for the socket and a CRI `Version` + `Status` (runtime and network ready).
   * @default 20000
   */
  timeoutMs?: number;
  /**
   * The snapshotter; `auto` tries an overlay mount under the root and falls back to `native`.
   * @default 'auto'
   */
  snapshotter?: Snapshotter | 'auto';
  /**
   * Whether containerd may reach image registries. `none` points its HTTP(S) proxy at a closed
   * loopback port ({@link DEAD_PROXY}), so a `PullImage` of anything not on loopback fails at once
   * with `proxyconnect tcp: dial tcp 127.0.0.1:1: connect: connection refused` and no packet (not even
   * a DNS query) leaves the machine; registries on localhost/127.0.0.1 are never proxied and still
   * work ({@link NO_PROXY}). `direct` pulls normally. Only applies when a new daemon is started (a reused one keeps its own).
   * @default 'none'
   */
  registryAccess?: 'none' | 'direct';
}

/** The proxy a containerd without registry access gets: a loopback port nothing listens on. */
export const DEAD_PROXY = 'http://127.0.0.1:1';

/**
 * What the dead proxy never sees: registries on the node itself. Go's proxy selection already skips
 * `localhost` and loopback IPs; saying so explicitly keeps that true for any resolver.
 */
export const NO_PROXY = 'localhost,127.0.0.1,::1';

/** Options of {@link stopContainerd}. */
export interface StopContainerdOptions {
  /**
   * Stop and remove every pod sandbox first (so shims exit, netns and IPs are released).
   * Set false to leave containers running for a later containerd to pick up (the bridge then stays too).
   * @default true
   */
  drainPods?: boolean;
  /**
   * Delete `<stateDir>/containerd/` afterwards (after unmounting anything left under it).
   * @default false
   */
  removeState?: boolean;
  /**
   * How long containerd gets after SIGTERM before SIGKILL.
   * @default 10000
   */
  graceMs?: number;
}

/** A running local containerd. */
export interface LocalContainerd {
  /** The CRI endpoint: `unix:///…/containerd.sock`. */
  socket: string;
  /** The socket path (for `ctr --address`). */
  address: string;
  /** The state dir it was started for. */
  stateDir: string;
  paths: ContainerdPaths;
  network: PodNetwork;
  snapshotter: Snapshotter;
  pid: number;
  /** What the CRI `Version` call returned. */
  version: VersionResponse;
  /** True when an already running containerd of this state dir was reused. */
  reused: boolean;
  /** How long the start took, in ms (0 when reused). */
  startMs: number;
  /** Stops it: {@link stopContainerd} on this state dir. */
  stop(options?: StopContainerdOptions): Promise<void>;
}

/** What {@link containerdStatus} reports. */
export interface ContainerdStatus {
  running: boolean;
  /** Why it is not running or not ready, when it is not. */
  reason?: string;
  pid?: number;
  socket: string;
  network?: PodNetwork;
  version?: VersionResponse;
  /** The CRI `Status` conditions, e.g. `{RuntimeReady: true, NetworkReady: true}`. */
  conditions?: Record<string, boolean>;
  /** The bridge device exists. */
  bridgeUp?: boolean;
  logFile: string;
}

/** The paths of one instance. Pure. */
export function containerdPaths(stateDir: string): ContainerdPaths {
  const dir = join(resolve(stateDir), 'containerd');
  return {
    dir,
    config: join(dir, 'config.toml'),
    root: join(dir, 'root'),
    state: join(dir, 'state'),
    socket: join(dir, 'containerd.sock'),
    runcRoot: join(dir, 'runc'),
    cniConfDir: join(dir, 'cni', 'net.d'),
    ipamDataDir: join(dir, 'cni', 'ipam'),
    opt: join(dir, 'opt'),
    log: join(dir, 'containerd.log'),
    pidFile: join(dir, 'containerd.pid'),
    images: join(dir, 'images'),
    registryConfigDir: join(dir, 'certs.d'),
  };
}

/**
 * What is missing on this machine to run a local containerd, as human-readable items naming the
 * Debian package (empty when everything is there). Checks binaries on {@link RUNTIME_PATH}, the CNI
 * plugins in /usr/lib/cni, busybox-static and `ip`.
 */
export function missingPrerequisites(): string[] {
  const missing: string[] = [];
  const has = (bin: string): boolean => findOnPath(bin) !== undefined;
  if (!has('containerd')) missing.push('containerd (apt-get install containerd)');
  if (!has('ctr')) missing.push('ctr (apt-get install containerd)');
  if (!has('containerd-shim-runc-v2')) missing.push('containerd-shim-runc-v2 (apt-get install containerd)');
  if (!has('runc')) missing.push('runc (apt-get install runc)');
  for (const p of CNI_PLUGINS) if (!existsSync(join(CNI_BIN_DIR, p))) missing.push(`${CNI_BIN_DIR}/${p} (apt-get install containernetworking-plugins)`);
  if (!has('ip')) missing.push('ip (apt-get install iproute2)');
  if (!isStaticBusybox('/bin/busybox')) missing.push('a static /bin/busybox (apt-get install busybox-static)');
  return missing;
}

/** True if `path` is a statically linked ELF (no PT_INTERP program header). */
export function isStaticBusybox(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(Math.min(size, 64 * 1024));
    readSync(fd, head, 0, head.length, 0);
    if (head.readUInt32BE(0) !== 0x7f454c46 || head[4] !== 2) return false; // ELF64 only
    const phoff = Number(head.readBigUInt64LE(32));
    const phentsize = head.readUInt16LE(54);
    const phnum = head.readUInt16LE(56);
    for (let i = 0; i < phnum; i++) {
      const off = phoff + i * phentsize;
      if (off + 4 > head.length) return false;
      if (head.readUInt32LE(off) === 3) return false; // PT_INTERP: dynamically linked
    }
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function findOnPath(bin: string): string | undefined {
  for (const d of RUNTIME_PATH.split(':')) {
    const p = join(d, bin);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/**
 * The pid of the containerd running for this state dir: the pid file's, if that process is alive,
 * not a zombie, and a containerd using our config; else one found in /proc by its command line
 * (a lost or stale pid file must not lead to a second daemon on the same root). Rewrites the pid
 * file when it found the daemon in /proc.
 */
function runningPid(p: ContainerdPaths): number | undefined {
  let pid = NaN;
  try {
    pid = Number(readFileSync(p.pidFile, 'utf8').trim());
  } catch {
    // no pid file: look in /proc
  }
  if (Number.isInteger(pid) && pid > 1 && isOurContainerd(pid, p)) return pid;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const candidate = Number(entry);
    if (isOurContainerd(candidate, p)) {
      if (existsSync(p.dir)) writeFileSync(p.pidFile, `${candidate}\n`);
      return candidate;
    }
  }
  return undefined;
}

/**
 * Serializes starts for one state dir across processes: an exclusive lock file holding the pid of
 * its holder. A lock whose holder is gone is taken over. Resolves with the release function.
 */
async function lockStart(p: ContainerdPaths, timeoutMs: number): Promise<() => void> {
  const lock = join(p.dir, 'start.lock');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
      return () => rmSync(lock, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder: number;
    try {
      holder = Number(readFileSync(lock, 'utf8').trim());
    } catch {
      continue; // released meanwhile
    }
    if (!Number.isInteger(holder) || !alive(holder)) {
      rmSync(lock, { force: true }); // its holder died while starting
      continue;
    }
    if (Date.now() >= deadline)
      throw new RuntimeError('StartFailed', `another process (pid ${holder}) is starting the containerd of ${p.dir} and did not finish within ${timeoutMs} ms`);
    await sleep(50);
  }
}

function isOurContainerd(pid: number, p: ContainerdPaths): boolean {
  if (!alive(pid)) return false;
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return (argv[0] ?? '').endsWith('containerd') && argv.includes(p.config);
  } catch {
    return false;
  }
}

function logTail(path: string, lines = 25): string {
  try {
    const text = readFileSync(path, 'utf8');
    return text
      .split('\n')
      .slice(-lines - 1)
      .join('\n')
      .trim();
  } catch {
    return '(no log)';
  }
}

/** Tries an overlay mount under `root`, as containerd's overlayfs snapshotter would need. */
function overlaySupported(root: string): boolean {
  const probe = join(root, `.overlay-probe-${process.pid}`);
  const dirs = ['lower', 'upper', 'work', 'merged'].map((d) => join(probe, d));
  try {
    for (const d of dirs) mkdirSync(d, { recursive: true });
    const [lower, upper, work, merged] = dirs as [string, string, string, string];
    const m = hostCommand('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, merged]);
    if (m.status !== 0) return false;
    hostCommand('umount', [merged]);
    return true;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** Connects, calls Version and Status; resolves when the runtime and the network are ready. */
async function probeCri(socket: string, timeoutMs: number): Promise<{ version: VersionResponse; conditions: Record<string, boolean>; reasons: string }> {
  const client = await GrpcRuntimeService.connect({ endpoint: socket, connectTimeoutMs: timeoutMs, timeoutMs });
  try {
    const version = await client.Version({ version: 'v1' });
    const status = await client.Status({ verbose: false });
    const conditions: Record<string, boolean> = {};
    const reasons: string[] = [];
    for (const c of status.status?.conditions ?? []) {
      conditions[c.type] = c.status;
      if (!c.status) reasons.push(`${c.type}=false (${c.reason}: ${c.message})`);
    }
    return { version, conditions, reasons: reasons.join('; ') };
  } finally {
    client.close();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a containerd for `stateDir` (or reuses the one already running for it) and resolves once
 * it answers CRI `Version` and reports RuntimeReady and NetworkReady.
 *
 * The daemon runs detached (its own process group, output in `containerd.log`) and outlives the
 * calling process: stop it with `stop()` or {@link stopContainerd}. Idempotent: a second call for
 * the same state dir, from any process, returns the running instance (`reused: true`); concurrent
 * calls are serialized by a lock file, so only one daemon is ever started. Needs root.
 *
 * Fails with a {@link RuntimeError}: `Missing` (what to apt-get install), `InvalidOption`,
 * `NetworkConflict`, or `StartFailed` (with the tail of containerd's log) when it exits or is not
 * ready within `timeoutMs`; a daemon that did not get ready is killed.
 */
export async function startContainerd(options: StartContainerdOptions): Promise<LocalContainerd> {
  const t0 = performance.now();
  const stateDir = resolve(options.stateDir);
  const p = containerdPaths(stateDir);
  const timeoutMs = options.timeoutMs ?? 20_000;
  if (Buffer.byteLength(`${p.socket}.ttrpc`) > MAX_SOCKET_PATH) {
    throw new RuntimeError('InvalidOption', `the state dir path is too long for a unix socket: ${p.socket}.ttrpc is over ${MAX_SOCKET_PATH} bytes; use a shorter --state-dir`);
  }
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new RuntimeError('Missing', 'a local containerd needs root (mounts, network namespaces, cgroups); run as root or give --cri-endpoint of a running runtime');
  }
  const missing = missingPrerequisites();
  if (missing.length > 0) throw new RuntimeError('Missing', `cannot start a local containerd, missing: ${missing.join(', ')}`);

  mkdirSync(p.dir, { recursive: true });
  const unlock = await lockStart(p, timeoutMs + 5000);
  let started: Omit<LocalContainerd, 'stop' | 'startMs'>;
  try {
    started = await startLocked(stateDir, p, options, timeoutMs);
  } finally {
    unlock();
  }
  return {
    ...started,
    startMs: started.reused ? 0 : Math.round(performance.now() - t0),
    stop: (o?: StopContainerdOptions) => stopContainerd(stateDir, o),
  };
}

/** {@link startContainerd} under the start lock: reuse the running daemon, or start one. */
async function startLocked(stateDir: string, p: ContainerdPaths, options: StartContainerdOptions, timeoutMs: number): Promise<Omit<LocalContainerd, 'stop' | 'startMs'>> {
  const base = { socket: `unix://${p.socket}`, address: p.socket, stateDir, paths: p };
  const existing = runningPid(p);
  if (existing !== undefined) {
    const probe = await waitReady(p, existing, timeoutMs);
    const network = readNetwork(p) ?? choosePodNetwork(p.dir, { stateDir, subnet: options.subnet, name: options.name });
    return { ...base, network, snapshotter: readSnapshotter(p), pid: existing, version: probe.version, reused: true };
  }

  for (const d of [p.dir, p.root, p.state, p.runcRoot, p.opt, p.images, p.registryConfigDir]) mkdirSync(d, { recursive: true });
  for (const f of [p.socket, `${p.socket}.ttrpc`, p.pidFile]) rmSync(f, { force: true });
  const network = choosePodNetwork(p.dir, { stateDir, subnet: options.subnet, name: options.name });
  writePodNetworkConfig(p.cniConfDir, p.ipamDataDir, network);
  const snapshotter: Snapshotter = options.snapshotter === undefined || options.snapshotter === 'auto' ? (overlaySupported(p.root) ? 'overlayfs' : 'native') : options.snapshotter;
  writeFileSync(p.config, containerdConfigToml(p, { sandboxImage: IMAGES.pause, snapshotter }));

  const registryAccess = options.registryAccess ?? 'none';
  const env: Record<string, string> =
    registryAccess === 'direct'
      ? { PATH: RUNTIME_PATH }
      : { PATH: RUNTIME_PATH, HTTP_PROXY: DEAD_PROXY, HTTPS_PROXY: DEAD_PROXY, http_proxy: DEAD_PROXY, https_proxy: DEAD_PROXY, NO_PROXY: NO_PROXY, no_proxy: NO_PROXY };
  const logFd = openSync(p.log, 'a');
  writeFileSync(
    logFd,
    `--- splitlet: starting containerd at ${new Date().toISOString()} (snapshotter ${snapshotter}, registry access ${registryAccess}, network ${network.name} ${network.subnet} on ${network.bridge})\n`,
  );
  let pid: number;
  try {
    const child = spawn(findOnPath('containerd') ?? 'containerd', ['--config', p.config, '--root', p.root, '--state', p.state, '--address', p.socket], {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env,
    });
    child.unref();
    if (child.pid === undefined) {
      const err = await new Promise<Error>((r) => child.once('error', r));
      throw new RuntimeError('StartFailed', `cannot spawn containerd: ${err.message}`, { cause: err });
    }
    pid = child.pid;
  } finally {
    closeSync(logFd);
  }
  writeFileSync(p.pidFile, `${pid}\n`);
  try {
    const probe = await waitReady(p, pid, timeoutMs);
    return { ...base, network, snapshotter, pid, version: probe.version, reused: false };
  } catch (e) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
    rmSync(p.pidFile, { force: true });
    deleteBridge(network.bridge);
    throw e;
  }
}

async function waitReady(p: ContainerdPaths, pid: number, timeoutMs: number): Promise<{ version: VersionResponse }> {
  const deadline = Date.now() + timeoutMs;
  let last = 'the socket did not appear';
  for (;;) {
    if (!isOurContainerd(pid, p)) {
      throw new RuntimeError('StartFailed', `containerd (pid ${pid}) exited during start. Last lines of ${p.log}:\n${logTail(p.log)}`);
    }
    if (existsSync(p.socket)) {
      try {
        const probe = await probeCri(`unix://${p.socket}`, Math.max(200, Math.min(2000, deadline - Date.now())));
        if (probe.reasons === '') return probe;
        last = `not ready: ${probe.reasons}`;
      } catch (e) {
        last = e instanceof Error ? e.message : String(e);
      }
    }
    if (Date.now() >= deadline) {
      throw new RuntimeError('StartFailed', `containerd (pid ${pid}) did not get ready within ${timeoutMs} ms (${last}). Last lines of ${p.log}:\n${logTail(p.log)}`);
    }
    await sleep(50);
  }
}

function readNetwork(p: ContainerdPaths): PodNetwork | undefined {
  try {
    return JSON.parse(readFileSync(join(p.dir, 'network.json'), 'utf8')) as PodNetwork;
  } catch {
    return undefined;
  }
}

function readSnapshotter(p: ContainerdPaths): Snapshotter {
  try {
    return /snapshotter = "native"/.test(readFileSync(p.config, 'utf8')) ? 'native' : 'overlayfs';
  } catch {
    return 'overlayfs';
  }
}

/** The pids of containerd-shim processes serving our socket (shims outlive containerd by design). */
function ourShims(p: ContainerdPaths): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!(argv[0] ?? '').includes('containerd-shim')) continue;
      const i = argv.indexOf('-address');
      if (i !== -1 && argv[i + 1] === p.socket) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** Whether process `pid` exists and is neither a zombie nor dead (its state in `/proc/<pid>/stat`). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function waitExit(pids: number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (pids.some(alive)) {
    if (Date.now() >= deadline) return false;
    await sleep(25);
  }
  return true;
}

/** Stops and removes every pod sandbox (best effort, bounded). Returns the failures as text. */
async function drainPods(socket: string, deadlineMs: number): Promise<string[]> {
  const failures: string[] = [];
  let client: GrpcRuntimeService;
  try {
    client = await GrpcRuntimeService.connect({ endpoint: socket, connectTimeoutMs: 2000, timeoutMs: deadlineMs });
  } catch (e) {
    return [`cannot connect to drain pods: ${e instanceof Error ? e.message : String(e)}`];
  }
  try {
    const { items } = await client.ListPodSandbox({});
    await Promise.all(
      items.map(async (s) => {
        try {
          await client.StopPodSandbox({ podSandboxId: s.id });
          await client.RemovePodSandbox({ podSandboxId: s.id });
        } catch (e) {
          failures.push(`sandbox ${s.id}: ${e instanceof Error ? e.message : String(e)}`);
        }
      }),
    );
  } catch (e) {
    failures.push(`ListPodSandbox: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    client.close();
  }
  return failures;
}

/** containerd 1.6's machine-global folder of shim sockets (`/run/containerd/s/<sha256>`). */
const SHIM_SOCKET_DIR = '/run/containerd/s';
/** libcni's machine-global result cache (containerd does not let us move it). */
const CNI_RESULT_CACHE = '/var/lib/cni/results';

/**
 * Kills and deletes every container runc still knows under our runc root (`runc --root <root>/<ns>
 * delete --force <id>`), for each containerd namespace folder there, with what the lost daemon
 * would have removed for it in machine-global places: its shim socket (named by
 * sha256(<our socket>/<ns>/<id>)) and its CNI result cache files. Returns failures as text.
 */
function forceDeleteRuncContainers(p: ContainerdPaths, net: PodNetwork | undefined): string[] {
  const failures: string[] = [];
  let namespaces: string[];
  try {
    namespaces = readdirSync(p.runcRoot);
  } catch {
    return [];
  }
  for (const ns of namespaces) {
    const root = join(p.runcRoot, ns);
    const list = hostCommand('runc', ['--root', root, 'list', '-q']);
    for (const id of list.stdout?.split('\n').filter((l) => l.trim() !== '') ?? []) {
      const del = hostCommand('runc', ['--root', root, 'delete', '--force', id]);
      if (del.status !== 0) failures.push(`runc delete --force ${id}: ${(del.stderr || del.error?.message || '').trim()}`);
      rmSync(
        join(
          SHIM_SOCKET_DIR,
          createHash('sha256')
            .update(join(p.socket, ns, id))
            .digest('hex'),
        ),
        { force: true },
      );
      rmSync(join(CNI_RESULT_CACHE, `cni-loopback-${id}-lo`), { force: true });
      if (net !== undefined) rmSync(join(CNI_RESULT_CACHE, `${net.name}-${id}-eth0`), { force: true });
    }
  }
  return failures;
}

/** Mount points under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mp = line.split(' ')[4];
    if (mp === undefined) continue;
    const path = mp.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (path === dir || path.startsWith(`${dir}/`)) out.push(path);
  }
  return out.sort((a, b) => b.length - a.length);
}

/**
 * Stops the local containerd of `stateDir`: drains its pods (unless `drainPods: false`), SIGTERMs
 * it (SIGKILL after `graceMs`), kills shims left behind for our socket, deletes the bridge device,
 * and removes the pid file and sockets. The state (images, config) is kept unless `removeState`.
 *
 * Idempotent: stopping a stopped instance only cleans up what is left. Safe to call from a process
 * other than the one that started it. Fails with `StopFailed` when containerd survives SIGKILL or
 * state cannot be removed because something under it stays mounted.
 */
export async function stopContainerd(stateDir: string, options: StopContainerdOptions = {}): Promise<void> {
  const p = containerdPaths(stateDir);
  const drain = options.drainPods ?? true;
  if (!drain && options.removeState === true) throw new RuntimeError('InvalidOption', 'removeState needs drainPods: running containers live under the state dir');
  const graceMs = options.graceMs ?? 10_000;
  const problems: string[] = [];
  const pid = runningPid(p);
  if (pid !== undefined) {
    if (drain && existsSync(p.socket)) problems.push(...(await drainPods(`unix://${p.socket}`, 15_000)));
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // exited meanwhile
    }
    if (!(await waitExit([pid], graceMs))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
      if (!(await waitExit([pid], 5000))) throw new RuntimeError('StopFailed', `containerd (pid ${pid}) did not exit after SIGKILL`);
    }
  }
  if (drain) {
    // Containers the drain could not reach (containerd had crashed, or a sandbox failed to stop):
    // runc kills and deletes them from our runc root; then their shims exit or are killed.
    problems.push(...forceDeleteRuncContainers(p, readNetwork(p)));
    const shims = ourShims(p);
    for (const s of shims) {
      try {
        process.kill(s, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    await waitExit(shims, 5000);
    // No pod is left: what a crash left behind goes too (network namespaces, shm and rootfs mounts
    // under the state folder, the IPs still recorded by host-local).
    for (const m of mountsUnder(p.state)) hostCommand('umount', ['-l', m]);
    const net = readNetwork(p);
    if (net !== undefined) {
      rmSync(join(p.ipamDataDir, net.name), { recursive: true, force: true });
      deleteBridge(net.bridge);
    }
  }
  for (const f of [p.pidFile, p.socket, `${p.socket}.ttrpc`]) rmSync(f, { force: true });
  if (options.removeState === true && existsSync(p.dir)) {
    for (const m of mountsUnder(p.dir)) hostCommand('umount', ['-l', m]);
    const left = mountsUnder(p.dir);
    if (left.length > 0) throw new RuntimeError('StopFailed', `not removing ${p.dir}: still mounted: ${left.join(', ')}`);
    rmSync(p.dir, { recursive: true, force: true });
  }
  if (problems.length > 0) process.emitWarning(`splitlet runtime: draining pods: ${problems.join('; ')}`);
}

/**
 * Reports whether the local containerd of `stateDir` runs and is ready (CRI `Version` and `Status`).
 * Never throws for a stopped or broken instance: that is in `running`/`reason`.
 */
export async function containerdStatus(stateDir: string): Promise<ContainerdStatus> {
  const p = containerdPaths(stateDir);
  const network = readNetwork(p);
  const base: ContainerdStatus = { running: false, socket: `unix://${p.socket}`, logFile: p.log };
  if (network !== undefined) {
    base.network = network;
    base.bridgeUp = linkExists(network.bridge);
  }
  const pid = runningPid(p);
  if (pid === undefined) return { ...base, reason: existsSync(p.pidFile) ? 'the pid in the pid file is not a running containerd' : 'not started' };
  try {
    const probe = await probeCri(base.socket, 2000);
    const st: ContainerdStatus = { ...base, running: true, pid, version: probe.version, conditions: probe.conditions };
    if (probe.reasons !== '') st.reason = probe.reasons;
    return st;
  } catch (e) {
    return { ...base, pid, reason: `containerd (pid ${pid}) does not answer CRI: ${e instanceof Error ? e.message : String(e)}` };
  }
}
