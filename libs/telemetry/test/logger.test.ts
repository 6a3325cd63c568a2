import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { KubeletError } from '@splitlet/api';
import { createLogger, isSecretKey, redact, withSpan, type LogLevel } from '../src/index.js';
import { createTestTracing } from '../src/testing/index.js';

function capture(level: LogLevel = 'debug', fields?: Record<string, unknown>) {
  const lines: string[] = [];
  const logger = createLogger({
    service: 'pod-worker',
    level,
    ...(fields === undefined ? {} : { fields }),
    stream: { write: (l: string) => lines.push(l) },
    now: () => new Date('2026-01-02T03:04:05.678Z'),
  });
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, records };
}

describe('createLogger', () => {
  const tracing = createTestTracing({ register: true });
  after(() => tracing.shutdown());

  it('writes one JSON line per record with the fixed keys first', () => {
    const { logger, lines, records } = capture('info', { node: 'n1' });
    logger.info('pod synced', { pod: 'default/web' });
    assert.equal(lines.length, 1);
    assert.ok(lines[0]?.endsWith('\n'));
    assert.equal(lines[0]?.split('\n').length, 2);
    assert.deepEqual(records()[0], {
      time: '2026-01-02T03:04:05.678Z',
      level: 'info',
      service: 'pod-worker',
      msg: 'pod synced',
      node: 'n1',
      pod: 'default/web',
    });
    assert.deepEqual(Object.keys(records()[0] ?? {}).slice(0, 4), ['time', 'level', 'service', 'msg']);
  });

  it('drops records below its level', () => {
    const { logger, records } = capture('warn');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    assert.deepEqual(
      records().map((r) => r['level']),
      ['warn', 'error'],
    );
    assert.equal(logger.isEnabled('info'), false);
    assert.equal(logger.isEnabled('error'), true);
  });

  it('child loggers add fields, the latest winning, and keep the level', () => {
    const { logger, records } = capture('info', { a: 1, b: 1 });
    const child = logger.child({ b: 2, c: 2 }).child({ c: 3 });
    child.debug('hidden');
    child.info('x', { d: 4 });
    assert.deepEqual(records(), [{ time: '2026-01-02T03:04:05.678Z', level: 'info', service: 'pod-worker', msg: 'x', a: 1, b: 2, c: 3, d: 4 }]);
  });

  it('stamps trace and span ids of the active span, and none outside it', async () => {
    const { logger, records } = capture();
    logger.info('before');
    let ids: { traceId: string; spanId: string } | undefined;
    await withSpan(tracing.tracer, 'syncPod', {}, async (span) => {
      ids = { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
      await Promise.resolve();
      logger.info('inside');
    });
    const [before, inside] = records();
    assert.equal(before?.['trace_id'], undefined);
    assert.equal(inside?.['trace_id'], ids?.traceId);
    assert.equal(inside?.['span_id'], ids?.spanId);
    assert.match(String(inside?.['trace_id']), /^[0-9a-f]{32}$/);
  });

  it('redacts secret-looking keys at any depth', () => {
    const { logger, lines, records } = capture();
    logger.info('pull', {
      image: 'busybox',
      password: 'p1',
      auth: { username: 'u', token: 't1' },
      secrets: ['s1'],
      registries: [{ name: 'regcred', data: { '.dockerconfigjson': 'eyJhdXRocyI6e319' } }],
      headers: { Authorization: 'Bearer b1', 'x-request-id': 'r' },
      nested: { deeper: { apiKey: 'k1', basicAuth: 'ba', credentials: { user: 'x' } } },
      maxTokens: 5,
      imagePullSecrets: [{ name: 'regcred' }],
    });
    const text = lines.join('');
    for (const secret of ['p1', 't1', 's1', 'eyJhdXRocyI6e319', 'Bearer b1', 'k1', '"ba"']) {
      assert.ok(!text.includes(secret), `leaked ${secret}: ${text}`);
    }
    const r = records()[0] ?? {};
    assert.equal(r['image'], 'busybox');
    assert.equal(r['password'], '[REDACTED]');
    assert.equal(r['auth'], '[REDACTED]');
    assert.equal(r['imagePullSecrets'], '[REDACTED]');
    assert.deepEqual(r['registries'], [{ name: 'regcred', data: { '.dockerconfigjson': '[REDACTED]' } }]);
    assert.deepEqual(r['headers'], { Authorization: '[REDACTED]', 'x-request-id': 'r' });
  });

  it('serializes errors with code and cause, and survives cycles and bigints', () => {
    const { logger, records } = capture();
    const cause = new Error('socket closed');
    const err = new KubeletError('Unavailable', 'runtime down', { retryable: true, cause });
    const cyclic: Record<string, unknown> = { n: 1n };
    cyclic['self'] = cyclic;
    logger.error('sync failed', { err, cyclic, msg: 'shadow', level: 'x' });
    const r = records()[0] ?? {};
    const e = r['err'] as Record<string, unknown>;
    assert.equal(e['type'], 'KubeletError');
    assert.equal(e['message'], 'runtime down');
    assert.equal(e['code'], 'Unavailable');
    assert.equal(e['retryable'], true);
    assert.equal((e['cause'] as Record<string, unknown>)['message'], 'socket closed');
    assert.match(String(e['stack']), /runtime down/);
    assert.deepEqual(r['cyclic'], { n: '1', self: '[Circular]' });
    assert.equal(r['msg'], 'sync failed');
    assert.equal(r['level'], 'error');
    assert.equal(r['field_msg'], 'shadow');
    assert.equal(r['field_level'], 'x');
  });

  it('never throws on a field whose toJSON throws', () => {
    const { logger, records } = capture();
    logger.info('odd', {
      bad: {
        toJSON: () => {
          throw new Error('boom');
        },
      },
    });
    assert.match(String(records()[0]?.['log_error']), /boom/);
    assert.equal(records()[0]?.['msg'], 'odd');
  });
});

describe('isSecretKey / redact', () => {
  const table: [string, boolean][] = [
    ['password', true],
    ['PASSWORD', true],
    ['db_password', true],
    ['dbPass', true],
    ['token', true],
    ['accessToken', true],
    ['client_secret', true],
    ['Authorization', true],
    ['auth', true],
    ['basicAuth', true],
    ['credentials', true],
    ['.dockerconfigjson', true],
    ['X-Api-Key', true],
    ['cookie', true],
    ['author', false],
    ['authority', false],
    ['key', false],
    ['podName', false],
    ['uid', false],
    ['image', false],
    ['passthrough', false],
  ];
  for (const [key, secret] of table) {
    it(`${key} → ${secret ? 'secret' : 'not secret'}`, () => assert.equal(isSecretKey(key), secret));
  }

  it('does not mutate its input', () => {
    const input = { a: { token: 't' } };
    const out = redact(input);
    assert.deepEqual(input, { a: { token: 't' } });
    assert.deepEqual(out, { a: { token: '[REDACTED]' } });
  });
});
