/**
 * `splitlet up --nats-cluster 3`: three clustered nats-servers, every stream and KV bucket with 3
 * replicas, every process given all three URLs. One server is killed with -9 at a random moment of a
 * churn of 100 pods; the stack runs with `--no-restart`, so it stays dead and the node must carry on
 * with the other two (a JetStream quorum): every pod converges, 0 duplicate sandboxes, 0 lost
 * statuses, 0 pods started twice, no process restarted.
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsCredential } from '@splitlet/bus';
import { startSplitlet, type Instance } from '../../integration/harness.ts';
import { Churn, describeProblems, driverBus } from '../lib/churn.ts';
import { alive, natsServers } from '../lib/processes.ts';
import type { SuiteOptions, SuiteResult } from '../suite.ts';

const CHURN = 100;
const SPREAD_MS = 5000;

/** How many of the JetStream streams (KV buckets included) have `replicas` replicas, of how many. */
async function replication(urls: string[], replicas: number, admin: NatsCredential): Promise<{ replicated: number; total: number; short: string[] }> {
  const nc = await connect({ servers: urls, name: 'reliability-replicas', user: admin.user, pass: admin.password });
  try {
    const jsm = await jetstreamManager(nc);
    let total = 0;
    const short: string[] = [];
    for await (const s of jsm.streams.list()) {
      total++;
      if (s.config.num_replicas !== replicas) short.push(`${s.config.name}: R${s.config.num_replicas}`);
    }
    return { replicated: total - short.length, total, short };
  } finally {
    await nc.close();
  }
}

export async function run(opts: SuiteOptions): Promise<SuiteResult> {
  const trials = opts.mode === 'long' ? 3 : 1;
  const log = opts.log ?? ((): void => undefined);
  const columns = ['trial', 'killed', 'kill at', 'R3 streams+buckets', 'converged in', 'duplicate sandboxes', 'lost statuses', 'started twice', 'processes restarted', 'outcome'];
  const rows: string[][] = [];
  let ok = true;
  for (let t = 1; t <= trials; t++) {
    let inst: Instance | undefined;
    const closers: (() => Promise<void>)[] = [];
    try {
      inst = await startSplitlet({
        nodeName: `natscluster-node`,
        podWorkers: 2,
        args: ['--runtime', 'sim', '--no-apiserver', '--nats-cluster', '3', '--no-restart'],
        env: { LOG_LEVEL: 'info' },
      });
      const stack = inst;
      const urls = stack.info().natsUrl.split(',');
      if (urls.length !== 3) throw new Error(`instance.json names ${urls.length} NATS URLs, want 3: ${stack.info().natsUrl}`);
      const servers = natsServers(stack.stateDir);
      if (servers.length !== 3) throw new Error(`${servers.length} nats-servers run, want 3`);
      const repl = await replication(urls, 3, stack.natsCredential('admin'));
      const driver = await driverBus(stack, urls);
      closers.push(() => driver.close());
      const churn = new Churn(stack, driver, 'cl');
      await churn.step(CHURN / 2, SPREAD_MS / 2);
      const base = await churn.settle(120_000);
      if (!base.converged) throw new Error(`the first churn did not settle: ${describeProblems(base.o)}`);
      const pidsBefore = stack.info().processes.map((p) => `${p.name}:${p.pid}`);
      const victim = servers[Math.floor(Math.random() * servers.length)]!;
      const port = victim.cmd[victim.cmd.indexOf('-p') + 1];
      const killAt = Math.floor(Math.random() * SPREAD_MS);
      const killer = (async () => {
        await new Promise((r) => setTimeout(r, killAt));
        process.kill(victim.pid, 'SIGKILL');
      })();
      await Promise.all([churn.step(CHURN, SPREAD_MS), killer]);
      const r = await churn.settle(180_000);
      const stillDead = !alive(victim.pid) && natsServers(stack.stateDir).length === 2;
      const pidsAfter = stack.info().processes.map((p) => `${p.name}:${p.pid}`);
      const restarted = pidsBefore.filter((p) => !pidsAfter.includes(p));
      const good = r.converged && r.o.duplicateSandboxes.length === 0 && r.o.startedTwice.length === 0 && restarted.length === 0 && stillDead && repl.short.length === 0;
      ok &&= good;
      rows.push([
        String(t),
        `nats-server :${port}${stillDead ? ' (stays dead)' : ' (RUNNING AGAIN?)'}`,
        `${(killAt / 1000).toFixed(1)} s`,
        `${repl.replicated}/${repl.total}${repl.short.length ? ` (${repl.short.join(', ')})` : ''}`,
        r.converged ? `${(r.ms / 1000).toFixed(1)} s` : 'NO',
        String(r.o.duplicateSandboxes.length),
        String(r.o.statusBehind.length),
        String(r.o.startedTwice.length),
        restarted.length === 0 ? '0' : restarted.join(' '),
        good ? 'ok' : describeProblems(r.o) || 'see columns',
      ]);
      log(`nats-cluster: ${rows.at(-1)!.join(' | ')}`);
      await churn.deleteAll();
      const end = await churn.settle(120_000);
      if (!end.converged) {
        ok = false;
        rows.push([String(t), '(delete all)', '-', '-', 'NO', '-', '-', '-', '-', describeProblems(end.o)]);
      }
    } catch (e) {
      ok = false;
      rows.push([String(t), '(error)', '-', '-', '-', '-', '-', '-', '-', (e as Error).message.split('\n').slice(0, 3).join(' ')]);
    } finally {
      for (const c of closers) await c();
      if (inst !== undefined) {
        const code = await inst.stop();
        if (code !== 0) {
          ok = false;
          rows.push([String(t), '(stop)', '-', '-', '-', '-', '-', '-', '-', `splitlet up exited ${code}`]);
        }
      }
    }
  }
  return { title: `nats-cluster: splitlet up --nats-cluster 3, one server killed -9 during a churn of ${CHURN} pods and left dead`, columns, rows, ok };
}
