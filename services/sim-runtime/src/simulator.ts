/**
 * `@splitlet/sim-runtime/simulator`: the simulated CRI runtime as a library, for the sim-runtime
 * process (`main.ts`) and for tests outside the services (test/integration, test/bench) that want
 * the full simulator in-process. Services never import it (they dial the sim-runtime process over
 * CRI); a service's unit tests use the small fake in `@splitlet/cri/testing`.
 */
export { createSimRuntime, MAX_CALLS } from './runtime/sim-runtime.js';
export type { SimRuntime, SimRuntimeOptions, SimLatency, SimFailure, SimFailures, SimImageConfig, SimCall } from './runtime/sim-runtime.js';
export { startSimCri } from './runtime/start-sim-cri.js';
export type { SimCri } from './runtime/start-sim-cri.js';
export { defaultIsMissingImage, unreachableRegistryError, unauthorizedRegistryError, credentialsForHost } from './images/sim-images.js';
export type { SimRegistry, SimPrivateRegistry } from './images/sim-images.js';
export { SIMULATED_APPLETS } from './process/sim-process.js';
export { knownImageConfig } from './images/known-images.js';
