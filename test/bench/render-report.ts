/**
 * Regenerates docs/benchmarks.md (and its SVG charts in docs/benchmarks/) from the JSON a
 * benchmark run wrote (`npm run bench -- --out …`, default docs/benchmarks.json).
 *
 * With a burst profile (`node --import tsx test/bench/burst-probe.ts --cpu-prof DIR --json
 * docs/benchmarks-profile.json`, the default path), the report also says where each process spends
 * its CPU per pod, by file and function.
 *
 * With an earlier burst (`--before`, default docs/benchmarks-profile-before.json: the same probe run
 * on the build before a change), the report puts the two side by side, process by process.
 *
 * With `--out DIR`, the report and its charts are written there (DIR/benchmarks.md, DIR/benchmarks/*.svg)
 * instead of docs/: the containerd outputs and the profiles are still read from docs/.
 *
 * Usage: npm run bench:report [-- results.json] [--profile burst-profile.json] [--before burst-profile.json] [--out DIR]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LONG_RUN_SAMPLES } from './lib/cpu-profiles.ts';
import type { BenchResult, BurstProbeResult } from './lib/result.ts';

const root = resolve(import.meta.dirname, '..', '..');
const args = parseArgs({ allowPositionals: true, options: { profile: { type: 'string' }, before: { type: 'string' }, out: { type: 'string' } } });
const input = resolve(args.positionals[0] ?? join(root, 'docs', 'benchmarks.json'));
const profilePath = resolve(args.values.profile ?? join(root, 'docs', 'benchmarks-profile.json'));
if (args.values.profile !== undefined && !existsSync(profilePath)) throw new Error(`--profile: no such file: ${profilePath}`);
const beforePath = resolve(args.values.before ?? join(root, 'docs', 'benchmarks-profile-before.json'));
if (args.values.before !== undefined && !existsSync(beforePath)) throw new Error(`--before: no such file: ${beforePath}`);
/** The burst probe's result, when there is one: read once for every section that quotes it. */
const probe = existsSync(profilePath) ? readJson<BurstProbeResult>(profilePath) : undefined;
/** The probe's bus messages per pod, every subject together. */
const probeMessages = probe === undefined ? undefined : total(probe.messagesPerPod);
const docs = join(root, 'docs');
/** Where the report and its charts go. */
const outDir = args.values.out === undefined ? docs : resolve(args.values.out);
const chartsDir = join(outDir, 'benchmarks');

/**
 * The JSON a bench or probe wrote at `path`.
 * @throws Error naming the file when it is not JSON.
 */
