/** Fakes for the pleg unit tests: a scripted runtime, an in-memory cache and event sink. */
import { Registry } from 'prom-client';
import type { ContainerRuntimeState, PodLifecycleEvent, RelistMark, RuntimeCacheEntry, RuntimeContainerStatus, RuntimePodStatus, RuntimeSandboxStatus } from '@splitlet/api';
import { createLogger, type Logger } from '@splitlet/telemetry';
import { EventsPartlyPublished, type LifecycleEventSink, type RuntimeCacheSnapshot, type RuntimeCacheStore, type RuntimeLister } from '../src/ports.js';
import { createPlegMetrics, type PlegMetrics } from '../src/pleg/metrics.js';

export function container(id: string, state: ContainerRuntimeState, name = id): RuntimeContainerStatus {
  return {
    id,
    name,
    sandboxId: 's',
    state,
    createdAt: 1,
    image: 'busybox',
    imageRef: 'sha256:1',
    hash: 'h',
    restartCount: 0,
  };
}

export function sandbox(id: string, ready: boolean): RuntimeSandboxStatus {
  return { id, state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY', createdAt: 1, attempt: 0 };
}

export function pod(uid: string, containers: RuntimeContainerStatus[], sandboxes: RuntimeSandboxStatus[] = [], ips: string[] = []): RuntimePodStatus {
  return { uid, name: `pod-${uid}`, namespace: 'default', ips, sandboxes, containers };
}

export class FakeLister implements RuntimeLister {
  pods: RuntimePodStatus[] = [];
  error: Error | undefined;
  calls = 0;
  /** The `uids` of each call (`undefined`: a full relist). */
  scopes: Array<readonly string[] | undefined> = [];
  async relist(uids?: readonly string[]): Promise<readonly RuntimePodStatus[]> {
    this.calls++;
    this.scopes.push(uids);
    if (this.error) throw this.error;
    return structuredClone(uids === undefined ? this.pods : this.pods.filter((p) => uids.includes(p.uid)));
  }
}

export class MemoryCache implements RuntimeCacheStore {
  readonly entries = new Map<string, RuntimeCacheEntry>();
  mark: RelistMark | undefined;
  writes = 0;
  failPutFor = new Set<string>();
  async load(): Promise<RuntimeCacheSnapshot> {
    return { entries: new Map(this.entries), mark: this.mark };
  }
  async put(entry: RuntimeCacheEntry): Promise<number> {
    if (this.failPutFor.has(entry.uid)) throw new Error('kv unavailable');
    this.entries.set(entry.uid, structuredClone(entry));
    return ++this.writes;
  }
  async delete(uid: string): Promise<void> {
    this.writes++;
    this.entries.delete(uid);
  }
  async putMark(mark: RelistMark): Promise<void> {
    this.mark = mark;
  }
}

export class MemorySink implements LifecycleEventSink {
  readonly events: PodLifecycleEvent[] = [];
  fail = false;
  /** With `fail`: the first this many events of a publish go out before it fails (EventsPartlyPublished). */
  failAfter = 0;
  /** The events of each publish: one cache write's of one pod. */
  readonly batches: PodLifecycleEvent[][] = [];
  async publish(events: readonly PodLifecycleEvent[]): Promise<void> {
    if (this.fail && this.failAfter > 0) {
      const sent = events.slice(0, this.failAfter);
      this.batches.push(sent);
      this.events.push(...sent);
      throw new EventsPartlyPublished(sent.length, events.length, new Error('nats down'));
    }
    if (this.fail) throw new Error('nats down');
    this.batches.push([...events]);
    this.events.push(...events);
  }
  /** `uid/event/data` triples, sorted (event order across pods is not defined). */
  take(): string[] {
    const out = this.events.map((e) => `${e.uid}/${e.event}/${e.data}`).sort();
    this.events.length = 0;
    return out;
  }
}

export function silentLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ service: 'test', level: 'debug', stream: { write: (l: string) => lines.push(l) } });
  return Object.assign(logger, { lines });
}

export function testMetrics(): { metrics: PlegMetrics; registry: Registry } {
  const registry = new Registry();
  return { metrics: createPlegMetrics(registry), registry };
}
