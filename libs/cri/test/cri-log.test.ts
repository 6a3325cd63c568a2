import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCriLogLine } from '../src/index.js';

const text = (line: string) => {
  const r = parseCriLogLine(line);
  return r === undefined ? undefined : { time: r.time, stream: r.stream, partial: r.partial, content: r.content.toString('utf8') };
};

describe('parseCriLogLine (logs.parseCRILog)', () => {
  it('parses full and partial records', () => {
    assert.deepEqual(text('2024-05-01T10:00:00.123456789Z stdout F hello world\n'), {
      time: '2024-05-01T10:00:00.123456789Z',
      stream: 'stdout',
      partial: false,
      content: 'hello world\n',
    });
    assert.deepEqual(text('2024-05-01T10:00:00Z stderr P part\n'), { time: '2024-05-01T10:00:00Z', stream: 'stderr', partial: true, content: 'part' });
    assert.deepEqual(text('2024-05-01T10:00:00+02:00 stdout F '), { time: '2024-05-01T10:00:00+02:00', stream: 'stdout', partial: false, content: '' });
  });

  it('reads the first of several colon-separated tags', () => {
    assert.equal(parseCriLogLine('2024-05-01T10:00:00Z stdout P:x y')?.partial, true);
    assert.equal(parseCriLogLine('2024-05-01T10:00:00Z stdout F:x y')?.partial, false);
  });

  it('keeps the content bytes as written', () => {
    const r = parseCriLogLine(Buffer.from('2024-05-01T10:00:00Z stdout F caf\u00e9 \u00fc\n', 'utf8'));
    assert.equal(r?.content.toString('utf8'), 'caf\u00e9 \u00fc\n');
  });

  it('refuses lines not in the CRI format', () => {
    for (const bad of ['', 'hello', 'yesterday stdout F x', '2024-05-01T10:00:00Z stdin F x', '2024-05-01T10:00:00Z stdout', '2024-05-01T10:00:00Z stdout F']) {
      assert.equal(parseCriLogLine(bad), undefined, JSON.stringify(bad));
    }
  });
});
