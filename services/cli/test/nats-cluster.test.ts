/**
 * The generated cluster: each server routes to the others (never to itself), every port distinct,
 * its own name, store and config file (0600, the same users for every server); fewer than 3 servers
 * refused (no quorum survives a loss). The cluster itself runs in
 * test/reliability/suites/nats-cluster.ts (real servers, one killed mid-churn).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { clusterServerArgs, natsClusterSpecs } from '../src/up/nats-cluster.js';

describe('natsClusterSpecs', () => {
  test('three servers, routed to each other on distinct ports, own names and stores', async () => {
    const stateRoot = mkdtempSync(join(tmpdir(), 'nats-cluster-'));
    try {
      const { specs, urls, members, credentials } = await natsClusterSpecs({ bin: 'nats-server', storeDir: '/s/nats', logsDir: '/s/logs', size: 3, stateRoot, node: 'n1' });
      assert.equal(specs.length, 3);
      assert.deepEqual(
        urls,
        members.map((m) => `nats://127.0.0.1:${m.clientPort}`),
      );
      const ports = members.flatMap((m) => [m.clientPort, m.routePort]);
      assert.equal(new Set(ports).size, 6, 'every client and route port distinct');
      for (const m of members) {
        const args = clusterServerArgs(m, members);
        const routes = args[args.indexOf('--routes') + 1]!.split(',');
        assert.deepEqual(
          routes.sort(),
          members
            .filter((o) => o !== m)
            .map((o) => `nats://127.0.0.1:${o.routePort}`)
            .sort(),
        );
        assert.equal(args[args.indexOf('-n') + 1], m.name);
        assert.equal(args[args.indexOf('-c') + 1], m.configFile);
        const conf = readFileSync(m.configFile, 'utf8');
        assert.equal(statSync(m.configFile).mode & 0o777, 0o600, 'the config holds passwords: 0600');
        assert.ok(conf.includes(`listen: "127.0.0.1:${m.clientPort}"`), conf);
        assert.ok(conf.includes(`store_dir: "/s/nats/${m.name}"`), conf);
        for (const c of credentials.values()) assert.ok(conf.includes(c.password), `every server knows ${c.user}`);
        assert.equal(args[args.indexOf('--cluster') + 1], `nats://127.0.0.1:${m.routePort}`);
      }
      const spec = specs[0]!;
      assert.deepEqual(JSON.parse(spec.env['NATS_SERVER_ARGS']!), clusterServerArgs(members[0]!, members));
    } finally {
      rmSync(stateRoot, { recursive: true, force: true });
    }
  });

  test('fewer than 3 servers is refused', async () => {
    await assert.rejects(natsClusterSpecs({ bin: 'nats-server', storeDir: '/s', logsDir: '/l', size: 2, stateRoot: '/nonexistent', node: 'n1' }), /at least 3 servers/);
  });
});
