/** State-based fakes of volume-manager's ports, for unit tests. */
import { resolve, sep } from 'node:path';
import type { KubeEvent, PodVolumeState } from '@splitlet/api';
import { createLogger, type Logger } from '@splitlet/telemetry';
import type { EventRecorder, Mounter, VolumeMetrics, VolumeStateStore } from '../src/ports.js';

/** A mount table in memory. */
export class FakeMounter implements Mounter {
  readonly mounts = new Map<string, number>();
  failMount: Error | undefined;
  async mountTmpfs(dir: string, sizeBytes: number): Promise<void> {
    if (this.failMount) throw this.failMount;
    this.mounts.set(resolve(dir), sizeBytes);
  }
  async unmount(dir: string): Promise<void> {
    this.mounts.delete(resolve(dir));
  }
  async mountPointsUnder(dir: string): Promise<string[]> {
    const root = resolve(dir);
    return [...this.mounts.keys()].filter((m) => m === root || m.startsWith(root + sep)).sort((a, b) => b.length - a.length);
  }
}

export class MemoryStore implements VolumeStateStore {
  readonly states = new Map<string, PodVolumeState>();
  async put(s: PodVolumeState): Promise<void> {
    this.states.set(s.uid, structuredClone(s));
  }
  async get(uid: string): Promise<PodVolumeState | null> {
    return this.states.get(uid) ?? null;
  }
  async delete(uid: string): Promise<void> {
    this.states.delete(uid);
  }
  async list(): Promise<PodVolumeState[]> {
    return [...this.states.values()];
  }
}

export class EventLog implements EventRecorder {
  readonly events: { event: KubeEvent; key: string }[] = [];
  async record(event: KubeEvent, key: string): Promise<void> {
    this.events.push({ event, key });
  }
}

export class MetricsLog implements VolumeMetrics {
  readonly ops: { op: string; plugin: string; ok: boolean }[] = [];
  totals = new Map<string, number>();
  observeOperation(op: 'volume_mount' | 'volume_unmount', plugin: string, ok: boolean): void {
    this.ops.push({ op, plugin, ok });
  }
  setTotals(byPlugin: ReadonlyMap<string, number>): void {
    this.totals = new Map(byPlugin);
  }
}

/** A logger whose records are kept as parsed objects. */
export function memoryLogger(service = 'test'): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const logger = createLogger({ service, level: 'debug', stream: { write: (l: string) => records.push(JSON.parse(l) as Record<string, unknown>) } });
  return { logger, records };
}
