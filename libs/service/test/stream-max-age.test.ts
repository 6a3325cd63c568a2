/**
 * `STREAM_MAX_AGE`: the operator's stream max ages, parsed and checked once for every process (a
 * bad entry stops the process before it touches the bus, naming the stream and the value).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { isConfigError, loadConfig, NodeProcessEnv, parseStreamMaxAges } from '../src/index.js';

const Schema = z.object(NodeProcessEnv);
const base = { NATS_URL: 'nats://127.0.0.1:4222', NODE_NAME: 'n1' };

describe('STREAM_MAX_AGE', () => {
  it('parses STREAM=DURATION entries (Go durations, spaces and empty entries ignored)', () => {
    assert.deepEqual(parseStreamMaxAges('SL_SPANS=10m, SL_STATUS=1h30m,,SL_CONFIG=2m'), { SL_SPANS: 600_000, SL_STATUS: 5_400_000, SL_CONFIG: 120_000 });
    assert.deepEqual(parseStreamMaxAges('SL_DLQ=168h'), { SL_DLQ: 604_800_000 });
  });

  it('unset or empty keeps the declared max ages', () => {
    assert.deepEqual(parseStreamMaxAges(undefined), {});
    assert.deepEqual(parseStreamMaxAges(''), {});
    assert.deepEqual(loadConfig(Schema, base).STREAM_MAX_AGE, {});
    assert.deepEqual(loadConfig(Schema, { ...base, STREAM_MAX_AGE: '' }).STREAM_MAX_AGE, {});
  });

  it('refuses bad input with an error naming the entry', () => {
    const cases: [string, RegExp][] = [
      ['SL_NOPE=10m', /unknown stream "SL_NOPE" \(the streams: SL_CONFIG, .*SL_SPANS\)/],
      ['sl_spans=10m', /unknown stream "sl_spans"/],
      ['SL_SPANS=10x', /SL_SPANS: "10x" is not a duration/],
      ['SL_SPANS=600', /SL_SPANS: "600" is not a duration/],
      ['SL_SPANS=', /SL_SPANS: "" is not a duration/],
      ['SL_SPANS=-5m', /SL_SPANS: "-5m" is not a duration/],
      ['SL_SPANS=0', /SL_SPANS: the max age must be a positive duration/],
      ['SL_SPANS=0s', /SL_SPANS: the max age must be a positive duration/],
      ['SL_SPANS', /"SL_SPANS" is not STREAM=DURATION/],
      ['=10m', /"=10m" is not STREAM=DURATION/],
      ['SL_SPANS=10m,SL_SPANS=20m', /SL_SPANS is given twice/],
      ['SL_SPANS=30s', /SL_SPANS: a max age of 30 s is below the shortest allowed, 60 s/],
      ['SL_CONFIG=90s', /SL_CONFIG: a max age of 90 s is below the shortest allowed, 120 s/],
      ['SL_WORK=1m', /SL_WORK: a max age of 60 s is below the shortest allowed, 120 s/],
    ];
    for (const [text, re] of cases) assert.throws(() => parseStreamMaxAges(text), re, text);
  });

  it('a process with a bad STREAM_MAX_AGE fails its config with the variable named', () => {
    try {
      loadConfig(Schema, { ...base, STREAM_MAX_AGE: 'SL_SPANS=10m,SL_BOGUS=1h' });
      assert.fail('expected a ConfigError');
    } catch (e) {
      assert.ok(isConfigError(e));
      assert.match(e.message, /STREAM_MAX_AGE: unknown stream "SL_BOGUS"/);
    }
    assert.deepEqual(loadConfig(Schema, { ...base, STREAM_MAX_AGE: 'SL_PLEG=90s' }).STREAM_MAX_AGE, { SL_PLEG: 90_000 });
  });
});
