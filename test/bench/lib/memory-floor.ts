/**
 * The memory a splitlet process cannot go below on this machine: a process of the same Node binary,
 * started with the same flags as `splitlet up` gives its processes (PROCESS_NODE_FLAGS), that only
 * loads the libraries every splitlet process loads and nothing of splitlet, runs a full GC and
 * reports its RSS. The bench's memory row prints each process's idle RSS beside the floor of its
 * kind, so a reader sees how much of a process is splitlet and how much is the platform.
 *
 * The RSS is split as the kernel counts it (/proc/<pid>/status): anonymous memory (the heap, the
 * code V8 compiled, malloc) and file-backed pages — mostly the Node binary's own code and data,
 * which every process maps and the kernel counts in each one's RSS although it holds them once.
 */
import { execFileSync } from 'node:child_process';
import { PROCESS_NODE_FLAGS } from '../../../services/cli/src/commands/up.ts';
import type { RssSplit } from './stats.ts';

/** What every splitlet process loads: the bus client, tracing and metrics, the schemas, the health server. */
export const COMMON_LIBRARIES: readonly string[] = [
  'node:http',
  '@nats-io/transport-node',
  '@nats-io/jetstream',
  '@nats-io/kv',
  '@opentelemetry/api',
  '@opentelemetry/resources',
  '@opentelemetry/semantic-conventions',
  '@opentelemetry/sdk-trace-node',
  'prom-client',
  'zod',
];

/** What the processes that speak the CRI (cri-adapter, sim-runtime, prober's exec probes) load on top. */
export const GRPC_LIBRARIES: readonly string[] = ['@grpc/grpc-js', '@grpc/proto-loader'];

/** The processes that load GRPC_LIBRARIES. */
export const GRPC_PROCESSES: ReadonlySet<string> = new Set(['cri-adapter', 'sim-runtime', 'prober']);

// Runs in the child: imports the libraries, lets start-up settle, runs the memory-reducing GC the
// processes' heap trimmer runs once after start-up (libs/service/src/heap-trimmer.ts) and reports.
const PROBE = `
for (const m of JSON.parse(process.env.SPLITLET_FLOOR_LIBS)) await import(m);
await new Promise((r) => setTimeout(r, 500));
globalThis.gc({ type: 'major', flavor: 'last-resort' });
await new Promise((r) => setTimeout(r, 200));
const s = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8');
const kb = (f) => Number(new RegExp(f + ':\\\\s+(\\\\d+) kB').exec(s)[1]) / 1024;
process.stdout.write(JSON.stringify({ rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') }));
`;

/**
 * The floor of a process loading `libraries`, resolved from `root` (the repo), in MiB: the median
 * of `runs` fresh processes (each run's RSS moves by a few hundred KiB).
 */
export function memoryFloor(root: string, libraries: readonly string[], runs = 3): RssSplit {
  const samples: RssSplit[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, [...PROCESS_NODE_FLAGS, '--expose-gc', '--input-type=module', '-e', PROBE], {
      cwd: root,
      env: { ...process.env, NODE_OPTIONS: '', SPLITLET_FLOOR_LIBS: JSON.stringify(libraries) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    samples.push(JSON.parse(out) as RssSplit);
  }
  samples.sort((a, b) => a.rss - b.rss);
  const m = samples[Math.floor(samples.length / 2)]!;
  const r = (x: number): number => Math.round(x * 10) / 10;
  return { rss: r(m.rss), anon: r(m.anon), file: r(m.file) };
}
