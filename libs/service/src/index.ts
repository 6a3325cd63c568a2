/**
 * `@splitlet/service`: the process lifecycle every splitlet service shares — config from the
 * environment, health by progress, `/healthz` `/readyz` `/metrics`, SIGTERM drain with closers in
 * reverse order — and the `Clock` seam.
 * @packageDocumentation
 */
export { loadConfig } from './load-config.js';
export type { Env } from './load-config.js';
export { ConfigError, ServiceError, ServiceErrorCodes, isConfigError, isServiceError } from './service-error.js';
export type { ConfigIssue, ServiceErrorCode } from './service-error.js';
export { runService, SUPERVISOR_CHECK_MS } from './run-service.js';
export type { Closer, RunServiceOptions, RunningService, ServiceContext } from './run-service.js';
export { HealthRegistry } from './health-registry.js';
export type { HealthCheck, HealthCheckOptions, HealthFailure, HealthReport, HealthStatus } from './health-registry.js';
export { ProgressMonitor } from './progress-monitor.js';
export type { ProgressMonitorOptions } from './progress-monitor.js';
export { KeyedMutex } from './keyed-mutex.js';
export { ephemeralPortRange, freePort, portsOutside } from './free-port.js';
export { exposedGc, startHeapTrimmer } from './heap-trimmer.js';
export type { ExposedGc, HeapTrim, HeapTrimmerOptions } from './heap-trimmer.js';
export { realClock, sleep } from './clock.js';
export { TokenBucket } from './token-bucket.js';
export type { Clock, TimerHandle } from './clock.js';
export { LOG_LEVELS, NodeNameSchema, NodeProcessEnv, ProcessEnv, natsServers, otelEnv, parseStreamMaxAges } from './node-process-env.js';
export type { NodeProcessSettings, ProcessSettings } from './node-process-env.js';
export { CONFIG_ERROR_EXIT_CODE, runNodeProcess, runProcess, supervisorPidFromEnv } from './run-node-process.js';
export type { NodeProcessContext, ProcessContext, ProcessOptions } from './run-node-process.js';
export { connectNodeBus } from './connect-node-bus.js';
export type { ConnectNodeBusOptions } from './connect-node-bus.js';
export {
  DEFAULT_EVICTION_HARD,
  EVICTION_SIGNALS,
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_FLAGS,
  applyKubeletFlags,
  formatEvictionThresholds,
  kubeletConfigEnv,
  parseEvictionThresholds,
  parseGoDuration,
  parseKubeletConfig,
} from './kubelet-config.js';
export type { KubeletConfig, KubeletConfigProcess, ParsedKubeletConfig } from './kubelet-config.js';
