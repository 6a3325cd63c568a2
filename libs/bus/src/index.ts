export type {
  Bus,
  BusLogger,
  Delivery,
  ConsumeOptions,
  Consumption,
  PublishOptions,
  PublishAck,
  RequestOptions,
  ServeContext,
  ServeOptions,
  CoreMessageMeta,
  StoredMessageMeta,
  ReadStreamOptions,
  DeadLetterInput,
} from './bus.js';
export type { KvBucket, TypedEntry, KvWatchOptions } from './kv-bucket.js';
export { connectBus } from './connect-bus.js';
export type { BusOptions } from './connect-bus.js';
export { NatsBus } from './nats-bus.js';
export { formatIssues } from './codec.js';
export { PROGRESS_BEAT_MS } from './core-client.js';
export type { BusMetrics } from './metrics.js';
export { BusError, BusErrorCodes, isBusError } from './errors.js';
export type { BusErrorCode } from './errors.js';
export { TypedKv } from './typed-kv.js';
export { createOrderedPublisher } from './ordered-publisher.js';
export type { OrderedPublisher, OrderedPublisherOptions } from './ordered-publisher.js';
export { deleteStoredMessage } from './nats-kv.js';
export { ensureTopology, ensureStream, checkStreamMaxAges, streamSpecs, MIN_STREAM_MAX_AGE_MS, STREAM_MAX_AGE_FLOORS_MS, STREAMS, BUCKETS, CONSUMERS } from './topology.js';
export type { StreamSpec, StreamMaxAges, BucketSpec, ConsumerSpec } from './topology.js';
export { headersWithContext, contextFromHeaders, carrierFromContext, contextFromCarrier, linkFromContext, subjectTemplate, failSpan, busTracer } from './trace.js';
export { IDENTITIES, identityPermissions, renderAuthorization, writtenBuckets } from './permissions.js';
export type { Identity, NatsPermissions, NatsCredential, PermissionScope } from './permissions.js';
