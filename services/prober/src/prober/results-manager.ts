/**
 * The liveness, readiness and startup results of every pod, keyed by container id, written through
 * to `sl_probe` — one record per pod, written whenever a result of the pod changed (writes of one
 * pod are serialized and coalesced: the latest state wins).
 *
 * Models pkg/kubelet/prober/results/results_manager.go (Get, Set → updates on change only,
 * Remove) for the three managers at once; the Updates channel is the KV write that sync-loop
 * watches.
 */
import type { PodProbeResults, ProbeResultValue, TraceCarrier } from '@splitlet/api';
import type { Clock, Log, ProbeResultsStore } from '../ports.js';
import type { ProbeType } from './probe-type.js';

type PodResults = Record<ProbeType, Map<string, ProbeResultValue>>;

function emptyPod(): PodResults {
  return { liveness: new Map(), readiness: new Map(), startup: new Map() };
}

/** Options of {@link ResultsManager}. */
export interface ResultsManagerOptions {
  readonly store: ProbeResultsStore;
  readonly clock: Clock;
  readonly logger: Log;
  /** Delay before retrying a failed write. @default 1000 */
  readonly retryMs?: number;
}

/** The results managers of the node. Safe to call from any worker; writes happen in the background. */
export class ResultsManager {
  readonly #o: ResultsManagerOptions;
  readonly #pods = new Map<string, PodResults>();
  /** Per pod: the write in flight, whether another is due after it, and the trace for it. */
  readonly #writes = new Map<string, { running: Promise<void>; again: boolean; trace?: TraceCarrier }>();

  constructor(options: ResultsManagerOptions) {
    this.#o = options;
  }

  /** Seeds the results from the stored records (a restarted prober resumes from them). */
  async load(): Promise<number> {
    const records = await this.#o.store.list();
    for (const r of records) {
      const p = emptyPod();
      for (const type of ['liveness', 'readiness', 'startup'] as const) {
        for (const [id, v] of Object.entries(r[type] ?? {})) p[type].set(id, v);
      }
      this.#pods.set(r.uid, p);
    }
    return records.length;
  }

  /** The result for a container, or undefined (never set, or removed). */
  get(uid: string, type: ProbeType, containerId: string): ProbeResultValue | undefined {
    return this.#pods.get(uid)?.[type].get(containerId);
  }

  /** Pods that have stored results. */
  uids(): string[] {
    return [...this.#pods.keys()];
  }

  /** Sets a result; returns true when it changed (then the pod's record is written). `trace`: the span that caused it. */
  set(uid: string, type: ProbeType, containerId: string, result: ProbeResultValue, trace?: TraceCarrier): boolean {
    let p = this.#pods.get(uid);
    if (p === undefined) {
      p = emptyPod();
      this.#pods.set(uid, p);
    }
    if (p[type].get(containerId) === result) return false;
    p[type].set(containerId, result);
    this.#flush(uid, trace);
    return true;
  }

  /** Forgets one container's result (a worker moved on to a new container or stopped). */
  remove(uid: string, type: ProbeType, containerId: string): void {
    const p = this.#pods.get(uid);
    if (p === undefined || !p[type].delete(containerId)) return;
    this.#flush(uid);
  }

  /** Forgets a pod (it is no longer desired): its record is deleted. */
  removePod(uid: string): void {
    if (!this.#pods.delete(uid)) return;
    this.#flush(uid);
  }

  /** Resolves once every pending write finished. */
  async idle(): Promise<void> {
    while (this.#writes.size > 0) await Promise.all([...this.#writes.values()].map((w) => w.running));
  }

  #record(uid: string, p: PodResults, trace: TraceCarrier | undefined): PodProbeResults {
    const obj = (m: Map<string, ProbeResultValue>): Record<string, ProbeResultValue> => Object.fromEntries(m);
    return {
      type: 'kubelet.prober.PodProbeResults.v1',
      uid,
      liveness: obj(p.liveness),
      readiness: obj(p.readiness),
      startup: obj(p.startup),
      updatedAt: new Date(this.#o.clock.now()).toISOString(),
      ...(trace !== undefined ? { trace } : {}),
    };
  }

  #flush(uid: string, trace?: TraceCarrier): void {
    const pending = this.#writes.get(uid);
    if (pending !== undefined) {
      pending.again = true;
      if (trace !== undefined) pending.trace = trace;
      return;
    }
    const state: { running: Promise<void>; again: boolean; trace?: TraceCarrier } = { running: Promise.resolve(), again: false };
    if (trace !== undefined) state.trace = trace;
    state.running = (async () => {
      for (;;) {
        state.again = false;
        const carrier = state.trace;
        delete state.trace;
        const p = this.#pods.get(uid);
        try {
          if (p === undefined) await this.#o.store.delete(uid);
          else await this.#o.store.put(this.#record(uid, p, carrier));
        } catch (e) {
          this.#o.logger.warn('could not write probe results; retrying', { podUID: uid, err: e instanceof Error ? e.message : String(e) });
          await new Promise<void>((r) => this.#o.clock.setTimeout(r, this.#o.retryMs ?? 1000));
          state.again = true;
          if (carrier !== undefined) state.trace ??= carrier;
        }
        if (!state.again) break;
      }
      this.#writes.delete(uid);
    })();
    this.#writes.set(uid, state);
  }
}
