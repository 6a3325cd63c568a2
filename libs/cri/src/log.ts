/**
 * `@splitlet/cri/log`: the CRI container log file format alone — parse a line, write a file — for
 * processes that read or write container logs without talking CRI (the API server's
 * `pods/log`): the package's main entry point loads @grpc/grpc-js and protobufjs (~9 MiB of heap).
 * @packageDocumentation
 */
export { parseCriLogLine } from './cri-log.js';
export type { CriLogRecord } from './cri-log.js';
export { CriLogWriter, formatRfc3339Nano, nowNs } from './cri-log-writer.js';
export type { OutputSink } from './cri-log-writer.js';
