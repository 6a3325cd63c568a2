/**
 * Bad input on every subject and KV key the processes read, against a real `splitlet up --runtime
 * sim`: the reliability suite `test/reliability/suites/fuzz.ts` in its CI size (what it sends and
 * checks is described there). Prints the count tried per subject.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { run } from '../reliability/suites/fuzz.ts';
import { formatTable } from '../reliability/suite.ts';

describe('fuzz: bad input on every subject and KV key', { timeout: 600_000 }, () => {
  test('every bad message is dead-lettered or answered with an error; nothing crashes, stalls or is affected', async () => {
    const r = await run({ mode: 'ci', log: (l) => console.log(l) });
    console.log(formatTable(r));
    assert.ok(r.ok, formatTable(r));
  });
});
