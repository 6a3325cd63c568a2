export { STREAMS, BUCKETS } from '../topology.js';
