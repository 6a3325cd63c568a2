/**
 * A real containerd 1.6 that splitlet starts itself (libs/node-setup), with locally built
 * images, driven through `@splitlet/cri`'s GrpcRuntimeService: sandboxes with CNI, container exit
 * codes and reasons, stop timeouts, start failures, image errors.
 *
 * Each observed runtime behaviour is printed as a `FACT …` line (JSON), so the simulated runtime
 * can be checked against what containerd really does.
 *
 * Skips, with the reason printed, when not root or when containerd, runc, the CNI plugins
 * (/usr/lib/cni), a static busybox or iproute2 are missing, or when RUN_CONTAINERD_TESTS=0.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerState, GrpcRuntimeService, NamespaceMode, PodSandboxState, isCriError } from '@splitlet/cri';
import type { ContainerConfig, ContainerStatus, CriInput, PodSandboxConfig } from '@splitlet/cri';
import { eventually } from '@splitlet/testkit';
import { IMAGES, containerdStatus, ensureImages, startContainerd } from '../../libs/node-setup/src/index.ts';
import { containerdSkipReason } from './harness.ts';
import type { LocalContainerd } from '../../libs/node-setup/src/index.ts';

const skip = containerdSkipReason();
if (skip !== undefined) console.log(`# containerd tests skipped: ${skip}`);

const facts: Record<string, unknown> = {};
function fact(key: string, value: unknown): void {
  facts[key] = value;
  console.log(`FACT ${key} ${JSON.stringify(value)}`);
}

function errorFact(e: unknown): { code: string; details: string; message: string } {
  if (isCriError(e)) return { code: e.code, details: e.details, message: e.message };
  throw e;
}

function statusFact(s: ContainerStatus): Record<string, unknown> {
  return { state: s.state, exitCode: s.exitCode, reason: s.reason, message: s.message, startedAt: s.startedAt !== '0', finishedAt: s.finishedAt !== '0' };
}

function inSubnet(ip: string, subnet: string): boolean {
  const [base = '', prefix = '24'] = subnet.split('/');
  const n = (a: string): number => a.split('.').reduce((acc, x) => acc * 256 + Number(x), 0);
  const size = 2 ** (32 - Number(prefix));
  return Math.floor(n(ip) / size) === Math.floor(n(base) / size);
}

describe('local containerd (real runtime)', { skip: skip ?? false, timeout: 90_000 }, () => {
  let dir: string;
  let rt: LocalContainerd;
  let cri: GrpcRuntimeService;
  const podUid = 'c0ffee00-0000-4000-8000-000000000001';
  let sandboxId = '';
  let sandboxConfig: CriInput<PodSandboxConfig>;
  let logDir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'spl-ctrd-'));
    const t0 = performance.now();
    rt = await startContainerd({ stateDir: dir });
    fact('timing.containerdStartMs', Math.round(performance.now() - t0));
    fact('containerd.version', rt.version);
    fact('containerd.network', { ...rt.network, snapshotter: rt.snapshotter });
    const t1 = performance.now();
    const images = await ensureImages(rt);
    fact('timing.imagesBuildImportMs', { total: Math.round(performance.now() - t1), each: images.map((i) => ({ names: i.names, buildMs: i.buildMs, importMs: i.importMs })) });
    cri = await GrpcRuntimeService.connect({ endpoint: rt.socket, timeoutMs: 30_000 });
    logDir = join(dir, 'logs', `default_web_${podUid}`);
    sandboxConfig = {
      metadata: { name: 'web', namespace: 'default', uid: podUid, attempt: 0 },
      hostname: 'web',
      logDirectory: logDir,
      dnsConfig: { servers: [rt.network.gateway], searches: ['default.svc.cluster.local', 'svc.cluster.local'], options: ['ndots:5'] },
      labels: { 'io.kubernetes.pod.name': 'web' },
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } } },
    };
  });

  after(async () => {
    cri?.close();
    if (rt !== undefined) {
      const t = performance.now();
      await rt.stop({ removeState: true });
      fact('timing.containerdStopMs', Math.round(performance.now() - t));
      const st = await containerdStatus(dir);
      assert.equal(st.running, false);
      assert.equal(st.bridgeUp ?? false, false, `bridge ${rt.network.bridge} is gone after stop`);
      assert.equal(readFileSync('/proc/net/dev', 'utf8').includes(`${rt.network.bridge}:`), false, 'no bridge device left');
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    console.log(`FACTS ${JSON.stringify(facts)}`);
  });

  /**
   * A container config as the kubelet writes it: its own PID namespace (pid CONTAINER, unless the pod
   * shares its process namespace), so the command is PID 1. The CRI zero value (pid POD) shares the
   * sandbox's PID namespace instead, where the command is not PID 1.
   */
  function containerConfig(name: string, command: string[], opts: { image?: string; pid?: NamespaceMode } = {}): CriInput<ContainerConfig> {
    return {
      metadata: { name, attempt: 0 },
      image: { image: opts.image ?? IMAGES.busybox136 },
      command,
      logPath: `${name}/0.log`,
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.POD, pid: opts.pid ?? NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } } },
    };
  }

  /** Creates and starts a container in the test sandbox. */
  async function run(name: string, command: string[], opts: { image?: string; pid?: NamespaceMode } = {}): Promise<string> {
    const { containerId } = await cri.CreateContainer({ podSandboxId: sandboxId, config: containerConfig(name, command, opts), sandboxConfig });
    await cri.StartContainer({ containerId });
    return containerId;
  }

  async function waitExited(containerId: string, timeoutMs = 10_000): Promise<ContainerStatus> {
    const exited = await eventually(
      async () => {
        const s = (await cri.ContainerStatus({ containerId })).status;
        return s?.state === ContainerState.EXITED ? s : undefined;
      },
      { timeoutMs, intervalMs: 25, message: `container ${containerId} exits` },
    );
    assert.ok(exited);
    return exited;
  }

  test('idempotent: a second start reuses the daemon, a second ensureImages imports nothing', async () => {
    const again = await startContainerd({ stateDir: dir });
    assert.equal(again.reused, true);
    assert.equal(again.pid, rt.pid);
    assert.equal(again.socket, rt.socket);
    assert.deepEqual(again.network, rt.network);
    const images = await ensureImages(again);
    assert.deepEqual(
      images.map((i) => i.imported),
      [false, false, false],
    );
    const st = await containerdStatus(dir);
    assert.equal(st.running, true);
    assert.deepEqual(st.conditions, { RuntimeReady: true, NetworkReady: true });
  });

  test('RunPodSandbox: the sandbox gets an IP in our subnet', async () => {
    const t = performance.now();
    ({ podSandboxId: sandboxId } = await cri.RunPodSandbox({ config: sandboxConfig }));
    fact('timing.firstRunPodSandboxMs', Math.round(performance.now() - t));
    const st = (await cri.PodSandboxStatus({ podSandboxId: sandboxId })).status;
    assert.equal(st?.state, PodSandboxState.READY);
    const ip = st?.network?.ip ?? '';
    fact('sandbox.ip', { ip, subnet: rt.network.subnet });
    assert.ok(inSubnet(ip, rt.network.subnet), `${ip} in ${rt.network.subnet}`);
    assert.ok(readFileSync('/proc/net/dev', 'utf8').includes(`${rt.network.bridge}:`), 'the bridge device exists');
  });

  test('GetContainerEvents: containerd 1.6 answers Unimplemented (cri-adapter keeps poking, pleg keeps its 1 s relist); 1.7+ streams', async () => {
    const { runtimeVersion } = await cri.Version({});
    const abort = new AbortController();
    const outcome = await cri.GetContainerEvents({}, { signal: abort.signal }).established.then(
      () => 'streams',
      (e: unknown) => errorFact(e),
    );
    abort.abort();
    fact('getContainerEvents', { runtimeVersion, outcome });
    if (/^v?1\.6\./.test(runtimeVersion)) assert.equal(typeof outcome === 'string' ? outcome : outcome.code, 'Unimplemented');
    else assert.equal(outcome, 'streams');
  });

  test('exit code 3: the CRI log has "hello", status exited/3/Error; resolv.conf carries the DNS config', async () => {
    const id = await run('exit3', ['sh', '-c', 'echo hello; cat /etc/resolv.conf; sleep 1; exit 3']);
    const s = await waitExited(id);
    fact('status.exit3', statusFact(s));
    assert.equal(s.exitCode, 3);
    assert.equal(s.reason, 'Error');
    assert.equal(s.logPath, join(logDir, 'exit3/0.log'));
    const log = readFileSync(s.logPath, 'utf8');
    fact('log.exit3', log.split('\n').slice(0, 3));
    assert.match(log, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:\d\d) stdout F hello$/m);
    assert.match(log, new RegExp(`stdout F nameserver ${rt.network.gateway.replaceAll('.', '\\.')}$`, 'm'));
    assert.match(log, /stdout F search default\.svc\.cluster\.local svc\.cluster\.local$/m);
    assert.match(log, /stdout F options ndots:5$/m);
  });

  test('exit 0 → reason Completed', async () => {
    const s = await waitExited(await run('exit0', ['true']));
    fact('status.exit0', statusFact(s));
    assert.equal(s.exitCode, 0);
    assert.equal(s.reason, 'Completed');
  });

  test('StopContainer(timeout 1) on a PID 1 that ignores SIGTERM: 137 after about 1 s', async () => {
    const id = await run('sleeper', ['sleep', '3600']);
    const t = performance.now();
    await cri.StopContainer({ containerId: id, timeout: '1' });
    const ms = Math.round(performance.now() - t);
    const s = (await cri.ContainerStatus({ containerId: id })).status;
    assert.ok(s);
    fact('status.stopTermIgnored', { ...statusFact(s), stopMs: ms });
    assert.equal(s.state, ContainerState.EXITED);
    assert.equal(s.exitCode, 137);
    assert.ok(ms >= 900 && ms < 3000, `stop took ${ms} ms`);
  });

  test('the same command in the sandbox PID namespace (pid POD) is not PID 1: SIGTERM kills it (143)', async () => {
    const id = await run('sleeper-shared-pid', ['sleep', '3600'], { pid: NamespaceMode.POD });
    const t = performance.now();
    await cri.StopContainer({ containerId: id, timeout: '10' });
    const ms = Math.round(performance.now() - t);
    const s = (await cri.ContainerStatus({ containerId: id })).status;
    assert.ok(s);
    fact('status.stopSharedPidNamespace', { ...statusFact(s), stopMs: ms });
    assert.equal(s.exitCode, 143);
    assert.equal(s.reason, 'Error');
  });

  test('StopContainer(timeout 10) on a process that exits on TERM: exit 0, quickly', async () => {
    const id = await run('trapper', ['sh', '-c', "trap 'exit 0' TERM; echo ready; sleep 3600 & wait"]);
    // the trap is installed once "ready" is in the log
    await eventually(() => readFileSync(join(logDir, 'trapper/0.log'), 'utf8').includes('stdout F ready'), { message: 'trapper is ready' });
    const t = performance.now();
    await cri.StopContainer({ containerId: id, timeout: '10' });
    const ms = Math.round(performance.now() - t);
    const s = (await cri.ContainerStatus({ containerId: id })).status;
    assert.ok(s);
    fact('status.stopTrapped', { ...statusFact(s), stopMs: ms });
    assert.equal(s.exitCode, 0);
    assert.equal(s.reason, 'Completed');
    assert.ok(ms < 2000, `stop took ${ms} ms`);
  });

  test('an unknown executable: StartContainer fails (text, state, reason, exit code recorded)', async () => {
    const { containerId } = await cri.CreateContainer({ podSandboxId: sandboxId, config: containerConfig('nosuch', ['/no/such/binary']), sandboxConfig });
    const err = await cri.StartContainer({ containerId }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err !== undefined, 'StartContainer fails');
    fact('error.startUnknownExecutable', errorFact(err));
    const s = (await cri.ContainerStatus({ containerId })).status;
    assert.ok(s);
    fact('status.startUnknownExecutable', statusFact(s));
    const list = await cri.ListContainers({ filter: { id: containerId } });
    fact(
      'list.startUnknownExecutable',
      list.containers.map((c) => c.state),
    );
    // a second start of the failed container
    const again = await cri.StartContainer({ containerId }).then(
      () => undefined,
      (e: unknown) => e,
    );
    fact('error.startAgainAfterStartError', again === undefined ? 'succeeded' : errorFact(again));
    // a shell command that is not found exits 127 instead (the shell runs, the command does not)
    const s127 = await waitExited(await run('nocmd', ['sh', '-c', 'nosuchcmd']));
    fact('status.shellCommandNotFound', statusFact(s127));
    assert.equal(s127.exitCode, 127);
  });

  test('a second container with the same name and attempt is refused', async () => {
    const err = await cri.CreateContainer({ podSandboxId: sandboxId, config: containerConfig('exit3', ['true']), sandboxConfig }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err !== undefined);
    fact('error.createDuplicateName', errorFact(err));
  });

  test('images: present, missing, unpullable (loopback registry), invalid reference', async () => {
    const present = await cri.ImageStatus({ image: { image: 'busybox:1.36' } });
    fact('image.statusShortName', { id: present.image?.id, repoTags: present.image?.repoTags, repoDigests: present.image?.repoDigests, size: present.image?.size });
    assert.ok(present.image);
    const ids = await Promise.all([IMAGES.busybox136, IMAGES.busybox137, IMAGES.busyboxLatest].map(async (i) => (await cri.ImageStatus({ image: { image: i } })).image?.id));
    fact('image.ids', ids);
    assert.notEqual(ids[0], ids[1], '1.36 and 1.37 are different images');
    assert.equal(ids[1], ids[2], 'latest is 1.37');

    const missing = await cri.ImageStatus({ image: { image: 'docker.io/library/nosuch:1.0' } });
    fact('image.statusMissing', { image: missing.image });
    assert.equal(missing.image, null);

    // CreateContainer with an image that is not there
    const createMissing = await cri
      .CreateContainer({ podSandboxId: sandboxId, config: containerConfig('noimage', ['true'], { image: 'docker.io/library/nosuch:1.0' }), sandboxConfig })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(createMissing !== undefined);
    fact('error.createMissingImage', errorFact(createMissing));

    // Pull from a registry on loopback that is not listening (no traffic leaves the machine).
    const t = performance.now();
    const pull = await cri.PullImage({ image: { image: '127.0.0.1:1/nosuch:1.0' } }, { deadlineMs: 20_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(pull !== undefined);
    fact('error.pullUnreachableRegistry', { ...errorFact(pull), ms: Math.round(performance.now() - t) });

    // A remote registry: containerd's proxy is a closed loopback port (registryAccess 'none'), so
    // this fails at once and nothing (not even a DNS query) leaves the machine.
    const t2 = performance.now();
    const remote = await cri.PullImage({ image: { image: 'docker.io/library/nosuch:1.0' } }, { deadlineMs: 20_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(remote !== undefined);
    fact('error.pullRemoteWithoutRegistryAccess', { ...errorFact(remote), ms: Math.round(performance.now() - t2) });
    assert.match(errorFact(remote).details, /proxyconnect tcp: dial tcp 127\.0\.0\.1:1: connect: connection refused/);

    // Only references that fail to parse (a parseable one would be pulled).
    for (const ref of ['Busybox:UPPER', 'busybox::bad']) {
      const st = await cri.ImageStatus({ image: { image: ref } }).then(
        (r) => ({ ok: true, image: r.image?.id ?? null }),
        (e: unknown) => ({ ok: false, ...errorFact(e) }),
      );
      const pl = await cri.PullImage({ image: { image: ref } }, { deadlineMs: 5_000 }).then(
        (r) => ({ ok: true, imageRef: r.imageRef }),
        (e: unknown) => ({ ok: false, ...errorFact(e) }),
      );
      fact(`image.invalidRef ${ref}`, { imageStatus: st, pullImage: pl });
    }
  });

  test('StopPodSandbox + RemovePodSandbox remove everything', async () => {
    await cri.StopPodSandbox({ podSandboxId: sandboxId });
    const st = (await cri.PodSandboxStatus({ podSandboxId: sandboxId })).status;
    fact('sandbox.afterStop', { state: st?.state, ip: st?.network?.ip ?? '' });
    const cs = await cri.ListContainers({ filter: { podSandboxId: sandboxId } });
    fact(
      'containers.afterStopPodSandbox',
      cs.containers.map((c) => `${c.metadata?.name}:${c.state}`),
    );
    await cri.RemovePodSandbox({ podSandboxId: sandboxId });
    assert.deepEqual((await cri.ListPodSandbox({})).items, []);
    assert.deepEqual((await cri.ListContainers({})).containers, []);
    const gone = await cri.PodSandboxStatus({ podSandboxId: sandboxId }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(gone !== undefined);
    fact('error.statusOfRemovedSandbox', errorFact(gone));
  });

  test('latencies: 5 pods one at a time (RunPodSandbox, CreateContainer, StartContainer, teardown)', async () => {
    const rows: { run: number; create: number; start: number; teardown: number }[] = [];
    for (let i = 0; i < 5; i++) {
      const config: CriInput<PodSandboxConfig> = {
        ...sandboxConfig,
        metadata: { name: `lat${i}`, namespace: 'default', uid: `lat-${i}`, attempt: 0 },
        logDirectory: join(dir, 'logs', `lat${i}`),
      };
      const t0 = performance.now();
      const { podSandboxId } = await cri.RunPodSandbox({ config });
      const t1 = performance.now();
      const { containerId } = await cri.CreateContainer({ podSandboxId, config: containerConfig('main', ['sleep', '3600']), sandboxConfig: config });
      const t2 = performance.now();
      await cri.StartContainer({ containerId });
      const t3 = performance.now();
      await cri.StopPodSandbox({ podSandboxId });
      await cri.RemovePodSandbox({ podSandboxId });
      const t4 = performance.now();
      rows.push({ run: t1 - t0, create: t2 - t1, start: t3 - t2, teardown: t4 - t3 });
    }
    const med = (k: keyof (typeof rows)[number]): number => {
      const v = rows.map((r) => r[k]).sort((a, b) => a - b);
      return Math.round(v[Math.floor(v.length / 2)] ?? 0);
    };
    fact('timing.perPodMedianMs', { runPodSandbox: med('run'), createContainer: med('create'), startContainer: med('start'), teardown: med('teardown') });
  });
});
