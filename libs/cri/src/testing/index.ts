/**
 * `@splitlet/cri/testing`: the CRI simulator (used by services/sim-runtime and by tests anywhere).
 */
export { createSimRuntime } from './sim-runtime.js';
export type { SimRuntime, SimRuntimeOptions, SimLatency, SimFailure, SimFailures, SimImageConfig, SimCall } from './sim-runtime.js';
export { startSimCri } from './start-sim-cri.js';
export type { SimCri } from './start-sim-cri.js';
export { normalizeImageRef, defaultIsMissingImage, unreachableRegistryError, unauthorizedRegistryError, credentialsForHost } from './sim-images.js';
export type { ImageReference, SimRegistry, SimPrivateRegistry } from './sim-images.js';
export { readCriLog, parseCriLog } from './read-cri-log.js';
export type { CriLogRecord } from './read-cri-log.js';
export { formatRfc3339Nano } from './cri-log.js';
