/**
 * The runtime floor of the containerd benchmarks: what a kubelet does for one busybox pod on its way
 * to Running, made directly — the pod's data and log directories, RunPodSandbox with the kubelet's
 * sandbox config (labels, annotations, the node's DNS, hostname, log directory, RuntimeDefault
 * seccomp), PodSandboxStatus (the pod IP), ImageStatus, the managed /etc/hosts and termination-log
 * files, CreateContainer with the kubelet's container config (mounts, resources, masked paths, labels,
 * annotations), StartContainer and ContainerStatus (the status read back). The configs are those
 * cri-adapter generates for the same manifest (see `splitlet` `kuberuntime/sandbox-config.ts` and
 * `container-config.ts`), so both sides of the ratio ask containerd for the same work.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerConfig, CriInput, GrpcRuntimeService, PodSandboxConfig } from '@splitlet/cri';

/** The busybox pod both sides run: one container that exits at once on TERM. */
export const BENCH_IMAGE = 'docker.io/library/busybox:1.36';
export const BENCH_COMMAND = ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"];

/** How long each step of one direct pod took, ms. */
export interface DirectPodTimes {
  readonly total: number;
  readonly steps: Readonly<Record<string, number>>;
  readonly podSandboxId: string;
}

/** Where the direct pods' files go (as the kubelet's root dir and pod log dir). */
export interface DirectPodDirs {
  readonly podRoot: string;
  readonly logRoot: string;
}

const MASKED_PATHS = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
const READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];
const NAMESPACES = { network: 'POD', pid: 'CONTAINER', ipc: 'POD', targetId: '' } as const;

/** The pod's identity labels (without the UID when hidden from splitlet). */
function podLabels(name: string, uid: string, hidden: boolean): Record<string, string> {
  const labels: Record<string, string> = { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default' };
  if (!hidden) labels['io.kubernetes.pod.uid'] = uid;
  return labels;
}

/** The node's resolver (nameservers, search, options), as the kubelet hands a pod with no cluster DNS. */
async function hostDns(): Promise<{ servers: string[]; searches: string[]; options: string[] }> {
  const servers: string[] = [];
  let searches: string[] = [];
  const options: string[] = [];
  for (const raw of (await readFile('/etc/resolv.conf', 'utf8').catch(() => '')).split('\n')) {
    const [key, ...rest] = raw.trim().split(/\s+/);
    if (key === 'nameserver' && rest[0] !== undefined) servers.push(rest[0]);
    if (key === 'search') searches = rest.filter((s) => s !== '.');
    if (key === 'options') options.push(...rest);
  }
  return { servers, searches, options };
}

/**
 * Runs one pod directly; resolves once its container is reported running. With `hidden`, its
 * sandbox and container carry no `io.kubernetes.pod.uid` label, so a splitlet node on the same
 * runtime does not see them (its relist groups by that label): they are not killed as orphans.
 */
export async function runDirectPod(cri: GrpcRuntimeService, dirs: DirectPodDirs, name: string, opts: { hidden?: boolean } = {}): Promise<DirectPodTimes> {
  const steps: Record<string, number> = {};
  const step = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      steps[label] = (steps[label] ?? 0) + performance.now() - t;
    }
  };
  const t0 = performance.now();
  const uid = randomBytes(16).toString('hex');
  const podDir = join(dirs.podRoot, uid);
  const logDir = join(dirs.logRoot, `default_${name}_${uid}`);
  await step('dirs', async () => {
    for (const d of ['volumes', 'plugins', 'containers']) await mkdir(join(podDir, d), { recursive: true, mode: 0o750 });
    await mkdir(logDir, { recursive: true, mode: 0o755 });
  });
  const dns = await step('dns', hostDns);
  const sandboxConfig: CriInput<PodSandboxConfig> = {
    metadata: { name, namespace: 'default', uid, attempt: 0 },
    labels: podLabels(name, uid, opts.hidden === true),
    annotations: { 'kubernetes.io/config.hash': uid, 'kubernetes.io/config.seen': new Date().toISOString(), 'kubernetes.io/config.source': 'file' },
    dnsConfig: dns,
    logDirectory: logDir,
    hostname: name,
    linux: {
      cgroupParent: '',
      sysctls: {},
      securityContext: { privileged: false, seccomp: { profileType: 'RuntimeDefault' }, namespaceOptions: NAMESPACES },
    },
  };
  const { podSandboxId } = await step('RunPodSandbox', () => cri.RunPodSandbox({ config: sandboxConfig }));
  const sb = await step('PodSandboxStatus', () => cri.PodSandboxStatus({ podSandboxId }));
  const ip = sb.status?.network?.ip ?? '';
  const img = await step('ImageStatus', () => cri.ImageStatus({ image: { image: BENCH_IMAGE } }));
  const imageRef = img.image?.id ?? BENCH_IMAGE;
  const mounts = await step('files', async () => {
    await mkdir(join(logDir, 'c'), { recursive: true, mode: 0o755 });
    const hosts = join(podDir, 'etc-hosts');
    await writeFile(
      hosts,
      `# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n${ip}\t${name}\n`,
      { mode: 0o644 },
    );
    const termDir = join(podDir, 'containers', 'c');
    await mkdir(termDir, { recursive: true, mode: 0o750 });
    const term = join(termDir, randomBytes(4).toString('hex'));
    await writeFile(term, '', { mode: 0o666 });
    return [
      { containerPath: '/etc/hosts', hostPath: hosts, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' as const },
      { containerPath: '/dev/termination-log', hostPath: term, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' as const },
    ];
  });
  const config: CriInput<ContainerConfig> = {
    metadata: { name: 'c', attempt: 0 },
    image: { image: imageRef, userSpecifiedImage: 'busybox:1.36' },
    command: BENCH_COMMAND,
    args: [],
    workingDir: '',
    envs: [],
    mounts,
    labels: { 'io.kubernetes.container.name': 'c', ...podLabels(name, uid, opts.hidden === true) },
    annotations: {
      'io.kubernetes.container.hash': '00000000',
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '1',
    },
    logPath: 'c/0.log',
    stdin: false,
    stdinOnce: false,
    tty: false,
    linux: {
      resources: { cpuPeriod: '100000', cpuShares: '2', oomScoreAdj: '1000' },
      securityContext: { privileged: false, readonlyRootfs: false, noNewPrivs: false, namespaceOptions: NAMESPACES, maskedPaths: MASKED_PATHS, readonlyPaths: READONLY_PATHS },
    },
  };
  const { containerId } = await step('CreateContainer', () => cri.CreateContainer({ podSandboxId, config, sandboxConfig }));
  await step('StartContainer', () => cri.StartContainer({ containerId }));
  // "Running reported" needs the status read back, as the kubelet's GetPodStatus does.
  const { status } = await step('ContainerStatus', () => cri.ContainerStatus({ containerId }));
  if (status?.state !== 'CONTAINER_RUNNING') throw new Error(`direct: container ${containerId} is ${status?.state}`);
  return { total: performance.now() - t0, steps, podSandboxId };
}
