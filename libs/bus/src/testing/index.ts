export { STREAMS, BUCKETS } from '../topology.js';
export { InMemoryBus, InMemoryNats } from './in-memory-bus.js';
export type { InMemoryBusOptions, PublishedMessage } from './in-memory-bus.js';
export { subjectMatches } from './subject-match.js';
