/**
 * NATS identities and least privilege, against real nats-servers:
 * - the permission matrix (test/reliability/suites/permissions.ts): every identity refused on what
 *   it must not use and allowed on what it needs; unauthenticated connections refused; a request
 *   outside the permissions fails fast with PermissionDenied and is logged;
 * - `splitlet up` end to end with authentication on: config and credentials 0600, each process its
 *   own user, an unauthenticated client refused, a pod reaches Running and is deleted through the
 *   CLI's own identity, no permissions violation in the server's log — also after nats-server was
 *   killed and its guard restarted it with the same config.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { connect } from '@nats-io/transport-node';
import { IDENTITIES } from '@splitlet/bus';
import { liveProcesses } from '@splitlet/testkit';
import { run } from '../reliability/suites/permissions.ts';
import { startSplitlet, waitFor } from './harness.ts';
import type { Instance } from './harness.ts';

const NODE = 'auth-node';

function printTable(t: { title: string; columns: string[]; rows: string[][] }): void {
  const widths = t.columns.map((c, i) => Math.max(c.length, ...t.rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(`# ${t.title}`);
  console.log(`# ${line(t.columns)}`);
  for (const r of t.rows) console.log(`# ${line(r)}`);
}

/** Whether a connection without credentials is refused (waits while the server is not listening yet, e.g. restarting). */
async function unauthenticatedRefused(url: string): Promise<boolean> {
  const outcome = await waitFor(
    `nats-server at ${url} answering`,
    async () => {
      try {
        const nc = await connect({ servers: url, maxReconnectAttempts: 0, timeout: 5000 });
        await nc.close();
        return 'connected';
      } catch (e) {
        return /authorization/i.test(`${(e as Error).message} ${(e as Error).cause === undefined ? '' : inspect((e as Error).cause)}`) ? 'refused' : undefined;
      }
    },
    60_000,
    250,
  );
  return outcome === 'refused';
}

/** The NATS_USER in a process's environment. */
function natsUserOf(pid: number): string | undefined {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  return env.find((v) => v.startsWith('NATS_USER='))?.slice('NATS_USER='.length);
}

/** The pid of the nats-server running with `conf`. */
function natsServerPid(conf: string): number | undefined {
  return liveProcesses().find((p) => (p.argv[0] ?? '').endsWith('nats-server') && p.argv.includes(conf))?.pid;
}

describe('NATS permissions', { timeout: 300_000 }, () => {
  test('the permission matrix against a real nats-server', async () => {
    const t = await run();
    printTable(t);
    const failed = t.rows.filter((r) => r[r.length - 1] !== 'ok');
    assert.equal(t.ok, true, `rows not as expected:\n${failed.map((r) => r.join(' | ')).join('\n')}`);
    assert.ok(t.rows.length >= 100, `the matrix has ${t.rows.length} rows`);
    for (const id of IDENTITIES) assert.ok(t.rows.some((r) => r[0] === id && r[4] === 'refused') || id === 'admin', `${id} is tried against what it must not use`);
  });

  describe('splitlet up with authentication on', () => {
    let s: Instance | undefined;
    before(async () => {
      s = await startSplitlet({ nodeName: NODE });
    });
    after(async () => {
      await s?.stop();
    });

    test('config and credentials are private, every process connects as its own user, strangers are refused', async () => {
      const inst = s!;
      for (const f of ['nats.conf', 'nats-credentials.json']) {
        const mode = statSync(join(inst.stateDir, f)).mode & 0o777;
        assert.equal(mode, 0o600, `${f} has mode 0600 (got ${mode.toString(8)})`);
      }
      const conf = readFileSync(join(inst.stateDir, 'nats.conf'), 'utf8');
      for (const id of IDENTITIES) assert.match(conf, new RegExp(`user: "${id}"`), `nats.conf has a user for ${id}`);
      assert.ok(natsServerPid(join(inst.stateDir, 'nats.conf')) !== undefined, 'nats-server runs with the generated config (-c)');
      for (const p of inst.info().processes) {
        if (p.name === 'sim-runtime') continue; // no bus
        const expected = p.name.replace(/-\d+$/, '');
        assert.equal(natsUserOf(p.pid), expected, `${p.name} connects as ${expected}`);
      }
      assert.equal(await unauthenticatedRefused(inst.info().natsUrl), true, 'a connection without credentials is refused');
    });

    test('a pod reaches Running and is deleted; no permissions violation on the server; the same after nats-server is killed', async () => {
      const inst = s!;
      const manifest = (name: string): string =>
        `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: ["sh", "-c", "echo started; sleep 3600"], readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}}\n`;
      const file = join(inst.stateDir, 'web.yaml');
      writeFileSync(file, manifest('web'));
      await inst.cli(['apply', '-f', file]);
      await waitFor(
        'web Running and ready',
        async () => (await inst.pods()).find((p) => p.metadata.name === `web-${NODE}` && p.status?.containerStatuses?.[0]?.ready === true),
        90_000,
        500,
      );
      assert.match(await inst.cli(['logs', `web-${NODE}`, '-c', 'app']), /started/);
      assert.match(await inst.cli(['exec', `web-${NODE}`, '-c', 'app', '--', 'echo', 'from-exec']), /from-exec/);
      assert.match(await inst.cli(['events']), /Started/);

      // nats-server killed: its guard restarts it with the same config, so the users and their permissions hold.
      const conf = join(inst.stateDir, 'nats.conf');
      const first = await waitFor('the nats-server pid', async () => natsServerPid(conf), 10_000, 100);
      process.kill(first, 'SIGKILL');
      const second = await waitFor(
        'nats-server restarted',
        async () => {
          const pid = natsServerPid(conf);
          return pid !== undefined && pid !== first ? pid : undefined;
        },
        60_000,
        250,
      );
      assert.ok(second > 0);
      assert.equal(await unauthenticatedRefused(inst.info().natsUrl), true, 'after the restart, a connection without credentials is still refused');
      writeFileSync(file, manifest('after'));
      await inst.cli(['apply', '-f', file]);
      await waitFor('after Running', async () => (await inst.pods()).find((p) => p.metadata.name === `after-${NODE}` && p.status?.phase === 'Running'), 120_000, 500);
      for (const name of ['web', 'after']) await inst.cli(['delete', 'pod', `${name}-${NODE}`]);
      await waitFor('both pods gone', async () => (await inst.pods()).length === 0, 90_000, 500);

      const log = readFileSync(join(inst.stateDir, 'logs', 'nats-server.log'), 'utf8');
      const violations = log.split('\n').filter((l) => /Violation/i.test(l));
      assert.deepEqual(violations, [], 'no process was refused anything it tried');
    });
  });
});
