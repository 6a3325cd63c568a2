/**
 * A soak: one node under a steady pod churn (about 40 pods alive, creates, image updates and deletes
 * every few seconds) for 6 min (`--long`: 30 min), with the store sampled every 30 s. The whole store
 * must stay flat once warmed up — every stream and every KV bucket, and their total, in messages and
 * bytes — so that a few minutes show what months of the defaults do:
 * - a deleted key's marker is removed after `DELETE_MARKER_MIN_AGE_MS` (shortened here to 60 s,
 *   removal every 30 s, from the 30 min / 10 min defaults);
 * - a stream keeps its max age of messages (`STREAM_MAX_AGE`, shortened here to 90 s, SL_CONFIG and
 *   SL_WORK to their 2 min floor, from 1 h to 7 d).
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Streams } from '@splitlet/api';
import { STREAM_MAX_AGE_FLOORS_MS } from '@splitlet/bus';
import { startSplitlet, type Instance } from '../../integration/harness.ts';
import { Churn, describeProblems, driverBus } from '../lib/churn.ts';
import type { SuiteOptions, SuiteResult } from '../suite.ts';

const SAMPLE_MS = 30_000;
const MARKER_AGE_MS = 60_000;
const MARKER_INTERVAL_MS = 30_000;
/** The soak's stream max age: well under its length; the work streams get their floor. */
const STREAM_AGE_MS = 90_000;
const streamAgeMs = (name: string): number => Math.max(STREAM_AGE_MS, STREAM_MAX_AGE_FLOORS_MS[name] ?? 0);
const STREAM_MAX_AGE = Object.values(Streams)
  .map((n) => `${n}=${streamAgeMs(n) / 1000}s`)
  .join(',');
/**
 * Flat: the peak of the samples in the second half after warm-up at most 1.25 × the peak of the
 * first half (which starts with the warm-up sample) plus 50 messages (and 50 of the store's mean
 * message size in bytes, 64 KiB when it was empty). Peaks, not single samples: nats-server expires a
 * stream's old messages in batches, so a stream at its max age swings by a quarter between samples
 * (SL_PLEG 935–1,209). The slack covers a churn step's burst landing on a sample (a step creates,
 * updates or deletes up to 20 pods, each a few messages per store). What grows without bound fails
 * it within minutes: a stream at its 1 h default grows by 40 % from the first half's peak to the end
 * of a 6 min soak.
 */
const GROWTH = 1.25;
const SLACK_MSGS = 50;
const EMPTY_SLACK_BYTES = 64 * 1024;

interface Size {
  messages: number;
  bytes: number;
}

interface Sample {
  t: number;
  /** Per stream (KV buckets are `KV_<bucket>`): messages and bytes. */
  streams: Map<string, Size & { maxAgeS: number }>;
}

const kib = (b: number): string => `${(b / 1024).toFixed(0)} KiB`;
const size = (s: Size): string => `${s.messages} / ${kib(s.bytes)}`;
const total = (s: Sample): Size => [...s.streams.values()].reduce((a, v) => ({ messages: a.messages + v.messages, bytes: a.bytes + v.bytes }), { messages: 0, bytes: 0 });
const kvTotal = (s: Sample): Size =>
  [...s.streams].filter(([n]) => n.startsWith('KV_')).reduce((a, [, v]) => ({ messages: a.messages + v.messages, bytes: a.bytes + v.bytes }), { messages: 0, bytes: 0 });
/** The flat bound of a store whose warm-up size was `w`. */
const bound = (w: Size): Size => ({
  messages: GROWTH * w.messages + SLACK_MSGS,
  bytes: GROWTH * w.bytes + (w.messages > 0 ? SLACK_MSGS * (w.bytes / w.messages) : EMPTY_SLACK_BYTES),
});
const within = (v: Size, b: Size): boolean => v.messages <= b.messages && v.bytes <= b.bytes;
/** The largest messages and bytes (separately) of `sizes`. */
const peakOf = (sizes: Size[]): Size => ({ messages: Math.max(0, ...sizes.map((x) => x.messages)), bytes: Math.max(0, ...sizes.map((x) => x.bytes)) });

