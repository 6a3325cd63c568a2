/** Fakes for the prober's unit tests: an in-memory results store, a scripted probe, pods. */
import type { BoundPod, Container, PodProbeResults } from '@splitlet/api';
import type { ProbeResultsStore } from '../src/ports.js';
import type { ProbeRun } from '../src/prober/prober.js';
import type { ContainerView, WorkerProbe } from '../src/prober/worker.js';

export const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** The store as a map, with a log of writes. */
export class MemoryResultsStore implements ProbeResultsStore {
  readonly records = new Map<string, PodProbeResults>();
  writes = 0;
  async list(): Promise<PodProbeResults[]> {
    return [...this.records.values()];
  }
  async put(r: PodProbeResults): Promise<void> {
    this.writes++;
    this.records.set(r.uid, r);
  }
  async delete(uid: string): Promise<void> {
    this.writes++;
    this.records.delete(uid);
  }
}

/** A probe whose runs return the scripted results in turn (the last one repeats). */
export class ScriptedProbe implements WorkerProbe {
  readonly script: ProbeRun[];
  runs = 0;
  readonly changes: { result: string; previous: string | undefined }[] = [];
  readonly observed: string[] = [];
  constructor(...script: ProbeRun[]) {
    this.script = script;
  }
  async run(): Promise<ProbeRun> {
    const r = this.script[Math.min(this.runs, this.script.length - 1)]!;
    this.runs++;
    return r;
  }
  resultChanged(run: ProbeRun, previous: string | undefined): undefined {
    this.changes.push({ result: run.result, previous });
    return undefined;
  }
  observe(run: ProbeRun): void {
    this.observed.push(run.result);
  }
}

export const ok: ProbeRun = { result: 'Success', output: '' };
export const fail: ProbeRun = { result: 'Failure', output: 'nope' };
export const errored: ProbeRun = { result: 'Failure', output: '', error: 'rpc error' };

export function aContainer(extra: Partial<Container> = {}): Container {
  return { name: 'app', image: 'busybox:1.36', ...extra };
}

export function aPod(
  containers: Container[],
  extra: { deletionTimestamp?: string; restartPolicy?: 'Always' | 'Never' | 'OnFailure'; initContainers?: Container[] } = {},
): BoundPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'uid-1', ...(extra.deletionTimestamp !== undefined ? { deletionTimestamp: extra.deletionTimestamp } : {}) },
    spec: {
      containers,
      ...(extra.initContainers !== undefined ? { initContainers: extra.initContainers } : {}),
      ...(extra.restartPolicy !== undefined ? { restartPolicy: extra.restartPolicy } : {}),
    },
  };
}

/** A mutable container view. */
export function running(id: string, startedAt = 0): ContainerView {
  return { id, running: true, terminated: false, startedAt };
}