function readJson<T>(path: string): T {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (e) {
    throw new Error(`${path}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

/** The sum of a record's values. */
function total(m: Record<string, number>): number {
  return Object.values(m).reduce((a, b) => a + b, 0);
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A vertical bar chart with a caption line (machine, date, load, commit) under the title. */
function barChart(title: string, caption: string, unit: string, bars: ReadonlyArray<{ label: string; value: number }>, target?: { value: number; label: string }): string {
  const w = 560;
  const h = 320;
  const left = 60;
  const bottom = 50;
  const top = 60;
  const max = Math.max(...bars.map((b) => b.value), target?.value ?? 0) * 1.15 || 1;
  const plotH = h - top - bottom;
  const slot = (w - left - 20) / bars.length;
  const y = (v: number): number => top + plotH - (v / max) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`,
    `<rect width="${w}" height="${h}" fill="white"/>`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${w / 2}" y="38" text-anchor="middle" fill="#555">${escapeXml(caption)}</text>`,
    `<line x1="${left}" y1="${top + plotH}" x2="${w - 10}" y2="${top + plotH}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="black"/>`,
    `<text x="14" y="${top + plotH / 2}" transform="rotate(-90 14 ${top + plotH / 2})" text-anchor="middle">${escapeXml(unit)}</text>`,
  ];
  bars.forEach((b, i) => {
    const x = left + i * slot + slot * 0.2;
    const bw = slot * 0.6;
    parts.push(`<rect x="${x.toFixed(1)}" y="${y(b.value).toFixed(1)}" width="${bw.toFixed(1)}" height="${(top + plotH - y(b.value)).toFixed(1)}" fill="#4a7bd0"/>`);
    parts.push(`<text x="${(x + bw / 2).toFixed(1)}" y="${(y(b.value) - 4).toFixed(1)}" text-anchor="middle">${b.value.toFixed(1)}</text>`);
    parts.push(`<text x="${(x + bw / 2).toFixed(1)}" y="${top + plotH + 18}" text-anchor="middle">${escapeXml(b.label)}</text>`);
  });
  if (target !== undefined) {
    parts.push(`<line x1="${left}" y1="${y(target.value).toFixed(1)}" x2="${w - 10}" y2="${y(target.value).toFixed(1)}" stroke="#c33" stroke-dasharray="6 4"/>`);
    parts.push(`<text x="${w - 12}" y="${(y(target.value) - 4).toFixed(1)}" text-anchor="end" fill="#c33">${escapeXml(target.label)}</text>`);
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** Lines over a numeric x axis with a log-scale y axis (latencies span ms to seconds), a legend and an optional target line. */
function lineChart(
  title: string,
  caption: string,
  xLabel: string,
  yLabel: string,
  series: ReadonlyArray<{ label: string; color: string; points: ReadonlyArray<{ x: number; y: number }> }>,
  target?: { value: number; label: string },
): string {
  const w = 560;
  const h = 340;
  const left = 64;
  const right = 110;
  const top = 60;
  const bottom = 50;
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const ys = series.flatMap((s) => s.points.map((p) => Math.max(p.y, 1)));
  const xMax = Math.max(...xs) * 1.05 || 1;
  const lo = Math.floor(Math.log10(Math.min(...ys, target?.value ?? Infinity)));
  const hi = Math.max(Math.ceil(Math.log10(Math.max(...ys, target?.value ?? 1))), lo + 1);
  const plotW = w - left - right;
  const plotH = h - top - bottom;
  const x = (v: number): number => left + (v / xMax) * plotW;
  const y = (v: number): number => top + plotH - ((Math.log10(Math.max(v, 1)) - lo) / Math.max(hi - lo, 1)) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`,
    `<rect width="${w}" height="${h}" fill="white"/>`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${w / 2}" y="38" text-anchor="middle" fill="#555">${escapeXml(caption)}</text>`,
    `<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="black"/>`,
    `<text x="14" y="${top + plotH / 2}" transform="rotate(-90 14 ${top + plotH / 2})" text-anchor="middle">${escapeXml(yLabel)}</text>`,
    `<text x="${left + plotW / 2}" y="${h - 12}" text-anchor="middle">${escapeXml(xLabel)}</text>`,
  ];
  for (let e = lo; e <= hi; e++) {
    parts.push(`<line x1="${left}" y1="${y(10 ** e).toFixed(1)}" x2="${left + plotW}" y2="${y(10 ** e).toFixed(1)}" stroke="#ddd"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(10 ** e) + 4).toFixed(1)}" text-anchor="end">${10 ** e}</text>`);
  }
  for (const v of [...new Set(xs)]) parts.push(`<text x="${x(v).toFixed(1)}" y="${top + plotH + 18}" text-anchor="middle">${v}</text>`);
  series.forEach((s, i) => {
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join(' ')}"/>`);
    for (const p of pts) parts.push(`<circle cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="3" fill="${s.color}"/>`);
    parts.push(`<line x1="${left + plotW + 12}" y1="${top + 10 + i * 18}" x2="${left + plotW + 32}" y2="${top + 10 + i * 18}" stroke="${s.color}" stroke-width="2"/>`);
    parts.push(`<text x="${left + plotW + 38}" y="${top + 14 + i * 18}">${escapeXml(s.label)}</text>`);
  });
  if (target !== undefined) {
    parts.push(`<line x1="${left}" y1="${y(target.value).toFixed(1)}" x2="${left + plotW}" y2="${y(target.value).toFixed(1)}" stroke="#c33" stroke-dasharray="6 4"/>`);
    parts.push(`<text x="${left + plotW}" y="${(y(target.value) - 4).toFixed(1)}" text-anchor="end" fill="#c33">${escapeXml(target.label)}</text>`);
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

const r = readJson<BenchResult>(input);
const caption = `${r.machine.cpus} × ${r.machine.model}, ${r.date.slice(0, 16).replace('T', ' ')} UTC, load ${r.loadBefore[0]}→${r.loadAfter[0]}, commit ${r.commit}${r.quick ? ', --quick' : ''}`;
mkdirSync(chartsDir, { recursive: true });
const charts: string[] = [];

const steady = r.rows.find((x) => x.id === 'steady');
if (steady !== undefined) {
  const d = steady.data as { rate: number; p50: number; p90: number; p99: number; curve?: ReadonlyArray<{ rate: number; p50: number; p90: number; p99: number }> };
  if (d.curve !== undefined && d.curve.length > 1) {
    const pcts = [
      { key: 'p50', color: '#4a7bd0' },
      { key: 'p90', color: '#e08a1e' },
      { key: 'p99', color: '#7a3db8' },
    ] as const;
    writeFileSync(
      join(chartsDir, 'latency-vs-rate.svg'),
      lineChart(
        'created → Running latency against arrival rate',
        caption,
        'pods created per second (steady)',
        'ms (log scale)',
        pcts.map((p) => ({ label: p.key, color: p.color, points: d.curve!.map((c) => ({ x: c.rate, y: c[p.key] })) })),
        { value: 100, label: 'p99 target 100 ms' },
      ),
    );
    charts.push('![created → Running latency percentiles against arrival rate](benchmarks/latency-vs-rate.svg)');
  }
  writeFileSync(
    join(chartsDir, 'steady-latency.svg'),
    barChart(
      `created → Running at ${d.rate} pods/s`,
      caption,
      'ms',
      [
        { label: 'p50', value: d.p50 },
        { label: 'p90', value: d.p90 },
        { label: 'p99', value: d.p99 },
      ],
      { value: 100, label: 'p99 target 100 ms' },
    ),
  );
  charts.push('![created → Running latency percentiles](benchmarks/steady-latency.svg)');
}
const scale = r.rows.find((x) => x.id === 'scale-out');
if (scale !== undefined) {
  const d = scale.data as { podsPerSec: Record<string, number>; latencyMs: number };
  writeFileSync(
    join(chartsDir, 'scale-out.svg'),
    barChart(
      `pods/s against pod-workers (${d.latencyMs} ms per CRI call)`,
      caption,
      'pods/s',
      Object.entries(d.podsPerSec).map(([k, v]) => ({ label: `${k} pod-worker${k === '1' ? '' : 's'}`, value: v })),
    ),
  );
  charts.push('![pods/s against pod-workers](benchmarks/scale-out.svg)');
}

const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** Two runs of the burst probe side by side: CPU ms per pod by process, bus messages per pod, pods/s. */
function beforeAfter(before: BurstProbeResult, after: BurstProbeResult): string[] {
  const label = (x: BurstProbeResult): string =>
    `${x.commit ?? 'unknown commit'}${x.node !== undefined ? ` on Node ${x.node}` : ''}${x.date !== undefined ? `, ${x.date.slice(0, 16).replace('T', ' ')} UTC` : ''}, load ${x.load[0]?.[0] ?? '?'}→${x.load[1]?.[0] ?? '?'}`;
  const change = (b: number | undefined, a: number | undefined): string => {
    if (b === undefined || a === undefined || b === 0) return '—';
    const p = Math.round((100 * (a - b)) / b);
    return p === 0 ? '0 %' : `${p < 0 ? '−' : '+'}${Math.abs(p)} %`;
  };
  const row = (name: string, b: number | undefined, a: number | undefined, d = 2): string => `| ${name} | ${b?.toFixed(d) ?? '—'} | ${a?.toFixed(d) ?? '—'} | ${change(b, a)} |`;
  /** The whole burst's CPU per pod less what the idle node spends over the same time. */
  const lessIdle = (x: BurstProbeResult): number | undefined =>
    x.idleCpuMsPerS === undefined || x.countedSeconds === undefined ? undefined : (x.cpuMsPerPod['total'] ?? total(x.cpuMsPerPod)) - (x.idleCpuMsPerS * x.countedSeconds) / x.pods;
  // The per-process rows are the whole burst's, its reports to the API server included.
  const procs = [...new Set([...Object.keys(after.cpuMsPerPod), ...Object.keys(before.cpuMsPerPod)])].filter((k) => k !== 'total');
  procs.sort((x, y) => (before.cpuMsPerPod[y] ?? 0) - (before.cpuMsPerPod[x] ?? 0));
  return [
    `## Before and after: one burst of ${after.pods} pods (burst-probe)`,
    '',
    `Before: ${label(before)}. After: ${label(after)}. Messages per pod do not depend on the machine's load; CPU ms per pod rises with it (a loaded 2-core machine measured 3× the quiet figure) and with \`--cpu-prof\`, so only runs made back to back on a quiet machine compare; pods/s depends on it most.`,
    '',
    '| process | before | after | change |',
    '|---|---|---|---|',
    ...procs.map((k) => row(k, before.cpuMsPerPod[k], after.cpuMsPerPod[k])),
    row('**CPU ms per pod, whole node**', before.cpuMsPerPod['total'] ?? total(before.cpuMsPerPod), after.cpuMsPerPod['total'] ?? total(after.cpuMsPerPod)),
    ...(before.cpuMsPerPodToRunning !== undefined && after.cpuMsPerPodToRunning !== undefined
      ? [row('CPU ms per pod until the last Running, whole node', total(before.cpuMsPerPodToRunning), total(after.cpuMsPerPodToRunning))]
      : []),
    ...(lessIdle(before) !== undefined && lessIdle(after) !== undefined
      ? [row("CPU ms per pod, whole node, less the idle node's rate over the time counted", lessIdle(before), lessIdle(after))]
      : []),
    ...(before.countedSeconds !== undefined && after.countedSeconds !== undefined
      ? [row('seconds counted (until the node drained)', before.countedSeconds, after.countedSeconds, 1)]
      : []),
    row('bus messages per pod', total(before.messagesPerPod), total(after.messagesPerPod), 1),
    row('pods/s', before.podsPerSec, after.podsPerSec, 1),
    '',
  ];
}
const lines = [
  '# Benchmarks',
  '',
  `Generated by \`npm run bench:report\` from \`${relative(root, input)}\` — do not edit by hand; re-run \`npm run bench\` then the report.`,
  '',
  `- machine: ${r.machine.cpus} × ${r.machine.model}, node ${r.machine.node}`,
  `- date: ${r.date} (${r.durationSeconds} s), commit ${r.commit}${r.quick ? ", **--quick** (small N: a smoke run, not the targets' sizes)" : ''}`,
  `- load average (1/5/15 min) before ${r.loadBefore.join(' ')}, after ${r.loadAfter.join(' ')} — the targets are for a quiet machine`,
  `- settings: ${Object.entries(r.settings)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`,
  '',
  '| measure | value | reference (same run) | target | met |',
  '|---|---|---|---|---|',
  ...r.rows.map((x) => `| ${cell(x.measure)} | ${cell(x.value)} | ${cell(x.reference ?? '—')} | ${cell(x.target)} | ${x.met === undefined ? '—' : x.met ? 'yes' : 'no'} |`),
  '',
  'The containerd row (busybox pods against the same CRI calls made directly) is `npm run bench:containerd`.',
  '',
];
// Its output, when saved beside the report (`npm run bench:containerd > docs/benchmarks-containerd.txt`).
const containerdPath = join(docs, 'benchmarks-containerd.txt');
if (existsSync(containerdPath)) lines.push('Its last run (`docs/benchmarks-containerd.txt`):', '', '```', readFileSync(containerdPath, 'utf8').trim(), '```', '');
// The containerd probe's output (`node --import tsx test/bench/containerd-probe.ts --pods 10 > docs/benchmarks-containerd-probe.txt`): its summary, up to the span tables.
const containerdProbePath = join(docs, 'benchmarks-containerd-probe.txt');
if (existsSync(containerdProbePath)) {
  const summary = readFileSync(containerdProbePath, 'utf8').split('\n\n')[0]!.trim();
  lines.push(
    '### What limits the containerd ratio',
    '',
    "`test/bench/containerd-probe.ts` makes the same busybox pods one at a time, directly and through splitlet, with every process's spans on the bus, and splits each splitlet pod's time at cri-adapter's `kuberuntime.SyncPod`: the hops before the CRI (the manifest's file watch, config-source, sync-loop, a pod-worker and its volume mount), the CRI calls, cri-adapter's own work between them, and the hops after (the reply, the pod-worker's status, status-manager's record). The direct path pays none of the hops. Its last run (`docs/benchmarks-containerd-probe.txt`, with every span's median and one pod's waterfall):",
    '',
    '```',
    summary,
    '```',
    '',
  );
}
const mem = r.rows.find((x) => x.id === 'memory');
if (mem !== undefined) {
  type Split = { rss: number; anon: number; file: number };
  const d = mem.data as {
    idle: Record<string, number>;
    loaded: Record<string, number>;
    idleSplit?: Record<string, Split>;
    floors?: { node: Split; common: Split; grpc: Split };
    grpcProcesses?: string[];
  };
  lines.push('## Memory per process (RSS, MiB)', '');
  const f = d.floors;
  if (f === undefined || d.idleSplit === undefined) {
    lines.push('| process | idle | loaded |', '|---|---|---|');
    for (const k of Object.keys(d.loaded)) lines.push(`| ${k} | ${d.idle[k] ?? '—'} | ${d.loaded[k]} |`);
  } else {
    const grpc = new Set(d.grpcProcesses ?? []);
    const floorOf = (k: string): Split | undefined => (k === 'nats-server' ? undefined : grpc.has(k) ? f.grpc : f.common);
    const target = Math.round((80e6 / 2 ** 20) * 10) / 10;
    lines.push(
      `The floor is a process of the same Node (${r.machine.node}) and flags that loads only the libraries and runs a full GC: ` +
        `Node alone ${f.node.rss} MiB (${f.node.file} of it the Node binary's pages, file-backed); with the libraries every process loads ` +
        `(NATS client, OpenTelemetry SDK, prom-client, zod, node:http) ${f.common.rss} MiB; with gRPC too (cri-adapter, sim-runtime, prober) ${f.grpc.rss} MiB. ` +
        `The target, 80 MB, is ${target} MiB. File-backed pages are the Node binary's code and data: the kernel counts them in every process's RSS but holds them once for all.`,
      '',
      '| process | idle | anon / file | its floor | above the floor | loaded |',
      '|---|---|---|---|---|---|',
    );
    for (const k of Object.keys(d.loaded)) {
      const s = d.idleSplit[k];
      const fl = floorOf(k);
      const above = fl === undefined || d.idle[k] === undefined ? '—' : `${Math.round((d.idle[k] - fl.rss) * 10) / 10}`;
      lines.push(`| ${k} | ${d.idle[k] ?? '—'} | ${s === undefined ? '—' : `${s.anon} / ${s.file}`} | ${fl?.rss ?? '—'} | ${above} | ${d.loaded[k]} |`);
    }
  }
  lines.push('');
}
const burstRow = r.rows.find((x) => x.id === 'burst');
if (burstRow !== undefined && burstRow.data['cpuMsPerPod'] !== undefined) {
  const d = burstRow.data as {
    cpuMsPerPod: Record<string, number>;
    cpuMsPerPodTotal: number;
    podsPerSec: number;
    cpuBoundPodsPerSec?: number;
    cpuMsPerPodToRunning?: number;
    toRunningMsPerPod?: Record<string, number>;
    drainedMs?: number;
  };
  const cores = r.machine.cpus;
  // Runs before the split counted the whole burst's CPU against its rate.
  const toRunning = d.cpuMsPerPodToRunning ?? d.cpuMsPerPodTotal;
  const split = d.toRunningMsPerPod;
  lines.push(
    `## Where a pod's CPU goes in the burst (CPU ms per pod: ${toRunning} until the last pod was Running, ${d.cpuMsPerPodTotal} in all)`,
    '',
    split === undefined ? '| process | CPU ms per pod |' : '| process | until the last Running | in all, with the events and statuses reported after it |',
    split === undefined ? '|---|---|' : '|---|---|---|',
  );
  for (const [k, v] of Object.entries(d.cpuMsPerPod).sort((a, b) => b[1] - a[1])) lines.push(split === undefined ? `| ${k} | ${v} |` : `| ${k} | ${split[k] ?? '—'} | ${v} |`);
  lines.push('');
  if (d.cpuBoundPodsPerSec !== undefined) {
    const needed = (cores * 1000) / 300;
    lines.push(
      '### What limits the burst',
      '',
      `The node's processes share ${cores} cores, so a burst cannot go faster than ${cores} × 1000 ÷ ${toRunning} CPU ms per pod = ` +
        `**${d.cpuBoundPodsPerSec.toFixed(1)} pods/s**; it reached ${d.podsPerSec.toFixed(1)} pods/s, ${((100 * d.podsPerSec) / d.cpuBoundPodsPerSec).toFixed(0)} % of that bound. ` +
        `300 pods/s on this machine needs at most ${needed.toFixed(1)} CPU ms per pod for the whole node (every process and nats-server), ` +
        `${(toRunning / needed).toFixed(1)}× less than measured: the bus is not the limit, the CPU each hop costs is.` +
        (d.cpuMsPerPodToRunning === undefined || d.drainedMs === undefined
          ? ''
          : ` The node reports the burst's events and statuses to the API server at the kubelet's eventRecordQPS and kubeAPIQPS (50 a second each, after a burst of 100): ` +
            `that work, ${(d.cpuMsPerPodTotal - d.cpuMsPerPodToRunning).toFixed(1)} CPU ms per pod, went on for ${(d.drainedMs / 1000).toFixed(0)} s after the last Running instead of competing with the pods' start.`),
      '',
    );
    // The messages and nats-server's CPU of one run (the burst probe's), so the price per message is that run's.
    const nats = probe?.cpuMsPerPod['nats-server'];
    if (probe !== undefined && nats !== undefined && probeMessages !== undefined && probeMessages > 0) {
      const perMessage = (1000 * nats) / probeMessages;
      const hop = probe.busHop;
      // A pod's messages at a hop's price: CPU ms per pod, and the pods/s the cores allow at it.
      const atPrice = (microsPerMessage: number): string => {
        const ms = (probeMessages * microsPerMessage) / 1000;
        return `${ms.toFixed(1)} CPU ms, ${((cores * 1000) / ms).toFixed(0)} pods/s`;
      };
      lines.push(
        `In the burst probe (${probe.pods} pods at ${probe.commit ?? 'an unknown commit'}, below) nats-server used ${nats.toFixed(1)} CPU ms per pod for ${probeMessages.toFixed(0)} bus messages per pod (every publish, delivery, ack and reply), ` +
          `about ${perMessage.toFixed(0)} µs of CPU per message.` +
          (hop === undefined
            ? ` At that price the messages a pod needs bound the node to ${((cores * 1000) / nats).toFixed(0)} pods/s even if every splitlet process cost nothing.`
            : ` The same run then measured what carrying a message costs when nothing else runs: a JetStream publish, its ack, the delivery to a durable consumer and its ack (${hop.messagesPerHop} messages of ${hop.payloadBytes} bytes between two Node processes, on a nats-server of their own) ` +
              `cost all three ${hop.pipelined.microsPerHop.total.toFixed(0)} µs of CPU pipelined (nats-server ${hop.pipelined.microsPerHop.natsServer.toFixed(0)}), ${hop.pipelined.microsPerMessage.toFixed(0)} µs per message, ` +
              `and ${hop.sequential.microsPerHop.total.toFixed(0)} µs one at a time (nats-server ${hop.sequential.microsPerHop.natsServer.toFixed(0)}), ${hop.sequential.microsPerMessage.toFixed(0)} µs per message. ` +
              `A pod's ${probeMessages.toFixed(0)} messages cost at the pipelined price ${atPrice(hop.pipelined.microsPerMessage)}; one at a time ${atPrice(hop.sequential.microsPerMessage)}. ` +
              `The burst paid the price one at a time: nats-server's ${perMessage.toFixed(0)} µs per message there is ${(perMessage / (hop.sequential.microsPerHop.natsServer / hop.messagesPerHop)).toFixed(1)}× its price one at a time here, although ${probe.pods} pods were in flight — ` +
              `each of a pod's steps awaits the one before it, and each process handles its messages as they come. ` +
              `So 300 pods/s needs fewer messages per pod or messages carried in batches, and then far cheaper handling of each message in the processes (decoding, validation, tracing, the work it starts), which is the rest of a pod's CPU.`),
        '',
      );
    }
  }
}
if (scale !== undefined && scale.data['cpuCores'] !== undefined) {
  const d = scale.data as {
    podsPerSec: Record<string, number>;
    cpuCores: Record<string, number>;
    cpuMsPerPod: Record<string, number>;
    cpuBoundPodsPerSec: number;
    syncsPerWorker: number;
  };
  const cores = r.machine.cpus;
  const steps = Object.keys(d.podsPerSec);
  lines.push(
    '### What limits the scale-out',
    '',
    `Every pod-worker replica runs on the same ${cores} cores as the rest of the node. With one replica of ${d.syncsPerWorker} syncs the node was already ` +
      `${d.cpuCores['1']?.toFixed(2)} of ${cores} cores busy, and with four ${d.cpuCores['4']?.toFixed(2)}. A pod costs less CPU the faster pods come (fewer idle wake-ups); ` +
      `even at the lowest cost measured, ${Math.min(...Object.values(d.cpuMsPerPod))} CPU ms per pod, the cores allow at most ${d.cpuBoundPodsPerSec.toFixed(1)} pods/s, ` +
      `${(d.cpuBoundPodsPerSec / d.podsPerSec['1']!).toFixed(2)}× the one-replica rate: the cores, not the replicas, set the ceiling here. ` +
      `Linear scale-out to 4 replicas on this machine would need at most ${((cores * 1000) / (4 * d.podsPerSec['1']!)).toFixed(1)} CPU ms per pod.`,
    '',
    '| pod-workers | pods/s | cores busy | CPU ms per pod |',
    '|---|---|---|---|',
    ...steps.map((k) => `| ${k} | ${d.podsPerSec[k]!.toFixed(1)} | ${d.cpuCores[k]?.toFixed(2) ?? '—'} | ${d.cpuMsPerPod[k] ?? '—'} |`),
    '',
  );
}
if (steady !== undefined && steady.data['curve'] !== undefined) {
  type Point = { rate: number; p50: number; p99: number; coresBusy?: number; cpuMsPerPodTotal?: number; cpuMsPerPod?: Record<string, number> };
  const { curve, roundTrip } = steady.data as { curve: Point[]; roundTrip?: { busyMicros: number; idleMicros: number; gapMs: number } };
  const at = curve[curve.length - 1]!;
  const low = curve[0]!;
  if (at.coresBusy !== undefined && at.cpuMsPerPodTotal !== undefined && at.cpuMsPerPod !== undefined) {
    const cores = r.machine.cpus;
    lines.push(
      '### What limits the latency',
      '',
      `A pod's path from its manifest to Running is serial: config-source, sync-loop, a pod-worker, volume-manager, cri-adapter and its CRI calls, then status-manager — ` +
        `at ${low.rate} pods/s it took p50 ${low.p50} ms. Each pod also costs the node CPU in every process, and at ${at.rate} pods/s × ${at.cpuMsPerPodTotal} CPU ms per pod ` +
        `the node's processes kept ${at.coresBusy.toFixed(2)} of ${cores} cores busy (${((100 * at.coresBusy) / cores).toFixed(0)} %): every hop of a pod's path waits its turn for a core behind the other pods' work, ` +
        `and the wait grows steeply as the cores fill. p50 ≤ 25 ms at ${at.rate} pods/s needs both a shorter path and far less CPU per pod (the burst's limit, above).`,
      '',
    );
    if (roundTrip !== undefined) {
      const burstCpu = (r.rows.find((x) => x.id === 'burst')?.data as { cpuMsPerPodTotal?: number } | undefined)?.cpuMsPerPodTotal;
      lines.push(
        `A pod costs more CPU the slower pods arrive (${low.cpuMsPerPodTotal} ms at ${low.rate} pods/s${burstCpu !== undefined ? `, ${burstCpu} ms in the burst` : ''}), and the machine says why: ` +
          `a 1 KiB message between two processes over loopback, written back, costs them ${roundTrip.busyMicros.toFixed(0)} µs of CPU when they stay busy and ` +
          `${roundTrip.idleMicros.toFixed(0)} µs when they go idle between messages (${roundTrip.gapMs} ms apart, ${(roundTrip.idleMicros / roundTrip.busyMicros).toFixed(1)}×) — waking a process on this machine is dear. ` +
          `A pod's path is ${probeMessages === undefined ? 'many' : `about ${probeMessages.toFixed(0)}`} bus messages (the burst probe's count), and at a steady arrival nearly every one of them wakes an idle process, where a burst keeps them busy.`,
        '',
      );
    }
    lines.push(
      '| pods/s | p50 ms | p99 ms | cores busy | CPU ms per pod |',
      '|---|---|---|---|---|',
      ...curve.map((c) => `| ${c.rate} | ${c.p50} | ${c.p99} | ${c.coresBusy?.toFixed(2) ?? '—'} | ${c.cpuMsPerPodTotal ?? '—'} |`),
      '',
      `CPU ms per pod by process at ${at.rate} pods/s: ` +
        Object.entries(at.cpuMsPerPod)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') +
        '.',
      '',
    );
  }
}
const del = r.rows.find((x) => x.id === 'delete');
if (del !== undefined && del.data['cpuMsPerPod'] !== undefined) {
  const d = del.data as { podsPerSec: number; cpuMsPerPod: Record<string, number>; cpuMsPerPodTotal: number; cpuBoundPodsPerSec: number; coresBusy: number };
  const cores = r.machine.cpus;
  lines.push(
    '### What limits deletion',
    '',
    `Deleting a pod is its kill through the CRI, its final status and events, and its removal from the node's stores — ${d.cpuMsPerPodTotal.toFixed(1)} CPU ms per pod for the whole node, ` +
      `so ${cores} cores allow at most **${d.cpuBoundPodsPerSec.toFixed(1)} pods/s**; the deletion reached ${d.podsPerSec.toFixed(1)} pods/s with ${d.coresBusy.toFixed(2)} of ${cores} cores busy. ` +
      `200 pods/s needs at most ${((cores * 1000) / 200).toFixed(1)} CPU ms per deleted pod.`,
    '',
    '| process | CPU ms per deleted pod |',
    '|---|---|',
    ...Object.entries(d.cpuMsPerPod)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `| ${k} | ${v} |`),
    '',
  );
}
if (probe !== undefined) {
  if (existsSync(beforePath)) lines.push(...beforeAfter(readJson<BurstProbeResult>(beforePath), probe));
  if (probe.profile !== undefined) {
    lines.push(
      `## CPU profile of a burst (${probe.pods} pods, ${probe.workers} pod-workers, simulator ${probe.latencyMs} ms per call${probe.date !== undefined ? `, ${probe.date.slice(0, 16).replace('T', ' ')} UTC` : ''})`,
      '',
      `Sampled with \`--cpu-prof\` in every process (\`${relative(root, profilePath)}\`, from \`test/bench/burst-probe.ts\`), CPU ms per pod: each process's total, the files it went to and its busiest functions (self time). These are the main thread's samples, each counted for at most the profiler's interval (a longer gap between samples is time the process waited for a core); the GC's helper threads and libuv's pool are not sampled, so a process's total is below its measured CPU. A function marked "one uninterrupted run" had ${LONG_RUN_SAMPLES} or more samples in a row at one stack: one call that long, usually a stall of the process or the machine rather than that function's work.`,
      '',
      '| process | ms per pod | files | busiest functions |',
      '|---|---|---|---|',
    );
    const list = (xs: ReadonlyArray<{ name: string; msPerPod: number }>, n: number): string =>
      xs
        .slice(0, n)
        .map((x) => `${cell(x.name)} ${x.msPerPod.toFixed(2)}`)
        .join('<br>');
    for (const x of probe.profile) lines.push(`| ${x.process} | ${x.msPerPod.toFixed(2)} | ${list(x.files, 4)} | ${list(x.functions, 4)} |`);
    lines.push('');
  }
}
const cpu = r.rows.find((x) => x.id === 'cpu');
if (cpu !== undefined) {
  const d = cpu.data as {
    perProcess: Record<string, number>;
    idlePerProcess?: Record<string, number>;
    idlePercentOfOneCore?: number;
    idleSeconds?: number;
    cpuMsPerSync?: number;
    syncsPerSecond: number;
  };
  lines.push('## Steady CPU per process (% of one core)', '');
  const idle = d.idlePerProcess;
  if (idle === undefined) {
    lines.push('| process | CPU |', '|---|---|');
    for (const [k, v] of Object.entries(d.perProcess).sort((a, b) => b[1] - a[1])) lines.push(`| ${k} | ${v.toFixed(1)} |`);
  } else {
    lines.push(
      `Holding the pods, and the same node idle with no pods (${d.idleSeconds} s before the burst): the idle node's own periodic work — partition leases, relists, consumer heartbeats, housekeeping — is ${d.idlePercentOfOneCore!.toFixed(1)} % of one core; ${d.syncsPerSecond.toFixed(1)} periodic syncs a second add ${(d.cpuMsPerSync ?? NaN).toFixed(1)} CPU ms each.`,
      '',
      '| process | holding the pods | idle | added by the pods |',
      '|---|---|---|---|',
    );
    for (const [k, v] of Object.entries(d.perProcess).sort((a, b) => b[1] - a[1]))
      lines.push(`| ${k} | ${v.toFixed(1)} | ${(idle[k] ?? NaN).toFixed(1)} | ${(v - (idle[k] ?? NaN)).toFixed(1)} |`);
  }
  lines.push('');
}
if (charts.length > 0) lines.push('## Charts', '', ...charts.flatMap((c) => [c, '']));
writeFileSync(join(outDir, 'benchmarks.md'), lines.join('\n'));
console.log(`wrote ${relative(root, join(outDir, 'benchmarks.md'))} and ${charts.length} chart(s) from ${relative(root, input)}`);
