/** State-based fakes of sync-loop's ports, and a harness around SyncLoop. */
import { Registry } from 'prom-client';
import type { Context } from '@opentelemetry/api';
import type {
  BoundPod,
  DesiredPod,
  KillRequest,
  KubeEvent,
  PodOperation,
  PodSource,
  PodStatusUpdate,
  PodUpdate,
  PodUpdateItem,
  RuntimeCacheEntry,
  SyncPodType,
  WorkerRecord,
} from '@splitlet/api';
import { aNode, aPod } from '@splitlet/kube/testing';
import type { AdmissionNode } from '@splitlet/kube';
import { FakeClock } from '@splitlet/service/testing';
import { createLogger } from '@splitlet/telemetry';
import { createTestTracing, type TestTracing } from '@splitlet/telemetry/testing';
import type {
  ClusterViews,
  DesiredStore,
  EventRecorder,
  KillStore,
  KvView,
  AppliedUpdatesStore,
  SourcesSnapshot,
  SourcesStore,
  StatusSink,
  StoredKill,
  VolumeCleaner,
  WorkPoker,
} from '../src/ports.js';
import { createSyncLoopMetrics } from '../src/sync-loop/metrics.js';
import { SyncLoop } from '../src/sync-loop/sync-loop.js';

export class MemoryDesired implements DesiredStore {
  readonly map = new Map<string, DesiredPod>();
  failPut = false;
  async list(): Promise<DesiredPod[]> {
    return [...this.map.values()];
  }
  async put(d: DesiredPod): Promise<void> {
    if (this.failPut) throw new Error('kv unavailable');
    this.map.set(d.pod.metadata.uid, structuredClone(d));
  }
  async delete(uid: string): Promise<void> {
    this.map.delete(uid);
  }
}