export async function run(opts: SuiteOptions): Promise<SuiteResult> {
  const log = opts.log ?? ((): void => undefined);
  const durationMs = (opts.mode === 'long' ? 30 : 6) * 60_000;
  const columns = ['store', 'at warm-up (msgs / bytes)', 'peak, 1st half', 'peak, 2nd half', 'at the end', 'bound (msgs / bytes)', 'outcome'];
  const rows: string[][] = [];
  let ok = true;
  let inst: Instance | undefined;
  const closers: (() => Promise<void>)[] = [];
  try {
    inst = await startSplitlet({
      nodeName: 'soak-node',
      podWorkers: 2,
      args: ['--runtime', 'sim', '--no-apiserver'],
      env: { LOG_LEVEL: 'info', DELETE_MARKER_MIN_AGE_MS: String(MARKER_AGE_MS), DELETE_MARKER_COMPACTION_INTERVAL_MS: String(MARKER_INTERVAL_MS), STREAM_MAX_AGE },
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
        streams.set(s.config.name, { messages: s.state.messages, bytes: s.state.bytes, maxAgeS: s.config.max_age / 1e9 });
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
        const streams = [...s.streams]
          .filter(([n]) => !n.startsWith('KV_'))
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([n, v]) => `${n} ${size(v)}`);
        log(
          `soak: ${((s.t - t0) / 1000).toFixed(0)} s, ${churn.desired.size} pods desired, ${churn.deleted.size} deleted so far; ${streams.join(', ')}; KV ${size(kvTotal(s))}; total ${size(total(s))}`,
        );
      }
    }
    const settled = await churn.settle(180_000);
    if (!settled.converged) {
      ok = false;
      rows.push(['(pods)', '-', '-', '-', '-', '-', `not converged: ${describeProblems(settled.o)}`]);
    }
    const last = await sample();
    // Warm-up: a marker lives MARKER_AGE_MS + MARKER_INTERVAL_MS at most, twice that for the churn to
    // fill; a stream's message lives its max age (plus the server's expiry check), under that.
    const warmS = Math.max(2 * (MARKER_AGE_MS + MARKER_INTERVAL_MS), Math.max(...Object.values(Streams).map(streamAgeMs)) + SAMPLE_MS) / 1000;
    const warm = samples.find((s) => s.t - t0 >= warmS * 1000) ?? samples.at(-1)!;
    const fromWarm = [...samples.filter((s) => s.t >= warm.t), last];
    const mid = warm.t + (last.t - warm.t) / 2;
    const judge = (name: string, of: (s: Sample) => Size, extra: string): void => {
      const first = peakOf(fromWarm.filter((s) => s.t < mid).map(of));
      const second = peakOf(fromWarm.filter((s) => s.t >= mid).map(of));
      const b = bound(first);
      const flat = within(second, b);
      if (!flat) ok = false;
      rows.push([name, size(of(warm)), size(first), size(second), size(of(last)), `${b.messages.toFixed(0)} / ${kib(b.bytes)}${extra}`, flat ? 'ok' : 'GROWS']);
    };
    for (const [name, w] of [...warm.streams].sort(([a], [b]) => a.localeCompare(b))) {
      judge(name, (s) => s.streams.get(name) ?? { messages: 0, bytes: 0 }, name.startsWith('KV_') ? '' : ` (max age ${w.maxAgeS} s)`);
      if (!name.startsWith('KV_') && w.maxAgeS * 1000 !== streamAgeMs(name)) {
        ok = false;
        rows.push([name, '-', '-', '-', '-', '-', `max age ${w.maxAgeS} s, not the ${streamAgeMs(name) / 1000} s of STREAM_MAX_AGE`]);
      }
    }
    judge('(all KV buckets)', kvTotal, '');
    judge('(whole store)', total, `; warm-up at ${((warm.t - t0) / 1000).toFixed(0)} s, ${steps} churn steps, ${churn.deleted.size} pods deleted`);
    await churn.deleteAll();
    const end = await churn.settle(180_000);
    if (!end.converged) {
      ok = false;
      rows.push(['(delete all)', '-', '-', '-', '-', '-', describeProblems(end.o)]);
    }
  } catch (e) {
    ok = false;
    log(`soak: ${(e as Error).message}`);
    rows.push(['(error)', '-', '-', '-', '-', '-', (e as Error).message.split('\n').slice(0, 3).join(' ')]);
  } finally {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    if (inst !== undefined) {
      const code = await inst.stop();
      if (code !== 0) {
        ok = false;
        rows.push(['(stop)', '-', '-', '-', '-', '-', `splitlet up exited ${code}`]);
      }
    }
  }
  return {
    title: `soak: a steady pod churn for ${durationMs / 60_000} min, the store sampled every ${SAMPLE_MS / 1000} s; every stream and bucket stays flat (STREAM_MAX_AGE ${STREAM_MAX_AGE})`,
    columns,
    rows,
    ok,
  };
}
