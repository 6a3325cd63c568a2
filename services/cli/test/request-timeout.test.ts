/** `--request-timeout` parsing (kubectl's duration syntax). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRequestTimeout } from '../src/target.js';

test('--request-timeout: 0, bare seconds and units; anything else is an error naming the flag', () => {
  assert.equal(parseRequestTimeout(undefined), 0);
  assert.equal(parseRequestTimeout('0'), 0);
  assert.equal(parseRequestTimeout('5'), 5000);
  assert.equal(parseRequestTimeout('1.5s'), 1500);
  assert.equal(parseRequestTimeout('500ms'), 500);
  assert.equal(parseRequestTimeout('2m'), 120_000);
  assert.equal(parseRequestTimeout('1h'), 3_600_000);
  for (const bad of ['soon', '-1', '5x', '', '1s2']) assert.throws(() => parseRequestTimeout(bad), /--request-timeout must be a duration/);
});
