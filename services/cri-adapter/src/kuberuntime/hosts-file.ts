/**
 * The kubelet-managed /etc/hosts: its content, whether a container gets it, and the file in the pod
 * directory that is mounted over the container's /etc/hosts.
 *
 * Models pkg/kubelet/kubelet_pods.go (shouldMountHostsFile, the /etc/hosts part of makeMounts,
 * getEtcHostsPath, makeHostsMount, ensureHostsFile, nodeHostsFileContent, managedHostsFileContent,
 * hostsEntriesFromHostAliases).
 */
import { join } from 'node:path';
import type { BoundPod, Container } from '@splitlet/api';
import type { CriInput, Mount } from '@splitlet/cri';
import type { NodeFiles } from '../ports.js';

/** Where the managed file is mounted in the container (the kubelet's etcHostsPath). */
export const ETC_HOSTS_PATH = '/etc/hosts';

const MANAGED_HOSTS_HEADER = '# Kubernetes-managed hosts file.\n';
const MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

/** One `spec.hostAliases` entry. */
export type HostAlias = NonNullable<BoundPod['spec']['hostAliases']>[number];

/**
 * The "# Entries added by HostAliases." section: a blank line, the comment, then one line per alias
 * with its IP and all its hostnames, tab-separated. Empty without aliases.
 *
 * Models kubelet.hostsEntriesFromHostAliases.
 */
export function hostsEntriesFromHostAliases(aliases: readonly HostAlias[]): string {
  if (aliases.length === 0) return '';
  let out = '\n# Entries added by HostAliases.\n';
  for (const a of aliases) out += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  return out;
}

/**
 * The managed hosts file of a pod with its own network: header, the localhost and IPv6 lines, one
 * line per pod IP naming the pod (`<ip>\t<hostname>.<domain>\t<hostname>` when the pod has a domain,
 * else `<ip>\t<hostname>`), then the host aliases.
 *
 * Models kubelet.managedHostsFileContent.
 */
export function managedHostsFileContent(podIPs: readonly string[], hostname: string, domain: string, aliases: readonly HostAlias[]): string {
  let out = MANAGED_HOSTS_HEADER;
  out += '127.0.0.1\tlocalhost\n';
  out += '::1\tlocalhost ip6-localhost ip6-loopback\n';
  out += 'fe00::0\tip6-localnet\n';
  out += 'fe00::0\tip6-mcastprefix\n';
  out += 'fe00::1\tip6-allnodes\n';
  out += 'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) out += domain !== '' ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + hostsEntriesFromHostAliases(aliases);
}

/**
 * The managed hosts file of a hostNetwork pod: the host-network header, the node's own hosts file
 * as it is, then the host aliases.
 *
 * Models kubelet.nodeHostsFileContent.
 */
export function nodeHostsFileContent(nodeHosts: Uint8Array, aliases: readonly HostAlias[]): Buffer {
  return Buffer.concat([Buffer.from(MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK), nodeHosts, Buffer.from(hostsEntriesFromHostAliases(aliases))]);
}

/**
 * Whether the container gets the managed /etc/hosts: the pod has IPs (a sandbox that has none yet
 * gets none) and the container does not mount anything at /etc/hosts itself.
 *
 * Models kubelet.shouldMountHostsFile and the mount-path check of makeMounts.
 */
export function shouldMountHostsFile(container: Container, podIPs: readonly string[]): boolean {
  return podIPs.length > 0 && !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH);
}

/** `<podDir>/etc-hosts`. Models kubelet.getEtcHostsPath. */
export function etcHostsPath(podDir: string): string {
  return join(podDir, 'etc-hosts');
}

/** What {@link makeHostsMount} needs. */
export interface HostsMountInput {
  readonly pod: BoundPod;
  readonly podDir: string;
  readonly podIPs: readonly string[];
  /** The pod's short hostname and its domain ('' without a subdomain). */
  readonly hostname: string;
  readonly domain: string;
}

/**
 * (Re)writes `<podDir>/etc-hosts` (mode 0644 whatever the umask) with the managed content — for a
 * hostNetwork pod, the node's hosts file under the host-network header — and returns the read-write
 * mount of it at /etc/hosts. Rejects when the file cannot be written or the node's hosts file read
 * (the container then fails with CreateContainerConfigError).
 *
 * Models kubelet.makeHostsMount and ensureHostsFile.
 */
export async function makeHostsMount(files: Pick<NodeFiles, 'writeFile' | 'readNodeHostsFile'>, input: HostsMountInput): Promise<CriInput<Mount>> {
  const { pod } = input;
  const path = etcHostsPath(input.podDir);
  const aliases = pod.spec.hostAliases ?? [];
  const content =
    pod.spec.hostNetwork === true ? nodeHostsFileContent(await files.readNodeHostsFile(), aliases) : managedHostsFileContent(input.podIPs, input.hostname, input.domain, aliases);
  await files.writeFile(path, content, 0o644);
  // The kubelet's mount is named "k8s-managed-etc-hosts" (a CRI mount has no name) and asks for
  // SELinux relabelling, which is passed on only where SELinux is enabled.
  return { containerPath: ETC_HOSTS_PATH, hostPath: path, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' };
}
