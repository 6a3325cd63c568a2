/**
 * `@splitlet/cri/testing`: test support for any workspace's tests (never for shipped code).
 * The simulated runtime itself is a product and lives in services/sim-runtime.
 */
export { readCriLog, parseCriLog } from './read-cri-log.js';
export type { CriLogRecord } from './read-cri-log.js';