export class MemoryKills implements KillStore {
  readonly map = new Map<string, StoredKill>();
  #rev = 0;
  async create(r: KillRequest): Promise<boolean> {
    if (this.map.has(r.uid)) return false;
    this.map.set(r.uid, { value: structuredClone(r), revision: ++this.#rev });
    return true;
  }
  async get(uid: string): Promise<StoredKill | undefined> {
    return this.map.get(uid);
  }
  async update(r: KillRequest, revision: number): Promise<boolean> {
    const cur = this.map.get(r.uid);
    if (cur === undefined || cur.revision !== revision) return false;
    this.map.set(r.uid, { value: structuredClone(r), revision: ++this.#rev });
    return true;
  }
}

export class RecordingPoker implements WorkPoker {
  readonly pokes: Array<{ uid: string; kind: SyncPodType; ctx?: Context }> = [];
  fail = false;
  async poke(uid: string, kind: SyncPodType, ctx?: Context): Promise<void> {
    if (this.fail) throw new Error('nats down');
    this.pokes.push(ctx === undefined ? { uid, kind } : { uid, kind, ctx });
  }
  take(): string[] {
    const out = this.pokes.map((p) => `${p.kind}:${p.uid}`);
    this.pokes.length = 0;
    return out;
  }
}

export class RecordingStatus implements StatusSink {
  readonly updates: PodStatusUpdate[] = [];
  async publish(u: PodStatusUpdate): Promise<void> {
    this.updates.push(u);
  }
}

export class RecordingEvents implements EventRecorder {
  readonly events: KubeEvent[] = [];
  async record(e: KubeEvent): Promise<void> {
    this.events.push(e);
  }
}

export class FakeVolumes implements VolumeCleaner {
  readonly calls: string[][] = [];
  error: Error | undefined;
  async cleanup(keep: readonly string[]): Promise<readonly string[]> {
    this.calls.push([...keep]);
    if (this.error) throw this.error;
    return [];
  }
}

export class MemorySources implements SourcesStore {
  snapshot: SourcesSnapshot | undefined;
  async load(): Promise<SourcesSnapshot | undefined> {
    return this.snapshot;
  }
  async save(s: SourcesSnapshot): Promise<void> {
    this.snapshot = s;
  }
}

export class MemoryApplied implements AppliedUpdatesStore {
  marks: Array<readonly [string, number]> = [];
  fail = false;
  async load(): Promise<Array<readonly [string, number]>> {
    return [...this.marks];
  }
  async save(last: ReadonlyArray<readonly [string, number]>): Promise<void> {
    if (this.fail) throw new Error('kv put failed');
    this.marks = [...last];
  }
}

export class MapView<T> implements KvView<T> {
  readonly map = new Map<string, T>();
  get(uid: string): T | undefined {
    return this.map.get(uid);
  }
  values(): Iterable<T> {
    return this.map.values();
  }
  get size(): number {
    return this.map.size;
  }
}

export interface Harness {
  readonly loop: SyncLoop;
  readonly clock: FakeClock;
  readonly desired: MemoryDesired;
  readonly kills: MemoryKills;
  readonly poker: RecordingPoker;
  readonly status: RecordingStatus;
  readonly events: RecordingEvents;
  readonly volumes: FakeVolumes;
  readonly sources: MemorySources;
  readonly applied: MemoryApplied;
  readonly workers: MapView<WorkerRecord>;
  readonly runtime: MapView<RuntimeCacheEntry>;
  readonly killView: MapView<KillRequest>;
  readonly registry: Registry;
  readonly tracing: TestTracing;
  readonly logs: string[];
  /** Copies the kill store into the kill view (what the sl_kill watch would do). */
  syncKillView(): void;
}

export const START = Date.UTC(2024, 0, 1, 12, 0, 0);

export async function harness(
  opts: { node?: AdmissionNode; sources?: SourcesSnapshot; desired?: DesiredPod[]; applied?: Array<readonly [string, number]> } = {},
): Promise<Harness> {
  const clock = new FakeClock(START);
  const desired = new MemoryDesired();
  for (const d of opts.desired ?? []) desired.map.set(d.pod.metadata.uid, d);
  const kills = new MemoryKills();
  const poker = new RecordingPoker();
  const status = new RecordingStatus();
  const events = new RecordingEvents();
  const volumes = new FakeVolumes();
  const sources = new MemorySources();
  sources.snapshot = opts.sources;
  const applied = new MemoryApplied();
  applied.marks = [...(opts.applied ?? [])];
  const workers = new MapView<WorkerRecord>();
  const runtime = new MapView<RuntimeCacheEntry>();
  const killView = new MapView<KillRequest>();
  const views: ClusterViews = { workers, runtime, kills: killView };
  const registry = new Registry();
  const tracing = createTestTracing({ serviceName: 'sync-loop' });
  const logs: string[] = [];
  const logger = createLogger({ service: 'sync-loop', level: 'debug', stream: { write: (l: string) => logs.push(l) } });
  const loop = new SyncLoop({
    node: 'node-1',
    admissionNode: () => opts.node ?? aNode(),
    desired,
    kills,
    work: poker,
    status,
    events,
    volumes,
    sources,
    applied,
    views,
    clock,
    logger,
    tracer: tracing.tracer,
    metrics: createSyncLoopMetrics(registry),
  });
  await loop.start();
  return {
    loop,
    clock,
    desired,
    kills,
    poker,
    status,
    events,
    volumes,
    sources,
    applied,
    workers,
    runtime,
    killView,
    registry,
    tracing,
    logs,
    syncKillView: () => {
      killView.map.clear();
      for (const [uid, k] of kills.map) killView.map.set(uid, k.value);
    },
  };
}

/** A pod with a UID, name and optional creation time / requests. */
export function pod(uid: string, o: { created?: string; cpu?: string; seen?: string; static?: boolean; grace?: number; deletionGrace?: number } = {}): BoundPod {
  const annotations: Record<string, string> = {};
  if (o.seen !== undefined) annotations['kubernetes.io/config.seen'] = o.seen;
  annotations['kubernetes.io/config.source'] = o.static === true ? 'file' : 'api';
  const metadata: Partial<BoundPod['metadata']> = { uid, name: `pod-${uid}`, annotations };
  if (o.created !== undefined) metadata.creationTimestamp = o.created;
  if (o.deletionGrace !== undefined) {
    metadata.deletionGracePeriodSeconds = o.deletionGrace;
    metadata.deletionTimestamp = '2024-01-01T12:00:00Z';
  }
  const container = { name: 'c', image: 'busybox', ...(o.cpu === undefined ? {} : { resources: { requests: { cpu: o.cpu } } }) };
  return aPod({ metadata, spec: { containers: [container], ...(o.grace === undefined ? {} : { terminationGracePeriodSeconds: o.grace }) } });
}

export function item(p: BoundPod, trace?: Record<string, string>): PodUpdateItem {
  return trace === undefined ? { pod: p } : { pod: p, trace };
}

export function update(op: PodOperation, items: PodUpdateItem[], source: PodSource = 'file', sources: PodSource[] = ['file']): PodUpdate {
  return { type: 'kubelet.config.PodUpdate.v1', op, source, sources, items, sentAt: new Date(START).toISOString() };
}

export function worker(uid: string, o: Partial<WorkerRecord> = {}): WorkerRecord {
  return { type: 'kubelet.podworker.WorkerRecord.v1', uid, name: `pod-${uid}`, namespace: 'default', state: 'sync', finished: false, reasons: {}, ...o };
}

export function runtimeEntry(uid: string, running: boolean): RuntimeCacheEntry {
  return {
    type: 'kubelet.pleg.RuntimeCacheEntry.v1',
    uid,
    timestamp: START,
    status: {
      uid,
      name: `orphan-${uid}`,
      namespace: 'default',
      ips: [],
      sandboxes: [{ id: `s-${uid}`, state: running ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY', createdAt: 1, attempt: 0 }],
      containers: [],
    },
  };
}

/** The value of a counter/gauge series, or undefined. */
export async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const m = await registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => String(x.labels[k]) === val) && Object.keys(x.labels).length === Object.keys(labels).length);
  return v?.value;
}

export { aPod };
