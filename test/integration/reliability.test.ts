/**
 * The reliability suites of `npm run reliability` (test/reliability/suites), each in its CI size,
 * against real processes: kill -9 of every process type during a pod churn (chaos), a paused leader
 * and partition owner resumed after their lease was taken over (sigstop), and a 3-server NATS
 * cluster losing one server mid-churn (nats-cluster). Each prints its table and must be ok. The
 * fuzz suite runs from fuzz.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatTable, type SuiteOptions, type SuiteResult } from '../reliability/suite.ts';
import { run as chaos } from '../reliability/suites/chaos.ts';
import { run as sigstop } from '../reliability/suites/sigstop.ts';
import { run as natsCluster } from '../reliability/suites/nats-cluster.ts';

const suites: [string, (o: SuiteOptions) => Promise<SuiteResult>, number][] = [
  ['chaos: kill -9 of each process type during a churn of 100 pods, 3 trials each', chaos, 1_500_000],
  ['sigstop: a paused leader and partition owner write nothing after SIGCONT', sigstop, 600_000],
  ['nats-cluster: one of three nats-servers killed mid-churn', natsCluster, 600_000],
];

describe('reliability suites (CI size)', () => {
  for (const [name, run, timeout] of suites) {
    test(name, { timeout }, async () => {
      const r = await run({ mode: 'ci', log: (l) => console.log(l) });
      console.log(formatTable(r));
      assert.ok(r.ok, formatTable(r));
    });
  }
});
