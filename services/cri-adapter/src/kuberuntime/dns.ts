/**
 * A pod's DNS configuration (resolv.conf for its sandbox).
 *
 * Models pkg/kubelet/network/dns/dns.go (Configurer.GetPodDNS, getPodDNSType, parseResolvConf,
 * generateSearchesForDNSClusterFirst, appendDNSConfig, formDNSConfigFitsLimits).
 */
import type { BoundPod } from '@splitlet/api';
import type { DNSConfig } from '@splitlet/cri';

/** The node's resolver settings as parsed from its resolv.conf. */
export interface HostDns {
  readonly servers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

/** The DNS settings of the node agent (kubelet flags `--cluster-dns`, `--cluster-domain`, `--resolv-conf`). */
export interface DnsSettings {
  /** Cluster DNS server IPs; empty when not configured. */
  readonly clusterDns: readonly string[];
  /** e.g. `cluster.local`; '' when not configured. */
  readonly clusterDomain: string;
  /** False when `--resolv-conf` is set to '' (DNS lookups effectively disabled for Default pods). */
  readonly hasResolvConf: boolean;
}

/** A pod-level warning event produced while computing DNS (the kubelet's MissingClusterDNS). */
export interface DnsWarning {
  readonly reason: string;
  readonly message: string;
}

const MAX_NAMESERVERS = 3;
const MAX_SEARCH_PATHS = 32;
const MAX_SEARCH_CHARS = 2048;
const DEFAULT_DNS_OPTIONS = ['ndots:5'];

/**
 * Parses resolv.conf text: `nameserver` lines (in order), the last `search` line (a lone `.` is
 * dropped and a trailing dot trimmed), and `options`. `#` and `;` start comment lines.
 *
 * Models dns.parseResolvConf.
 */
export function parseResolvConf(text: string): HostDns {
  const servers: string[] = [];
  let searches: string[] = [];
  const options: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const fields = line.split(/\s+/);
    const [key, ...rest] = fields;
    if (key === 'nameserver' && rest[0] !== undefined) servers.push(rest[0]);
    if (key === 'search') searches = rest.filter((s) => s !== '.').map((s) => s.replace(/\.$/, ''));
    if (key === 'options') options.push(...rest);
  }
  return { servers, searches, options };
}

type DnsType = 'none' | 'cluster' | 'host';

function podDnsType(pod: BoundPod): DnsType {
  const policy = pod.spec.dnsPolicy ?? 'ClusterFirst';
  switch (policy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      return pod.spec.hostNetwork === true ? 'host' : 'cluster';
    case 'Default':
      return 'host';
    default:
      return 'cluster';
  }
}

function omitDuplicates(xs: readonly string[]): string[] {
  return [...new Set(xs)];
}

function mergeDnsOptions(existing: readonly string[], extra: ReadonlyArray<{ name?: string; value?: string }>): string[] {
  const byName = new Map<string, string>();
  const put = (name: string, value: string | undefined): void => {
    byName.set(name, value === undefined || value === '' ? name : `${name}:${value}`);
  };
  for (const o of existing) {
    const i = o.indexOf(':');
    put(i < 0 ? o : o.slice(0, i), i < 0 ? undefined : o.slice(i + 1));
  }
  for (const o of extra) if (o.name !== undefined) put(o.name, o.value);
  return [...byName.values()];
}

/**
 * The sandbox's DNS config: `None` starts empty; `ClusterFirst` (not on hostNetwork) and
 * `ClusterFirstWithHostNet` use the cluster DNS servers, the cluster search domains before the host
 * ones and `ndots:5`, or fall back to the host's settings with a MissingClusterDNS warning when no
 * cluster DNS is configured; `Default` uses the host's resolv.conf. `spec.dnsConfig` is appended,
 * then the lists are cut to the resolver limits (3 servers, 32 search paths, 2048 characters).
 *
 * Models Configurer.GetPodDNS.
 */
export function podDnsConfig(pod: BoundPod, host: HostDns, settings: DnsSettings): { config: DNSConfig; warnings: DnsWarning[] } {
  const warnings: DnsWarning[] = [];
  let servers = [...host.servers];
  let searches = [...host.searches];
  let options = [...host.options];
  const type = podDnsType(pod);
  let useHost = type === 'host';
  if (type === 'none') {
    servers = [];
    searches = [];
    options = [];
  } else if (type === 'cluster') {
    if (settings.clusterDns.length > 0) {
      servers = [...settings.clusterDns];
      if (settings.clusterDomain !== '') {
        const d = settings.clusterDomain;
        searches = omitDuplicates([`${pod.metadata.namespace}.svc.${d}`, `svc.${d}`, d, ...host.searches]);
      }
      options = [...DEFAULT_DNS_OPTIONS];
    } else {
      const policy = pod.spec.dnsPolicy ?? 'ClusterFirst';
      const nodeMsg = `kubelet does not have ClusterDNS IP configured and cannot create Pod using ${JSON.stringify(policy)} policy. Falling back to "Default" policy.`;
      warnings.push({
        reason: 'MissingClusterDNS',
        message: `pod: ${JSON.stringify(`${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`)}. ${nodeMsg}`,
      });
      useHost = true;
    }
  }
  if (useHost && !settings.hasResolvConf) {
    servers = ['127.0.0.1'];
    searches = ['.'];
  }
  const custom = (pod.spec as { dnsConfig?: { nameservers?: string[]; searches?: string[]; options?: Array<{ name?: string; value?: string }> } }).dnsConfig;
  if (custom !== undefined) {
    servers = omitDuplicates([...servers, ...(custom.nameservers ?? [])]);
    searches = omitDuplicates([...searches, ...(custom.searches ?? [])]);
    options = mergeDnsOptions(options, custom.options ?? []);
  }
  servers = servers.slice(0, MAX_NAMESERVERS);
  searches = searches.slice(0, MAX_SEARCH_PATHS);
  while (searches.join(' ').length > MAX_SEARCH_CHARS) searches.pop();
  return { config: { servers, searches, options }, warnings };
}
