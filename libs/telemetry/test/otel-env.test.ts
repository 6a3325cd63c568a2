import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTelemetryError, readOtelEnv } from '../src/index.js';

describe('readOtelEnv', () => {
  it('defaults: no exporter, parentbased_always_on, ratio 1', () => {
    const s = readOtelEnv({});
    assert.equal(s.disabled, false);
    assert.equal(s.otlp, undefined);
    assert.equal(s.sampler, 'parentbased_always_on');
    assert.equal(s.samplerRatio, 1);
    assert.deepEqual(s.resourceAttributes, {});
  });

  const cases: { name: string; env: Record<string, string>; url: string | undefined }[] = [
    { name: 'base endpoint gets /v1/traces', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, url: 'http://c:4318/v1/traces' },
    { name: 'base endpoint with slash', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }, url: 'http://c:4318/v1/traces' },
    {
      name: 'traces endpoint used as is and wins',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/x' },
      url: 'https://b/x',
    },
    { name: 'exporter none wins over an endpoint', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, url: undefined },
    { name: 'otlp without endpoint uses the spec default', env: { OTEL_TRACES_EXPORTER: 'otlp' }, url: 'http://localhost:4318/v1/traces' },
    { name: 'blank values count as unset', env: { OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_TRACES_EXPORTER: '' }, url: undefined },
  ];
  for (const c of cases) {
    it(`exporter: ${c.name}`, () => {
      assert.equal(readOtelEnv(c.env).otlp?.url, c.url);
    });
  }

  it('parses headers, timeout, sampler and resource attributes', () => {
    const s = readOtelEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=x%20y',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=2',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=dev,team=node',
      OTEL_SDK_DISABLED: 'FALSE',
    });
    assert.deepEqual(s.otlp, { url: 'http://c:4318/v1/traces', headers: { a: '1', b: '2' }, timeoutMillis: 2500 });
    assert.equal(s.sampler, 'parentbased_traceidratio');
    assert.equal(s.samplerRatio, 0.25);
    assert.deepEqual(s.resourceAttributes, { 'deployment.environment': 'dev', team: 'node' });
    assert.equal(readOtelEnv({ OTEL_SDK_DISABLED: 'true' }).disabled, true);
  });

  it('names every bad variable in one error, without header values', () => {
    try {
      readOtelEnv({
        OTEL_TRACES_EXPORTER: 'zipkin',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_SDK_DISABLED: 'yes',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20hunter2,broken',
      });
      assert.fail('expected an error');
    } catch (e) {
      assert.ok(isTelemetryError(e, 'InvalidConfig'), String(e));
      const msg = (e as Error).message;
      for (const v of ['OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_TRACES_SAMPLER', 'OTEL_SDK_DISABLED']) {
        assert.match(msg, new RegExp(`${v}:`));
      }
      assert.doesNotMatch(msg, /hunter2/);
    }
  });

  it('rejects grpc and a bad sampler ratio', () => {
    assert.throws(() => readOtelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported/);
    assert.throws(() => readOtelEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }), /OTEL_TRACES_SAMPLER_ARG/);
    assert.throws(() => readOtelEnv({ OTEL_TRACES_EXPORTER: 'otlp,none' }), /cannot be combined/);
  });
});
