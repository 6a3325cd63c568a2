/**
 * CPU per pod of config-source's merge path in a burst from the apiserver source, in-process and
 * independent of the machine's load (process CPU time): N pods are ADDED, then each is MODIFIED
 * twice (status updates), each event handed to PodConfig as the apiserver source does — the full
 * listing, and (unless --full) the changes since the previous one. Publishing is a no-op, spans go to
 * an in-memory exporter: what is left is the merge, the copies and the bookkeeping per event.
 *
 * Usage: node --import tsx test/bench/config-merge-probe.ts [--pods 1000] [--full]
 */
import { parseArgs } from 'node:util';
import type { BoundPod, PodPhase } from '@splitlet/api';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing } from '@splitlet/telemetry/testing';
import { aContainer, aPod } from '../../libs/kube/src/testing/index.ts';
import { PodConfig } from '../../services/config-source/src/pod-config/pod-config.ts';
import type { ListingChanges, SourcedPod } from '../../services/config-source/src/sources/listing.ts';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '1000' }, full: { type: 'boolean', default: false } } });
const PODS = Number(values.pods);
if (!Number.isInteger(PODS) || PODS < 1) throw new Error('--pods must be a positive integer');

const ac = new AbortController();
const tracing = createTestTracing();
const pc = new PodConfig({
  nodeName: 'bench-node',
  sources: ['api'],
  publisher: { publish: async () => undefined },
  events: { record: async () => undefined },
  clock: { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) },
  logger: createLogger({ service: 'bench', level: 'warn', stream: { write: () => undefined } }),
  tracer: tracing.tracer,
  instanceId: 'bench',
  signal: ac.signal,
});

const listing = new Map<string, SourcedPod>();
async function send(changes?: ListingChanges): Promise<void> {
  await pc.apply({ source: 'api', pods: [...listing.values()], errors: [], ...(changes !== undefined && !values.full ? { changes } : {}) });
}
function put(pod: BoundPod): ListingChanges {
  const sourced = { pod, origin: `api:default/${pod.metadata.name}` };
  listing.set(pod.metadata.name, sourced);
  return { upserted: [sourced], removed: [] };
}
const pod = (i: number, phase?: PodPhase): BoundPod =>
  aPod({
    metadata: { uid: `uid-${i}`, name: `pod-${i}`, namespace: 'default', labels: { app: 'bench' }, annotations: { note: 'x' } },
    spec: { nodeName: 'bench-node', restartPolicy: 'Always', containers: [aContainer({ name: 'c', image: 'busybox:1.36' })] },
    ...(phase !== undefined ? { status: { phase } } : {}),
  });

await send(); // the first LIST: empty
const t0 = process.cpuUsage();
for (let i = 0; i < PODS; i++) await send(put(pod(i)));
for (const phase of ['Pending', 'Running'] as const) for (let i = 0; i < PODS; i++) await send(put(pod(i, phase)));
const used = process.cpuUsage(t0);
ac.abort();
await tracing.shutdown();
const ms = (used.user + used.system) / 1000;
console.log(`${PODS} pods, ${values.full ? 'full SETs' : 'SETs with changes'}: ${(ms / PODS).toFixed(3)} CPU ms per pod (${(ms / (3 * PODS)).toFixed(4)} per event)`);
