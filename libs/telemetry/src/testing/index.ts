/**
 * Test helpers of `@splitlet/telemetry`: in-memory tracing for span assertions.
 * @packageDocumentation
 */
export { createTestTracing } from './create-test-tracing.js';
export type { TestTracing, TestTracingOptions } from './create-test-tracing.js';
