import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowNs, parseCriLogLine } from '../src/index.js';

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

describe('nowNs', () => {
  it('is never behind the wall clock and never goes back when the wall clock jumps', (t) => {
    const realNow = Date.now.bind(Date);
    const before = nowNs();
    // The wall clock stepped 5 s ahead of the monotonic one (as NTP does).
    t.mock.method(Date, 'now', () => realNow() + 5000);
    const jumped = nowNs();
    assert.ok(jumped >= BigInt(realNow() + 5000 - 1) * 1_000_000n, 'follows the wall clock ahead of it');
    assert.ok(jumped > before);
    // And back: the monotonic clock keeps going from where it was.
    t.mock.restoreAll();
    const after = nowNs();
    assert.ok(after >= jumped, 'never back');
    assert.ok(nowNs() >= BigInt(realNow()) * 1_000_000n);
  });
});
