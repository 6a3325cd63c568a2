import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { injectContext, isTelemetryError, startTelemetry, withSpan, type Telemetry } from '../src/index.js';

describe('startTelemetry', () => {
  let telemetry: Telemetry | undefined;
  afterEach(async () => {
    await telemetry?.shutdown();
    telemetry = undefined;
  });

  it('installs a global provider with the resource attributes, context manager and W3C propagator', async () => {
    const exporter = new InMemorySpanExporter();
    telemetry = startTelemetry({
      serviceName: 'pod-worker',
      nodeName: 'node-a.example',
      instanceId: 'pw-1',
      hostName: 'host-1',
      env: { OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test,service.name=ignored' },
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    assert.equal(telemetry.settings.otlp, undefined);
    let carrier: Record<string, string> = {};
    await withSpan(telemetry.tracer, 'syncPod', {}, async () => {
      // Through the *global* API, as libraries see it.
      await withSpan(trace.getTracer('lib'), 'child', {}, async () => {
        carrier = injectContext();
        assert.ok(carrier['traceparent']);
        const globalCarrier: Record<string, string> = {};
        propagation.inject(context.active(), globalCarrier);
        assert.equal(globalCarrier['traceparent'], carrier['traceparent']);
      });
    });
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'syncPod');
    const child = spans.find((s) => s.name === 'child');
    assert.equal(child?.parentSpanContext?.spanId, root?.spanContext().spanId);
    const attrs = root?.resource.attributes ?? {};
    assert.equal(attrs['service.name'], 'pod-worker');
    assert.equal(attrs['service.instance.id'], 'pw-1');
    assert.equal(attrs['host.name'], 'host-1');
    assert.equal(attrs['k8s.node.name'], 'node-a.example');
    assert.equal(attrs['deployment.environment'], 'test');
    assert.equal(attrs['telemetry.sdk.language'], 'nodejs');
  });

  it('refuses a second start, and starts again after shutdown', async () => {
    telemetry = startTelemetry({ serviceName: 'a', env: {} });
    assert.throws(
      () => startTelemetry({ serviceName: 'b', env: {} }),
      (e) => isTelemetryError(e, 'AlreadyStarted'),
    );
    await telemetry.shutdown();
    await telemetry.shutdown(); // idempotent
    telemetry = startTelemetry({ serviceName: 'c', env: {} });
    assert.equal(trace.getActiveSpan(), undefined);
  });

  it('honours OTEL_TRACES_SAMPLER=always_off and OTEL_SDK_DISABLED', async () => {
    const exporter = new InMemorySpanExporter();
    telemetry = startTelemetry({ serviceName: 'a', env: { OTEL_TRACES_SAMPLER: 'always_off' }, spanProcessors: [new SimpleSpanProcessor(exporter)] });
    await withSpan(telemetry.tracer, 'dropped', {}, async (span) => assert.equal(span.isRecording(), false));
    assert.equal(exporter.getFinishedSpans().length, 0);
    await telemetry.shutdown();

    telemetry = startTelemetry({ serviceName: 'a', env: { OTEL_SDK_DISABLED: 'true' } });
    await withSpan(telemetry.tracer, 'noop', {}, async (span) => assert.equal(span.isRecording(), false));
    // Nothing was registered: a real start is still possible.
    const again = startTelemetry({ serviceName: 'b', env: {} });
    await again.shutdown();
  });

  it('addSpanProcessor attaches a processor after start', async () => {
    telemetry = startTelemetry({ serviceName: 'a', env: {} });
    telemetry.tracer.startSpan('before').end();
    const exporter = new InMemorySpanExporter();
    telemetry.addSpanProcessor(new SimpleSpanProcessor(exporter));
    telemetry.tracer.startSpan('after').end();
    assert.deepEqual(
      exporter.getFinishedSpans().map((s) => s.name),
      ['after'],
    );
  });

  it('exports over OTLP http/protobuf and flushes on shutdown', async () => {
    const requests: { url: string | undefined; contentType: string | undefined; body: Buffer }[] = [];
    const server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        requests.push({ url: req.url, contentType: req.headers['content-type'], body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      telemetry = startTelemetry({
        serviceName: 'config-source',
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=t1' },
      });
      telemetry.tracer.startSpan('podUpdate').end();
      assert.equal(requests.length, 0, 'batched, not sent yet');
      await telemetry.shutdown();
      assert.equal(requests.length, 1);
      assert.equal(requests[0]?.url, '/v1/traces');
      assert.equal(requests[0]?.contentType, 'application/x-protobuf');
      assert.ok(requests[0]?.body.includes('podUpdate'));
      assert.ok(requests[0]?.body.includes('config-source'));
    } finally {
      server.close();
    }
  });

  it('shutdown gives up after shutdownTimeoutMs and reports it to onError', async () => {
    const errors: unknown[] = [];
    telemetry = startTelemetry({
      serviceName: 'a',
      env: {},
      shutdownTimeoutMs: 50,
      onError: (e) => errors.push(e),
      spanProcessors: [{ onStart() {}, onEnd() {}, forceFlush: () => Promise.resolve(), shutdown: () => new Promise<void>(() => {}) }],
    });
    await telemetry.shutdown();
    assert.equal(errors.length, 1);
    assert.ok(isTelemetryError(errors[0], 'ShutdownTimeout'));
  });
});
