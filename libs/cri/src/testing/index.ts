/**
 * `@splitlet/cri/testing`: test support for any workspace's tests (never for shipped code): a small
 * stateful fake runtime, the same behind real gRPC, and a CRI log reader. The simulated runtime
 * itself is a product and lives in services/sim-runtime.
 */
export { createFakeRuntime, runUntilStopped } from './fake-runtime-service.js';
export type { FakeRuntimeService, FakeRuntimeOptions, FakeProgram, FakeProcess, FakeFailure, FakeCall } from './fake-runtime-service.js';
export { startFakeCri } from './start-fake-cri.js';
export type { FakeCri } from './start-fake-cri.js';
export { readCriLog, parseCriLog } from './read-cri-log.js';
export type { CriLogRecord } from './read-cri-log.js';
