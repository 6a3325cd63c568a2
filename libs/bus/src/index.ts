export { connectBus, NatsBus, formatIssues, PROGRESS_BEAT_MS } from './nats-bus.js';
export type { BusOptions, BusLogger, Delivery, ConsumeOptions, Consumption, RequestOptions, ServeContext } from './nats-bus.js';
export type { BusMetrics } from './metrics.js';
export { BusError, BusErrorCodes, isBusError } from './errors.js';
export type { BusErrorCode } from './errors.js';
export { TypedKv } from './typed-kv.js';
export type { TypedEntry, KvOwner } from './typed-kv.js';
export { ensureTopology, ensureStream, STREAMS, BUCKETS } from './topology.js';
export type { StreamSpec, BucketSpec } from './topology.js';
export {
  headersWithContext,
  contextFromHeaders,
  carrierFromContext,
  contextFromCarrier,
  linkFromContext,
  subjectTemplate,
  failSpan,
  busTracer,
} from './trace.js';
