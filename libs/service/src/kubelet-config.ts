/**
 * The kubelet's configuration file (`KubeletConfiguration`, `kubelet.config.k8s.io/v1beta1`), as
 * `splitlet up --config FILE` takes it: validated once, merged under the command-line flags (a flag
 * wins over the file, as the kubelet's do), and translated into each process's environment — the
 * processes themselves only ever read their variables (see {@link loadConfig}).
 *
 * Models pkg/kubelet/apis/config/v1beta1 (the fields and their defaults) and
 * pkg/kubelet/apis/config/validation (the checks, with the field path in each message).
 */
import { z } from 'zod';
import { ConfigError, type ConfigIssue } from './service-error.js';

/** The one API version splitlet reads. */
export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';

/** A Go duration (`time.ParseDuration`): `1m0s`, `20s`, `500ms`, `1h30m`, `0`. */
const GO_DURATION = /^(?:0|(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)$/;
const UNIT_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration string in milliseconds; undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  if (!GO_DURATION.test(text)) return undefined;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? 0);
  return Math.round(ms);
}

const duration = (min: number, what: string) =>
  z.string({ message: 'must be a duration such as 20s, 1m0s or 500ms' }).transform((s, ctx) => {
    const ms = parseGoDuration(s);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `must be a duration such as 20s, 1m0s or 500ms, got "${s}"` });
      return z.NEVER;
    }
    if (ms < min) {
      ctx.addIssue({ code: 'custom', message: what });
      return z.NEVER;
    }
    return ms;
  });

const int32 = z
  .number({ message: 'must be an integer' })
  .int('must be an integer')
  .max(2 ** 31 - 1);
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const IPV6 = /^[0-9a-fA-F:]+:[0-9a-fA-F:.]*$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUANTITY = /^[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$/;

/** The eviction signals splitlet evaluates (the others are warned about and ignored). */
export const EVICTION_SIGNALS = ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'pid.available'] as const;
/** The kubelet's signals splitlet knows but does not evaluate (there is no separate image filesystem). */
const IGNORED_EVICTION_SIGNALS = ['imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree', 'allocatableMemory.available'];
/** DefaultEvictionHard (Linux), of the signals splitlet evaluates. */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%' };

const threshold = z.string({ message: 'must be a quantity (100Mi) or a percentage (10%)' }).refine((v) => {
  const pct = /^(\d+(\.\d+)?)%$/.exec(v);
  if (pct !== null) return Number(pct[1]) >= 0 && Number(pct[1]) <= 100;
  return QUANTITY.test(v);
}, 'must be a quantity (100Mi) or a percentage between 0% and 100%');

