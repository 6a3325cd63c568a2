/**
 * The CRI PodSandboxConfig for a pod.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_sandbox.go (generatePodSandboxConfig,
 * generatePodSandboxLinuxConfig), helpers.go (BuildPodLogsDirectory), pkg/kubelet/kubelet_pods.go
 * (GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded), pkg/kubelet/cm (pod cgroup names) and
 * pkg/kubelet/kuberuntime/util (NamespacesForPod).
 */
import { join } from 'node:path';
import type { BoundPod, Container } from '@splitlet/api';
import { getPodQos } from '@splitlet/kube';
import type { CriInput, NamespaceOption, PodSandboxConfig, PortMapping } from '@splitlet/cri';
import { podDnsConfig, type DnsSettings, type DnsWarning, type HostDns } from './dns.js';
import { newPodAnnotations, newPodLabels } from './labels.js';

/** Node-level settings the sandbox config depends on. */
export interface SandboxSettings {
  /** Root of the pod log directories (`--pod-logs-dir`, default /var/log/pods). */
  readonly podLogDir: string;
  readonly dns: DnsSettings;
  /**
   * Base of the pod cgroups (`--cgroup-root` + kubepods), e.g. `/kubepods` (cgroupfs driver) or
   * `kubepods.slice` (systemd driver, recognised by the `.slice` suffix). Unset: no cgroup parent.
   */
  readonly cgroupParent?: string | undefined;
}

