/**
 * Chaos: kill -9 of each process type at a random moment during a churn of 100 pods (creates, image
 * updates, deletes through the bus) on one real `splitlet up --runtime sim`; the supervisor restarts
 * what died. After each kill: every pod converges to its desired state, 0 duplicate sandboxes, 0
 * lost statuses, 0 pods started twice (lib/churn.ts defines each).
 *
 * One stack serves every trial: each trial's churn works on the pods the earlier ones left (about 60
 * alive), and its invariants are checked over all of them, so a trial also catches damage an
 * earlier kill left behind. Trials go round-robin over the process types, so a type is killed again
 * only after the others (its restart backoff has reset by then). The simulated runtime keeps its
 * state in memory: killing it loses every sandbox, as a runtime whose state dir was wiped, and the
 * node must start every pod again (one sandbox each, attempt 0: that is the recovery, not a second start).
 */
import { startSplitlet, type Instance } from '../../integration/harness.ts';
import { Churn, describeProblems, driverBus, logTrail } from '../lib/churn.ts';
import { pidOf } from '../lib/processes.ts';
import type { SuiteOptions, SuiteResult } from '../suite.ts';

export const PROCESS_TYPES = [
  'config-source',
  'sync-loop',
  'pod-worker',
  'pleg',
  'volume-manager',
  'status-manager',
  'cri-adapter',
  'prober',
  'sim-runtime',
  'nats-server',
] as const;

const CHURN = 100;
const SPREAD_MS = 3000;

/** `types`: only these process types (for a quick look at one); default all. */
export async function run(opts: SuiteOptions & { types?: readonly string[]; trials?: number }): Promise<SuiteResult> {
  const trials = opts.trials ?? (opts.mode === 'long' ? 10 : 3);
  const log = opts.log ?? ((): void => undefined);
  const columns = ['process', 'trial', 'killed', 'kill at', 'converged in', 'duplicate sandboxes', 'lost statuses', 'started twice', 'outcome'];
  const rows: string[][] = [];
  let ok = true;
  let inst: Instance | undefined;
  const bus = { close: async (): Promise<void> => undefined };
  try {
    inst = await startSplitlet({ nodeName: 'chaos-node', podWorkers: 2, args: ['--runtime', 'sim', '--no-apiserver'], env: { NODE_MAX_PODS: '500', LOG_LEVEL: 'info' } });
    const stack = inst;
    const driver = await driverBus(stack);
    bus.close = () => driver.close();
    const churn = new Churn(stack, driver, 'chaos');
    // A first churn without a kill: the population the trials work on, and a baseline.
    const t0 = Date.now();
    await churn.step(CHURN, SPREAD_MS);
    const base = await churn.settle(180_000);
    rows.push([
      '(none)',
      '0',
      '-',
      '-',
      `${(base.ms / 1000).toFixed(1)} s`,
      String(base.o.duplicateSandboxes.length),
      String(base.o.statusBehind.length),
      String(base.o.startedTwice.length),
      base.converged ? 'ok' : describeProblems(base.o),
    ]);
    ok &&= base.converged && base.o.duplicateSandboxes.length === 0 && base.o.startedTwice.length === 0;
    log(`chaos: baseline churn ${base.converged ? 'settled' : 'did NOT settle'} in ${Date.now() - t0} ms ${describeProblems(base.o)}`);
    // A failed trial leaves what it left (a pod not converged) to every later one: stop there,
    // rather than have each later trial wait out its deadline on the same leftover.
    let failed = false;
    for (let t = 1; t <= trials && !failed; t++) {
      for (const type of opts.types ?? PROCESS_TYPES) {
        if (failed) {
          rows.push([type, String(t), '-', '-', '-', '-', '-', '-', 'not run (an earlier trial failed)']);
          continue;
        }
        const killAt = Math.floor(Math.random() * SPREAD_MS);
        let killed = '';
        const killer = (async () => {
          await new Promise((r) => setTimeout(r, killAt));
          const victim = pidOf(stack, type);
          // The simulated runtime loses every sandbox and container with it: each pod alive then
          // must start once more (the kubelet counts that restart from the pod's log directory).
          if (type === 'sim-runtime') churn.runtimeLost();
          process.kill(victim.pid, 'SIGKILL');
          killed = `${victim.name} ${victim.pid}`;
        })();
        await Promise.all([churn.step(CHURN, SPREAD_MS), killer]);
        const r = await churn.settle(opts.mode === 'long' ? 300_000 : 180_000);
        const good = r.converged && r.o.duplicateSandboxes.length === 0 && r.o.startedTwice.length === 0;
        ok &&= good;
        failed ||= !good;
        rows.push([
          type,
          String(t),
          killed,
          `${(killAt / 1000).toFixed(1)} s`,
          r.converged ? `${(r.ms / 1000).toFixed(1)} s` : 'NO',
          String(r.o.duplicateSandboxes.length),
          String(r.o.statusBehind.length),
          String(r.o.startedTwice.length),
          good ? 'ok' : describeProblems(r.o),
        ]);
        log(`chaos: ${rows[rows.length - 1]!.join(' | ')}`);
        // The first pod in trouble, a pod started too often included (once seen after a nats-server kill, unexplained).
        const stuck = [...r.o.notConverged, ...r.o.leftovers, ...r.o.statusBehind, ...r.o.startedTwice][0]?.split(':')[0];
        if (!good && stuck !== undefined) log(await logTrail(stack, stuck));
      }
    }
    await churn.deleteAll();
    const end = await churn.settle(180_000);
    rows.push([
      '(delete all)',
      '-',
      '-',
      '-',
      end.converged ? `${(end.ms / 1000).toFixed(1)} s` : 'NO',
      String(end.o.duplicateSandboxes.length),
      String(end.o.statusBehind.length),
      String(end.o.startedTwice.length),
      end.converged ? 'ok' : describeProblems(end.o),
    ]);
    ok &&= end.converged;
    const left = end.o.leftovers[0]?.split(':')[0];
    if (!end.converged && left !== undefined) log(await logTrail(stack, left));
    log(`chaos: ${churn.retries} requests retried`);
  } catch (e) {
    ok = false;
    rows.push(['(error)', '-', '-', '-', '-', '-', '-', '-', (e as Error).message.split('\n').slice(0, 3).join(' ')]);
  } finally {
    await bus.close();
    if (inst !== undefined) {
      const code = await inst.stop();
      if (code !== 0) {
        ok = false;
        rows.push(['(stop)', '-', '-', '-', '-', '-', '-', '-', `splitlet up exited ${code}`]);
      }
    }
  }
  return { title: `chaos: kill -9 of each process type during a churn of ${CHURN} pods, ${trials} trials each`, columns, rows, ok };
}