/** Validates the fields splitlet honours. Every other field is reported by {@link parseKubeletConfig} as a warning. */
const Honoured = z.object({
  maxPods: int32.min(0, 'must be >= 0'),
  staticPodPath: z.string().min(1, 'must not be empty'),
  staticPodURL: z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' }),
  staticPodURLHeader: z
    .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name'), z.array(z.string()))
    .refine((h) => Object.values(h).reduce((n, v) => n + v.length, 0) <= 1, 'splitlet sends at most one header value with the static pod URL'),
  syncFrequency: duration(1, 'must be greater than 0'),
  fileCheckFrequency: duration(100, 'must be at least 100ms'),
  httpCheckFrequency: duration(100, 'must be at least 100ms'),
  nodeStatusUpdateFrequency: duration(1, 'must be greater than 0'),
  nodeStatusReportFrequency: duration(1, 'must be greater than 0'),
  nodeLeaseDurationSeconds: int32.min(1, 'must be greater than 0'),
  kubeAPIQPS: int32.min(1, 'must be greater than 0'),
  kubeAPIBurst: int32.min(1, 'must be greater than 0'),
  eventRecordQPS: int32.min(0, 'must be >= 0 (0: no limit)'),
  eventBurst: int32.min(1, 'must be greater than 0'),
  clusterDNS: z.array(z.string().refine((ip) => IPV4.test(ip) || IPV6.test(ip), 'must be an IP address')),
  clusterDomain: z.string().refine((d) => d === '' || DNS1123_SUBDOMAIN.test(d.replace(/\.$/, '')), 'must be a DNS subdomain such as cluster.local'),
  resolvConf: z.string(),
  serializeImagePulls: z.boolean({ message: 'must be true or false' }),
  registryPullQPS: int32.min(0, 'must be >= 0'),
  registryBurst: int32.min(0, 'must be >= 0'),
  runtimeRequestTimeout: duration(1, 'must be greater than 0'),
  containerRuntimeEndpoint: z.string().regex(/^unix:\/\/\/.+/, 'must be unix:///<absolute path to the socket>'),
  podLogsDir: z.string().regex(/^\//, 'must be an absolute path'),
  evictionHard: z.record(z.string(), threshold),
  evictionPressureTransitionPeriod: duration(0, 'must not be negative'),
});

/** The honoured fields, parsed (durations in milliseconds). */
export type KubeletConfig = Partial<z.output<typeof Honoured>>;

/** What {@link parseKubeletConfig} found. */
export interface ParsedKubeletConfig {
  readonly config: KubeletConfig;
  /** One line per field that is ignored: unknown to the kubelet, or known but not supported by splitlet. */
  readonly warnings: readonly string[];
}

/**
 * The v1beta1 fields splitlet does not honour (the kubelet's own, so a real configuration file
 * works unchanged): each is named in a warning when set.
 */
const UNSUPPORTED = new Set([
  'enableServer',
  'address',
  'port',
  'readOnlyPort',
  'tlsCertFile',
  'tlsPrivateKeyFile',
  'tlsCipherSuites',
  'tlsMinVersion',
  'rotateCertificates',
  'serverTLSBootstrap',
  'authentication',
  'authorization',
  'imagePullCredentialsVerificationPolicy',
  'preloadedImagesVerificationAllowlist',
  'enableDebuggingHandlers',
  'enableContentionProfiling',
  'healthzPort',
  'healthzBindAddress',
  'oomScoreAdj',
  'streamingConnectionIdleTimeout',
  'nodeStatusMaxImages',
  'imageMinimumGCAge',
  'imageMaximumGCAge',
  'imageGCHighThresholdPercent',
  'imageGCLowThresholdPercent',
  'volumeStatsAggPeriod',
  'kubeletCgroups',
  'systemCgroups',
  'cgroupRoot',
  'cgroupsPerQOS',
  'cgroupDriver',
  'cpuManagerPolicy',
  'singleProcessOOMKill',
  'cpuManagerPolicyOptions',
  'cpuManagerReconcilePeriod',
  'memoryManagerPolicy',
  'topologyManagerPolicy',
  'topologyManagerScope',
  'topologyManagerPolicyOptions',
  'qosReserved',
  'hairpinMode',
  'podCIDR',
  'podPidsLimit',
  'cpuCFSQuota',
  'cpuCFSQuotaPeriod',
  'maxOpenFiles',
  'contentType',
  'maxParallelImagePulls',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionMaxPodGracePeriod',
  'evictionMinimumReclaim',
  'mergeDefaultEvictionSettings',
  'podsPerCore',
  'enableControllerAttachDetach',
  'protectKernelDefaults',
  'makeIPTablesUtilChains',
  'iptablesMasqueradeBit',
  'iptablesDropBit',
  'featureGates',
  'failSwapOn',
  'memorySwap',
  'containerLogMaxSize',
  'containerLogMaxFiles',
  'containerLogMaxWorkers',
  'containerLogMonitorInterval',
  'configMapAndSecretChangeDetectionStrategy',
  'systemReserved',
  'kubeReserved',
  'reservedSystemCPUs',
  'showHiddenMetricsForVersion',
  'systemReservedCgroup',
  'kubeReservedCgroup',
  'enforceNodeAllocatable',
  'allowedUnsafeSysctls',
  'volumePluginDir',
  'providerID',
  'kernelMemcgNotification',
  'logging',
  'enableSystemLogHandler',
  'enableSystemLogQuery',
  'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods',
  'shutdownGracePeriodByPodPriority',
  'crashLoopBackOff',
  'reservedMemory',
  'enableProfilingHandler',
  'enableDebugFlagsHandler',
  'seccompDefault',
  'memoryThrottlingFactor',
  'registerWithTaints',
  'registerNode',
  'tracing',
  'localStorageCapacityIsolation',
  'imageServiceEndpoint',
  'failCgroupV1',
  'userNamespaces',
]);

/**
 * Validates a decoded `KubeletConfiguration` document (the file's YAML or JSON, with the flags'
 * values already laid over it). Fields splitlet does not honour are named in `warnings`; a
 * missing or wrong `kind`/`apiVersion` or an invalid honoured value throws a {@link ConfigError}
 * naming the field path, e.g. `invalid configuration: maxPods: must be >= 0`.
 */
export function parseKubeletConfig(doc: unknown): ParsedKubeletConfig {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError([{ variable: '(config)', message: 'must be a KubeletConfiguration object' }]);
  const fields = doc as Record<string, unknown>;
  const issues: ConfigIssue[] = [];
  if (fields['kind'] !== 'KubeletConfiguration') issues.push({ variable: 'kind', message: `must be KubeletConfiguration, got ${JSON.stringify(fields['kind'] ?? null)}` });
  if (fields['apiVersion'] !== KUBELET_CONFIG_API_VERSION) {
    issues.push({ variable: 'apiVersion', message: `must be ${KUBELET_CONFIG_API_VERSION}, got ${JSON.stringify(fields['apiVersion'] ?? null)}` });
  }
  const warnings: string[] = [];
  const honoured: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'kind' || key === 'apiVersion') continue;
    if (key in Honoured.shape) {
      if (value !== null) honoured[key] = value;
    } else if (UNSUPPORTED.has(key)) warnings.push(`${key}: not supported by splitlet, ignored`);
    else warnings.push(`${key}: unknown field, ignored`);
  }
  const result = Honoured.partial().safeParse(honoured);
  if (!result.success) for (const i of result.error.issues) issues.push({ variable: i.path.map(String).join('.'), message: i.message });
  if (issues.length > 0) throw new ConfigError(issues);
  const config = result.data as KubeletConfig;
  for (const signal of Object.keys(config.evictionHard ?? {})) {
    if ((EVICTION_SIGNALS as readonly string[]).includes(signal)) continue;
    warnings.push(
      IGNORED_EVICTION_SIGNALS.includes(signal)
        ? `evictionHard.${signal}: not evaluated by splitlet (no separate image filesystem), ignored`
        : `evictionHard.${signal}: unknown eviction signal, ignored`,
    );
  }
  const status = config.nodeStatusUpdateFrequency ?? 10_000;
  if (config.nodeStatusReportFrequency !== undefined && config.nodeStatusReportFrequency < status) {
    throw new ConfigError([{ variable: 'nodeStatusReportFrequency', message: 'must not be less than nodeStatusUpdateFrequency' }]);
  }
  return { config, warnings };
}

