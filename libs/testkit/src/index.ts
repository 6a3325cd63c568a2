/**
 * `@splitlet/testkit` (dev only): real processes for integration tests — a private `nats-server`,
 * any OS process with its output as lines — plus `eventually`, free ports and temp dirs.
 * @packageDocumentation
 */
export { startNatsServer, findNatsServer } from './nats-server.js';
export type { NatsServer, NatsServerOptions } from './nats-server.js';
export { spawnProcess } from './spawn-process.js';
export type { ExitStatus, SpawnProcessOptions, SpawnedProcess } from './spawn-process.js';
export { eventually } from './eventually.js';
export { logRecords } from './log-records.js';
export type { EventuallyOptions } from './eventually.js';
export { freePort } from './free-port.js';
export { liveProcesses, procStat } from './procfs.js';
export type { ProcessEntry } from './procfs.js';
export { makeTempDir } from './temp-dir.js';
export { selfSignedCert } from './self-signed-cert.js';
export type { SelfSignedCert } from './self-signed-cert.js';
export type { TempDir } from './temp-dir.js';
export { TestkitError, TestkitErrorCodes, isTestkitError } from './testkit-error.js';
export type { TestkitErrorCode } from './testkit-error.js';
export { DEFAULT_NATS_TEST_IMAGE, containerEngineSkipReason, startNatsContainer, startTestNats } from './nats-container.js';
