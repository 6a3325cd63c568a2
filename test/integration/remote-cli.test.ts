/**
 * The CLI against a stack it does not run: only a NATS URL (and, first, no node name: the one node
 * on that NATS is found), no state dir. A real `splitlet up --runtime sim` with its own nats-server
 * stands in for compose; every command below runs from an empty directory with --nats-url:
 * apply over the bus (config-source's api source) → Running → logs over the bus (cri-adapter reads
 * the CRI log file) with --tail, -f and --timestamps → describe, events, trace, get partitions →
 * invalid apply refused with the API server's message → delete over the bus → gone.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { Buckets, Keys } from '@splitlet/api';
import { connectCliBus } from '../../services/cli/src/target.ts';
import { repoRoot, startSplitlet, waitFor } from './harness.ts';
import type { Instance, PodJson } from './harness.ts';

const execFileP = promisify(execFile);
const cliBin = join(repoRoot, 'services', 'cli', 'bin', 'splitlet.js');

const POD = `apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: ["sh", "-c", "for i in 1 2 3 4 5; do echo line-$i; done; while true; do echo tick; sleep 1; done"]
`;

describe('splitlet with --nats-url only (remote stack)', { timeout: 240_000 }, () => {
  let s: Instance;
  let cwd: string;
  let env: NodeJS.ProcessEnv;

  /** Runs the CLI from an empty directory, with no state dir: only the NATS URL. */
  async function remote(args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
    const p = execFileP(process.execPath, [cliBin, ...args], { cwd, env, maxBuffer: 16 * 1024 * 1024 });
    if (input !== undefined) p.child.stdin?.end(input);
    return p;
  }
  async function remotePods(): Promise<PodJson[]> {
    return (JSON.parse((await remote(['get', 'pods', '-A', '-o', 'json'])).stdout) as { items: PodJson[] }).items;
  }

  before(async () => {
    s = await startSplitlet({ nodeName: 'remote-node' });
    cwd = mkdtempSync(join(tmpdir(), 'splitlet-remote-cwd-'));
    const cli = s.natsCredential('cli');
    env = { ...process.env, SPLITLET_NATS_URL: s.info().natsUrl, SPLITLET_NATS_USER: cli.user, SPLITLET_NATS_PASSWORD: cli.password };
    delete env['SPLITLET_STATE_DIR'];
    delete env['SPLITLET_NODE_NAME'];
  });
  after(async () => {
    await s?.stop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  test('apply over the bus, Running, logs over the bus, delete over the bus', async () => {
    const applied = await remote(['apply', '-f', '-'], POD);
    assert.equal(applied.stdout, 'pod/talker created\n');
    // Applying the same manifest again changes nothing.
    assert.equal((await remote(['apply', '-f', '-'], POD)).stdout, 'pod/talker unchanged\n');

    const pod = await waitFor(
      'talker Running',
      async () => {
        const p = (await remotePods()).find((x) => x.metadata.name === 'talker');
        return p?.status?.phase === 'Running' ? p : undefined;
      },
      60_000,
    );
    // An api-source pod keeps its name (no -<node> suffix) and has a random UID, as from an API server.
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.source'], 'bus');
    assert.match(pod.metadata.uid, /^[0-9a-f]{8}-[0-9a-f]{4}-/);
    const table = (await remote(['get', 'pods'])).stdout;
    assert.match(table, /^talker\s+1\/1\s+Running\s+0\s/m);

    // Logs: not on this host (no state dir) → served by the node's cri-adapter.
    const all = await waitFor(
      'five lines logged',
      async () => {
        const out = (await remote(['logs', 'talker'])).stdout;
        return out.includes('line-5') && out.includes('tick') ? out : undefined;
      },
      30_000,
    );
    assert.match(all, /^line-1\nline-2\nline-3\nline-4\nline-5\ntick\n/);
    const tail = (await remote(['logs', 'talker', '--tail', '2'])).stdout.split('\n').filter(Boolean);
    assert.equal(tail.length, 2, `--tail 2 prints two lines: ${JSON.stringify(tail)}`);
    const stamped = (await remote(['logs', 'talker', '--timestamps', '--tail', '1'])).stdout;
    assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) tick\n$/);
    await assert.rejects(remote(['logs', 'talker', '-c', 'nope']), /container nope is not valid for pod talker/);

    // -f follows: new ticks arrive over the bus while it runs.
    const follow = spawn(process.execPath, [cliBin, 'logs', 'talker', '-f', '--tail', '0'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let followed = '';
    follow.stdout.on('data', (d: Buffer) => (followed += d.toString()));
    try {
      await waitFor('two ticks followed', async () => (followed.match(/tick/g)?.length ?? 0) >= 2, 30_000);
    } finally {
      const exited = new Promise((r) => follow.once('exit', r));
      follow.kill('SIGINT');
      await exited;
    }
    assert.doesNotMatch(followed, /line-1/, '--tail 0 -f prints only new lines');

    // describe, events, trace and partitions need nothing local either.
    assert.match((await remote(['describe', 'pod', 'talker'])).stdout, /Started\s+.*Started container app/);
    assert.match((await remote(['events'])).stdout, /Started\s+pod\/talker/);
    const waterfall = (await remote(['trace', 'talker'])).stdout;
    assert.match(waterfall, /config\.add/);
    assert.match(waterfall, /cri-adapter/);
    const parts = JSON.parse((await remote(['get', 'partitions', '-o', 'json'])).stdout) as { node: string; partitions: { holder: string }[] };
    assert.equal(parts.node, 'remote-node');
    assert.ok(parts.partitions.length > 0 && parts.partitions.every((p) => p.holder === 'remote-node-pw-1'));
    assert.match((await remote(['get', 'partitions'])).stdout, /^remote-node-pw-1\s+0-31\s+32\s/m);

    // Bad input is refused by the api source with the API server's message; nothing changes.
    await assert.rejects(
      remote(['apply', '-f', '-'], POD.replace('image: busybox:1.36', 'image: busybox:1.37').replace('command:', 'args: ["x"]\n    command:')),
      /Forbidden.*pod updates may not change fields other than/,
    );
    await assert.rejects(
      remote(['apply', '-f', '-'], 'apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: a, image: busybox:1.36}]}\n'),
      /metadata\.name/,
    );

    // An image change is an allowed update: configured, same UID.
    const configured = await remote(['apply', '-f', '-'], POD.replace('image: busybox:1.36', 'image: busybox:1.37'));
    assert.equal(configured.stdout, 'pod/talker configured\n');
    const updated = await waitFor(
      'talker runs busybox:1.37',
      async () => {
        const p = (await remotePods()).find((x) => x.metadata.name === 'talker');
        return p?.status?.containerStatuses?.[0]?.image.includes('1.37') && p.status.containerStatuses[0].state?.running ? p : undefined;
      },
      60_000,
    );
    assert.equal(updated.metadata.uid, pod.metadata.uid);

    assert.equal((await remote(['delete', 'pod', 'talker'])).stdout, 'pod "talker" deleted\n');
    assert.equal(
      (await remotePods()).find((x) => x.metadata.name === 'talker'),
      undefined,
    );
    await assert.rejects(remote(['delete', 'pod', 'talker', '--wait=false']), /NotFound.*"talker" not found/);
  });

  test('the node is named or found; a wrong NATS URL or node is a clear error', async () => {
    assert.match((await remote(['get', 'pods', '--node-name', 'remote-node'])).stdout, /No resources found|NAME/);
    // A second node on the same NATS: the CLI no longer guesses.
    const bus = await connectCliBus(s.info().natsUrl, 'remote-node', undefined, s.natsCredential('admin'));
    try {
      const nodes = await bus.kv(Buckets.node, z.unknown());
      await nodes.put(Keys.node('other.node'), { type: 'test' });
      await assert.rejects(remote(['get', 'pods']), /several nodes share this NATS \(other\.node, remote-node\): pick one with --node-name/);
      await nodes.delete(Keys.node('other.node'));
      assert.match((await remote(['get', 'pods'])).stdout, /No resources found|NAME/, 'a deleted node key no longer counts');
    } finally {
      await bus.close();
    }
    await assert.rejects(remote(['get', 'pods', '--nats-url', 'nats://127.0.0.1:1', '--node-name', 'x']), /cannot reach NATS at nats:\/\/127\.0\.0\.1:1/);
    await assert.rejects(remote(['apply', '-f', '-', '--node-name', 'no-such-node'], POD), /no config-source with the api source answers/);
  });
});