/** How a command-line flag sets a configuration field. */
interface FlagSpec {
  readonly field: keyof z.output<typeof Honoured>;
  readonly kind: 'int' | 'string' | 'duration' | 'list' | 'bool' | 'thresholds';
}

/**
 * The kubelet's flags for the honoured fields (`--max-pods` → maxPods, …). A flag given on the
 * command line overrides the file's field.
 */
export const KUBELET_CONFIG_FLAGS: Readonly<Record<string, FlagSpec>> = {
  'max-pods': { field: 'maxPods', kind: 'int' },
  'pod-manifest-path': { field: 'staticPodPath', kind: 'string' },
  'manifest-url': { field: 'staticPodURL', kind: 'string' },
  'sync-frequency': { field: 'syncFrequency', kind: 'duration' },
  'file-check-frequency': { field: 'fileCheckFrequency', kind: 'duration' },
  'http-check-frequency': { field: 'httpCheckFrequency', kind: 'duration' },
  'node-status-update-frequency': { field: 'nodeStatusUpdateFrequency', kind: 'duration' },
  'cluster-dns': { field: 'clusterDNS', kind: 'list' },
  'cluster-domain': { field: 'clusterDomain', kind: 'string' },
  'resolv-conf': { field: 'resolvConf', kind: 'string' },
  'serialize-image-pulls': { field: 'serializeImagePulls', kind: 'bool' },
  'registry-qps': { field: 'registryPullQPS', kind: 'int' },
  'registry-burst': { field: 'registryBurst', kind: 'int' },
  'kube-api-qps': { field: 'kubeAPIQPS', kind: 'int' },
  'kube-api-burst': { field: 'kubeAPIBurst', kind: 'int' },
  'event-qps': { field: 'eventRecordQPS', kind: 'int' },
  'event-burst': { field: 'eventBurst', kind: 'int' },
  'runtime-request-timeout': { field: 'runtimeRequestTimeout', kind: 'duration' },
  'container-runtime-endpoint': { field: 'containerRuntimeEndpoint', kind: 'string' },
  'eviction-hard': { field: 'evictionHard', kind: 'thresholds' },
  'eviction-pressure-transition-period': { field: 'evictionPressureTransitionPeriod', kind: 'duration' },
};

/**
 * Lays command-line flag values (by flag name, as given) over a decoded configuration document,
 * converting each to the field's type; a value that does not convert is kept as given so that
 * validation names the field.
 */
export function applyKubeletFlags(doc: Record<string, unknown>, flags: Readonly<Record<string, string | undefined>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...doc };
  for (const [flag, raw] of Object.entries(flags)) {
    const spec = KUBELET_CONFIG_FLAGS[flag];
    if (spec === undefined || raw === undefined) continue;
    out[spec.field] = flagValue(spec.kind, raw);
  }
  return out;
}

function flagValue(kind: FlagSpec['kind'], raw: string): unknown {
  switch (kind) {
    case 'int':
      return /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw;
    case 'bool':
      return raw === 'true' ? true : raw === 'false' ? false : raw;
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    case 'thresholds':
      return parseEvictionThresholds(raw) ?? raw;
    default:
      return raw;
  }
}