/** `/var/log/pods/<namespace>_<name>_<uid>`. Models kuberuntime.BuildPodLogsDirectory. */
export function buildPodLogsDirectory(podLogDir: string, pod: BoundPod): string {
  return join(podLogDir, `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
}

/** `<podLogsDir>/<container>`. Models kuberuntime.BuildContainerLogsDirectory. */
export function buildContainerLogsDirectory(podLogDir: string, pod: BoundPod, containerName: string): string {
  return join(buildPodLogsDirectory(podLogDir, pod), containerName);
}

/** `<container>/<restartCount>.log`, relative to the sandbox's log directory. Models kuberuntime.buildContainerLogsPath. */
export function buildContainerLogsPath(containerName: string, restartCount: number): string {
  return join(containerName, `${restartCount}.log`);
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const HOSTNAME_MAX = 63;

/** Thrown when the sandbox config cannot be built (ConfigPodSandboxError / CreatePodSandboxError). */
export class SandboxConfigError extends Error {
  override readonly name = 'SandboxConfigError';
}

/**
 * The pod's hostname (`spec.hostname` or the pod name, cut to 63 characters without a trailing `-`
 * or `.`) and domain (`<subdomain>.<namespace>.svc.<clusterDomain>` when a subdomain is set).
 *
 * Models kubelet.GeneratePodHostNameAndDomain and truncatePodHostnameIfNeeded.
 */
export function podHostnameAndDomain(pod: BoundPod, clusterDomain: string): { hostname: string; domain: string } {
  let hostname = pod.metadata.name;
  const specHostname = pod.spec.hostname;
  if (specHostname !== undefined && specHostname !== '') {
    if (!DNS1123_LABEL.test(specHostname) || specHostname.length > HOSTNAME_MAX) {
      throw new SandboxConfigError(
        `pod Hostname ${JSON.stringify(specHostname)} is not a valid DNS label: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`,
      );
    }
    hostname = specHostname;
  }
  if (hostname.length > HOSTNAME_MAX) hostname = hostname.slice(0, HOSTNAME_MAX).replace(/[-.]+$/, '');
  const subdomain = pod.spec.subdomain;
  const domain = subdomain !== undefined && subdomain !== '' ? `${subdomain}.${pod.metadata.namespace}.svc.${clusterDomain}` : '';
  return { hostname, domain };
}

/**
 * The pod's cgroup parent by QoS: Guaranteed pods directly under the base, Burstable and BestEffort
 * under `burstable`/`besteffort`, then `pod<uid>`. With the cgroupfs driver this is a path
 * (`/kubepods/burstable/pod<uid>`); with the systemd driver (base ending in `.slice`) the expanded
 * slice path (`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice`).
 *
 * Models cm.podContainerManagerImpl.GetPodContainerName with CgroupName.ToCgroupfs / ToSystemd.
 */
export function podCgroupParent(pod: BoundPod, base: string): string {
  const qos = getPodQos(pod);
  const qosPart = qos === 'Guaranteed' ? [] : [qos.toLowerCase()];
  if (base.endsWith('.slice')) {
    const baseName = base.slice(base.lastIndexOf('/') + 1, -'.slice'.length);
    const parts = [...baseName.split('-'), ...qosPart, `pod${pod.metadata.uid}`].map((p) => p.replaceAll('-', '_'));
    const slices: string[] = [];
    for (let i = 1; i <= parts.length; i++) slices.push(`${parts.slice(0, i).join('-')}.slice`);
    return `/${slices.join('/')}`;
  }
  const trimmed = base.replace(/\/+$/, '');
  return [trimmed === '' ? '' : trimmed.startsWith('/') ? trimmed : `/${trimmed}`, ...qosPart, `pod${pod.metadata.uid}`].join('/');
}

/**
 * Network, PID and IPC namespace modes: NODE for hostNetwork / hostPID / hostIPC, else POD
 * (PID is CONTAINER unless `shareProcessNamespace`).
 *
 * Models runtimeutil.NamespacesForPod.
 */
export function namespacesForPod(pod: BoundPod): NamespaceOption {
  const share = (pod.spec as { shareProcessNamespace?: boolean }).shareProcessNamespace === true;
  return {
    network: pod.spec.hostNetwork === true ? 'NODE' : 'POD',
    pid: pod.spec.hostPID === true ? 'NODE' : share ? 'POD' : 'CONTAINER',
    ipc: pod.spec.hostIPC === true ? 'NODE' : 'POD',
    targetId: '',
  };
}

/** Port mappings for every port of every regular container. Models kubecontainer.MakePortMappings. */
export function portMappingsFor(containers: readonly Container[]): CriInput<PortMapping>[] {
  const out: CriInput<PortMapping>[] = [];
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      out.push({ containerPort: p.containerPort, hostPort: p.hostPort ?? 0, hostIp: p.hostIP ?? '', protocol: p.protocol ?? 'TCP' });
    }
  }
  return out;
}

interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  fsGroup?: number;
  supplementalGroups?: number[];
  sysctls?: Array<{ name: string; value: string }>;
  seLinuxOptions?: { user?: string; role?: string; type?: string; level?: string };
}

/** The pod-level securityContext with the fields the sandbox reads. */
export function podSecurityContext(pod: BoundPod): PodSecurityContext {
  return pod.spec.securityContext ?? {};
}

/**
 * The sandbox config: metadata {name, namespace, uid, attempt}; labels (pod labels + the
 * io.kubernetes.pod.* identity) and annotations (the pod's); DNS; hostname (not for hostNetwork
 * pods); log directory; port mappings; Linux: cgroup parent by QoS (when a base is configured),
 * privileged when any container is, seccomp RuntimeDefault, runAsUser/Group, supplemental groups
 * (+fsGroup), SELinux options, namespace modes and the pod's sysctls. Returns pod-level warnings
 * (MissingClusterDNS) to record as events. Throws {@link SandboxConfigError} for an invalid hostname.
 *
 * Models kubeGenericRuntimeManager.generatePodSandboxConfig.
 */
export function generatePodSandboxConfig(
  pod: BoundPod,
  attempt: number,
  settings: SandboxSettings,
  hostDns: HostDns,
): { config: CriInput<PodSandboxConfig>; warnings: DnsWarning[] } {
  const { config: dnsConfig, warnings } = podDnsConfig(pod, hostDns, settings.dns);
  const config: CriInput<PodSandboxConfig> = {
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid, attempt },
    labels: newPodLabels(pod),
    annotations: newPodAnnotations(pod),
    dnsConfig,
    logDirectory: buildPodLogsDirectory(settings.podLogDir, pod),
  };
  if (pod.spec.hostNetwork !== true) {
    const { hostname, domain } = podHostnameAndDomain(pod, settings.dns.clusterDomain);
    const fqdn = (pod.spec as { setHostnameAsFQDN?: boolean }).setHostnameAsFQDN === true && domain !== '';
    if (fqdn && `${hostname}.${domain}`.length > 64) {
      throw new SandboxConfigError(
        `failed to construct FQDN from pod hostname and cluster domain, FQDN ${hostname}.${domain} is too long (64 characters is the max, ${`${hostname}.${domain}`.length} characters requested)`,
      );
    }
    config.hostname = fqdn ? `${hostname}.${domain}` : hostname;
  }
  const ports = portMappingsFor(pod.spec.containers);
  if (ports.length > 0) config.portMappings = ports;

  const sc = podSecurityContext(pod);
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const sysctls: Record<string, string> = {};
  for (const s of sc.sysctls ?? []) sysctls[s.name] = s.value;
  const supplemental = [...(sc.supplementalGroups ?? [])];
  if (sc.fsGroup !== undefined) supplemental.unshift(sc.fsGroup);
  config.linux = {
    cgroupParent: settings.cgroupParent !== undefined && settings.cgroupParent !== '' ? podCgroupParent(pod, settings.cgroupParent) : '',
    sysctls,
    securityContext: {
      privileged: all.some((c) => c.securityContext?.privileged === true),
      seccomp: { profileType: 'RuntimeDefault' },
      namespaceOptions: namespacesForPod(pod),
      ...(sc.runAsUser !== undefined ? { runAsUser: { value: String(sc.runAsUser) } } : {}),
      ...(sc.runAsGroup !== undefined ? { runAsGroup: { value: String(sc.runAsGroup) } } : {}),
      ...(supplemental.length > 0 ? { supplementalGroups: supplemental.map(String) } : {}),
      ...(sc.seLinuxOptions !== undefined ? { selinuxOptions: { ...sc.seLinuxOptions } } : {}),
    },
  };
  return { config, warnings };
}
