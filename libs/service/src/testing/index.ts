/**
 * Test helpers of `@splitlet/service`: a manual clock.
 * @packageDocumentation
 */
export { FakeClock } from './fake-clock.js';