/**
 * `memory.available<100Mi,nodefs.available<10%` (the `--eviction-hard` form, also the processes'
 * `EVICTION_HARD` variable) as a map; undefined when malformed.
 */
export function parseEvictionThresholds(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((s) => s.trim())) {
    if (part === '') continue;
    const m = /^([A-Za-z.]+)<(.+)$/.exec(part);
    if (m === null) return undefined;
    out[m[1] as string] = (m[2] as string).trim();
  }
  return out;
}

/** The inverse of {@link parseEvictionThresholds}. */
export function formatEvictionThresholds(t: Readonly<Record<string, string>>): string {
  return Object.entries(t)
    .map(([k, v]) => `${k}<${v}`)
    .join(',');
}

/** The node processes a configuration field can reach, by service name. */
export type KubeletConfigProcess = 'config-source' | 'cri-adapter' | 'prober' | 'volume-manager' | 'status-manager' | 'pod-worker';

/**
 * The environment each process gets from the configuration: only the variables of fields that were
 * set (every process keeps its own defaults, which are the kubelet's). The single translation from
 * KubeletConfiguration to the process contract.
 */
export function kubeletConfigEnv(c: KubeletConfig): Record<KubeletConfigProcess, Record<string, string>> {
  const env: Record<KubeletConfigProcess, Record<string, string>> = {
    'config-source': {},
    'cri-adapter': {},
    prober: {},
    'volume-manager': {},
    'status-manager': {},
    'pod-worker': {},
  };
  const set = (p: KubeletConfigProcess, name: string, v: string | number | boolean | undefined): void => {
    if (v !== undefined) env[p][name] = String(v);
  };
  set('volume-manager', 'NODE_MAX_PODS', c.maxPods);
  set('config-source', 'MANIFEST_DIR', c.staticPodPath);
  set('config-source', 'MANIFEST_URL', c.staticPodURL);
  const header = Object.entries(c.staticPodURLHeader ?? {}).find(([, v]) => v.length > 0);
  if (header !== undefined) set('config-source', 'MANIFEST_URL_HEADER', `${header[0]}: ${header[1][0]}`);
  set('config-source', 'FILE_CHECK_FREQUENCY_MS', c.fileCheckFrequency);
  set('config-source', 'HTTP_CHECK_FREQUENCY_MS', c.httpCheckFrequency);
  set('pod-worker', 'SYNC_FREQUENCY_MS', c.syncFrequency);
  set('status-manager', 'NODE_STATUS_UPDATE_FREQUENCY_MS', c.nodeStatusUpdateFrequency);
  set('status-manager', 'NODE_STATUS_REPORT_FREQUENCY_MS', c.nodeStatusReportFrequency);
  set('status-manager', 'NODE_LEASE_DURATION_SECONDS', c.nodeLeaseDurationSeconds);
  set('status-manager', 'KUBE_API_QPS', c.kubeAPIQPS);
  set('status-manager', 'KUBE_API_BURST', c.kubeAPIBurst);
  set('status-manager', 'EVENT_RECORD_QPS', c.eventRecordQPS);
  set('status-manager', 'EVENT_BURST', c.eventBurst);
  set('cri-adapter', 'CLUSTER_DNS', c.clusterDNS?.join(','));
  set('cri-adapter', 'CLUSTER_DOMAIN', c.clusterDomain);
  set('cri-adapter', 'RESOLV_CONF', c.resolvConf);
  set('cri-adapter', 'SERIALIZE_IMAGE_PULLS', c.serializeImagePulls);
  set('cri-adapter', 'REGISTRY_PULL_QPS', c.registryPullQPS);
  set('cri-adapter', 'REGISTRY_BURST', c.registryBurst);
  set('cri-adapter', 'RUNTIME_REQUEST_TIMEOUT_MS', c.runtimeRequestTimeout);
  set('prober', 'RUNTIME_REQUEST_TIMEOUT_MS', c.runtimeRequestTimeout);
  set('cri-adapter', 'CRI_ENDPOINT', c.containerRuntimeEndpoint);
  set('prober', 'CRI_ENDPOINT', c.containerRuntimeEndpoint);
  set('cri-adapter', 'POD_LOG_DIR', c.podLogsDir);
  if (c.evictionHard !== undefined) {
    const evaluated = Object.fromEntries(Object.entries(c.evictionHard).filter(([k]) => (EVICTION_SIGNALS as readonly string[]).includes(k)));
    set('volume-manager', 'EVICTION_HARD', formatEvictionThresholds(evaluated));
  }
  set('volume-manager', 'EVICTION_PRESSURE_TRANSITION_PERIOD_MS', c.evictionPressureTransitionPeriod);
  return env;
}
