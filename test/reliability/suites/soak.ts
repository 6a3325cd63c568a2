/**
 * A soak: one node under a steady pod churn (about 40 pods alive, creates, image updates and deletes
 * every few seconds) for 6 min (`--long`: 30 min), with the store sampled every 30 s. The per-pod
 * KV buckets must stay flat once warmed up: a deleted key's marker is removed after
 * `DELETE_MARKER_MIN_AGE_MS` (shortened here to 60 s, removal every 30 s, from the 30 min / 10 min
 * defaults, so that a few minutes show what months of defaults do). The streams are bounded by their
 * max age (1–24 h) and bytes, longer than a soak: their growth rate is reported with the bound it
 * reaches, not judged.
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startSplitlet, type Instance } from '../../integration/harness.ts';
import { Churn, describeProblems, driverBus } from '../lib/churn.ts';
import type { SuiteOptions, SuiteResult } from '../suite.ts';

const SAMPLE_MS = 30_000;
const MARKER_AGE_MS = 60_000;
const MARKER_INTERVAL_MS = 30_000;

interface Sample {
  t: number;
  /** Per stream (KV buckets are `KV_<bucket>`): messages and bytes. */
  streams: Map<string, { messages: number; bytes: number; maxAgeS: number; maxBytes: number }>;
}

const kib = (b: number): string => `${(b / 1024).toFixed(0)} KiB`;

export async function run(opts: SuiteOptions): Promise<SuiteResult> {
  const log = opts.log ?? ((): void => undefined);
  const durationMs = (opts.mode === 'long' ? 30 : 6) * 60_000;
  const columns = ['store', 'after warm-up (msgs / bytes)', 'at the end (msgs / bytes)', 'growth', 'bound', 'outcome'];
  const rows: string[][] = [];
  let ok = true;
  let inst: Instance | undefined;
  const closers: (() => Promise<void>)[] = [];
  try {
    inst = await startSplitlet({
      nodeName: 'soak-node',
      podWorkers: 2,
      args: ['--runtime', 'sim', '--no-apiserver'],
      env: { LOG_LEVEL: 'info', DELETE_MARKER_MIN_AGE_MS: String(MARKER_AGE_MS), DELETE_MARKER_COMPACTION_INTERVAL_MS: String(MARKER_INTERVAL_MS) },
    });
    const stack = inst;
    const admin = stack.natsCredential('admin');
    const nc = await connect({ servers: stack.info().natsUrl, name: 'reliability-soak', user: admin.user, pass: admin.password });
    closers.push(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const driver = await driverBus(stack);
    closers.push(() => driver.close());
    const sample = async (): Promise<Sample> => {
      const streams: Sample['streams'] = new Map();
      for await (const s of jsm.streams.list()) {
        streams.set(s.config.name, { messages: s.state.messages, bytes: s.state.bytes, maxAgeS: s.config.max_age / 1e9, maxBytes: s.config.max_bytes });
      }
      return { t: Date.now(), streams };
    };

    const churn = new Churn(stack, driver, 'soak');
    const samples: Sample[] = [];
    const t0 = Date.now();
    let nextSample = t0;
    let steps = 0;
    while (Date.now() - t0 < durationMs) {
      await churn.step(20, 5000, 40);
      steps++;
      if (Date.now() >= nextSample) {
        const s = await sample();
        samples.push(s);
        nextSample += SAMPLE_MS;
        const kv = [...s.streams].filter(([n]) => n.startsWith('KV_')).reduce((a, [, v]) => a + v.messages, 0);
        log(`soak: ${((s.t - t0) / 1000).toFixed(0)} s, ${churn.desired.size} pods desired, ${churn.deleted.size} deleted so far, KV messages ${kv}`);
      }
    }
    const settled = await churn.settle(180_000);
    if (!settled.converged) {
      ok = false;
      rows.push(['(pods)', '-', '-', '-', '-', `not converged: ${describeProblems(settled.o)}`]);
    }
    const last = await sample();
    // Warm-up: a marker lives MARKER_AGE_MS + MARKER_INTERVAL_MS at most, twice that for the churn to fill.
    const warm = samples.find((s) => s.t - t0 >= 2 * (MARKER_AGE_MS + MARKER_INTERVAL_MS)) ?? samples.at(-1)!;
    const spanS = (last.t - warm.t) / 1000;
    let kvWarm = 0;
    let kvEnd = 0;
    for (const [name, end] of [...last.streams].sort(([a], [b]) => a.localeCompare(b))) {
      const w = warm.streams.get(name) ?? { messages: 0, bytes: 0 };
      const isKv = name.startsWith('KV_');
      const growth = end.bytes - w.bytes;
      let bound: string;
      let outcome = 'ok';
      if (isKv) {
        kvWarm += w.messages;
        kvEnd += end.messages;
        bound = `flat: ≤ 1.25 × after warm-up + 50 msgs`;
        if (end.messages > 1.25 * w.messages + 50) {
          outcome = 'GROWS';
          ok = false;
        }
      } else {
        const perS = spanS > 0 ? growth / spanS : 0;
        const byAge = perS * end.maxAgeS;
        bound = `max age ${end.maxAgeS / 3600} h: ~${kib(Math.min(byAge, end.maxBytes))} at ${kib(perS * 3600)}/h (max bytes ${kib(end.maxBytes)})`;
      }
      rows.push([
        name,
        `${w.messages} / ${kib(w.bytes)}`,
        `${end.messages} / ${kib(end.bytes)}`,
        `${growth >= 0 ? '+' : ''}${kib(growth)} in ${spanS.toFixed(0)} s`,
        bound,
        outcome,
      ]);
    }
    rows.push([
      '(all KV buckets)',
      `${kvWarm} msgs`,
      `${kvEnd} msgs`,
      `${kvEnd - kvWarm >= 0 ? '+' : ''}${kvEnd - kvWarm}`,
      `${steps} churn steps, ${churn.deleted.size} pods deleted`,
      kvEnd <= 1.25 * kvWarm + 50 ? 'ok' : 'GROWS',
    ]);
    await churn.deleteAll();
    const end = await churn.settle(180_000);
    if (!end.converged) {
      ok = false;
      rows.push(['(delete all)', '-', '-', '-', '-', describeProblems(end.o)]);
    }
  } catch (e) {
    ok = false;
    log(`soak: ${(e as Error).message}`);
    rows.push(['(error)', '-', '-', '-', '-', (e as Error).message.split('\n').slice(0, 3).join(' ')]);
  } finally {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    if (inst !== undefined) {
      const code = await inst.stop();
      if (code !== 0) {
        ok = false;
        rows.push(['(stop)', '-', '-', '-', '-', `splitlet up exited ${code}`]);
      }
    }
  }
  return {
    title: `soak: a steady pod churn for ${durationMs / 60_000} min, the store sampled every ${SAMPLE_MS / 1000} s; the KV buckets stay flat`,
    columns,
    rows,
    ok,
  };
}
