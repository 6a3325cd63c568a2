/** The readable console of `splitlet up`: JSON log records → one line each; anything else as it came. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLogLine, formatValue } from '../src/up/console-format.js';
import { compressRanges, partitionsTable } from '../src/commands/partitions.js';
import { readySummary } from '../src/up/ready-summary.js';

const plain = { color: false, processWidth: 14 };
const time = '2026-01-02T03:04:05.678Z';
const local = new Date(time);
const hhmmss = `${String(local.getHours()).padStart(2, '0')}:${String(local.getMinutes()).padStart(2, '0')}:05.678`;

describe('formatLogLine', () => {
  it('shows time, process, level, message and the fields that matter (node and span ids dropped)', () => {
    const line = JSON.stringify({
      time,
      level: 'info',
      service: 'pod-worker',
      msg: 'pod synced',
      node: 'n1',
      trace_id: 'a'.repeat(32),
      span_id: 'b'.repeat(16),
      pod: 'default/web-n1',
      took: 12,
      ok: true,
      empty: '',
      none: {},
    });
    assert.equal(formatLogLine('pod-worker-1', line, plain), `${hhmmss} pod-worker-1   INFO  pod synced  pod=default/web-n1 took=12 ok=true`);
  });

  it('puts the error last and the short trace id on warnings and errors', () => {
    const line = JSON.stringify({
      time,
      level: 'error',
      service: 'cri-adapter',
      msg: 'syncPod failed',
      err: 'rpc error: code = Unavailable',
      pod: 'x',
      trace_id: '0123456789abcdef0123456789abcdef',
    });
    assert.equal(formatLogLine('cri-adapter', line, plain), `${hhmmss} cri-adapter    ERROR syncPod failed  pod=x err="rpc error: code = Unavailable" trace=01234567`);
  });

  it('colours on a TTY: the process, warnings yellow, errors bold red, debug dim', () => {
    const rec = (level: string): string => JSON.stringify({ time, level, service: 's', msg: 'm' });
    const color = { color: true, processWidth: 4, processColor: 35 };
    /* eslint-disable no-control-regex -- the ANSI escapes (ESC, \u001b) are the output under test */
    assert.match(formatLogLine('p', rec('warn'), color)!, /\u001b\[35mp {3}\u001b\[0m \u001b\[33mWARN \u001b\[0m m$/);
    assert.match(formatLogLine('p', rec('error'), color)!, /\u001b\[1;31mERROR\u001b\[0m \u001b\[1mm\u001b\[0m$/);
    assert.match(formatLogLine('p', rec('debug'), color)!, /\u001b\[2mDEBUG\u001b\[0m \u001b\[2mm\u001b\[0m$/);
    assert.doesNotMatch(formatLogLine('p', rec('info'), plain)!, /\u001b/);
    /* eslint-enable no-control-regex */
  });

  it('passes through lines that are not log records (stack traces, crashes, non-object JSON)', () => {
    for (const raw of ['    at main (file.js:1:2)', '{not json', '[1,2]', JSON.stringify({ msg: 'no level' }), JSON.stringify({ level: 'loud', msg: 'x' })]) {
      assert.equal(formatLogLine('sync-loop', raw, plain), `${' '.repeat(12)} sync-loop      ${raw}`);
    }
  });

  it('drops records below minLevel', () => {
    const line = JSON.stringify({ time, level: 'debug', service: 's', msg: 'm' });
    assert.equal(formatLogLine('p', line, { ...plain, minLevel: 'info' }), undefined);
  });

  it('quotes values with spaces, joins simple arrays, cuts long values', () => {
    assert.equal(formatValue('a b'), '"a b"');
    assert.equal(formatValue(['web', 'db']), 'web,db');
    assert.equal(formatValue({ a: 1 }), '{"a":1}');
    assert.equal(formatValue(''), '""');
    const long = formatValue('x'.repeat(500));
    assert.equal(long.length, 160);
    assert.ok(long.endsWith('…'));
  });
});

describe('partitions table', () => {
  it('compresses partition numbers into ranges', () => {
    assert.equal(compressRanges([3, 0, 1, 2, 7, 9, 10]), '0-3,7,9-10');
    assert.equal(compressRanges([]), '');
  });

  it('one row per instance, members without partitions too, gone holders marked', () => {
    const now = Date.parse('2026-01-01T00:01:00Z');
    const rows = [0, 1, 2]
      .map((p) => ({ partition: p, holder: 'pw-a', acquiredAt: '2026-01-01T00:00:00Z', revision: 10 + p }))
      .concat([{ partition: 3, holder: 'pw-gone', acquiredAt: '2026-01-01T00:00:00Z', revision: 5 }]);
    const members = [
      { instance: 'pw-a', at: '2026-01-01T00:00:58Z' },
      { instance: 'pw-b', at: '2026-01-01T00:00:59Z' },
    ];
    const table = partitionsTable(rows, members, now, false).split('\n');
    assert.match(table[0]!, /^INSTANCE\s+PARTITIONS\s+COUNT\s+HEARTBEAT/);
    assert.match(table[1]!, /^pw-a\s+0-2\s+3\s+2s ago/);
    assert.match(table[2]!, /^pw-b\s+<none>\s+0\s+1s ago/);
    assert.match(table[3]!, /^pw-gone\s+3\s+1\s+<gone>/);
    assert.match(partitionsTable(rows, members, now, true), /^3\s+pw-gone\s+5\s+60s$/m);
  });
});

describe('ready summary', () => {
  it('says where NATS, health, metrics and traces are', () => {
    const text = readySummary({
      nodeName: 'n1',
      natsUrl: 'nats://127.0.0.1:4222',
      processes: [
        { name: 'pleg', healthPort: 4001 },
        { name: 'sync-loop', healthPort: 4002 },
      ],
      startedMs: 3210,
      otlpEndpoint: 'http://127.0.0.1:4318',
    });
    assert.match(text, /^node n1 ready: 2 processes in 3\.2s · NATS nats:\/\/127\.0\.0\.1:4222 · traces: OTLP to http:\/\/127\.0\.0\.1:4318/);
    assert.match(text, /pleg:4001 sync-loop:4002/);
    assert.match(readySummary({ nodeName: 'n1', natsUrl: 'u', processes: [], startedMs: 0, otlpEndpoint: undefined }), /set OTEL_EXPORTER_OTLP_ENDPOINT/);
  });
});
