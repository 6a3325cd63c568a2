/**
 * One probe worker: probes one container of one pod with one probe type, every `periodSeconds`,
 * until stopped, and turns runs into results with the thresholds.
 *
 *   start ──(jitter: a random part of the period, only while the prober started < 1 period ago)──┐
 *     ┌───────────────────────────────────────────────────────────────────────────────────────┘
 *     └─▶ doProbe ──keep going──▶ wait periodSeconds ──▶ doProbe …   (stop() or keepGoing=false ends it)
 *
 * doProbe, in order: no status → wait; a new container id → forget the old id's result, set the
 * initial value (readiness Failure, liveness Success, startup Unknown) unless a restarted prober
 * already holds one for the id, and resume; on hold → wait; created, not started → wait; exited →
 * Failure (stop when it will not be restarted); deletion requested → liveness/startup Success and stop; within
 * initialDelaySeconds of the start → wait; startup probes stop once started, the others wait until
 * started; then one probe run (an error throws the run away), counted against the thresholds;
 * once past them the result is set, and a liveness Failure or any startup result puts the worker on
 * hold until the container is replaced.
 *
 * Models pkg/kubelet/prober/worker.go (newWorker, run, doProbe).
 */
import type { BoundPod, Container, Probe, ProbeResultValue, TraceCarrier } from '@splitlet/api';
import type { Clock, TimerHandle } from '../ports.js';
import type { ResultsManager } from './results-manager.js';
import type { ProbeRun } from './prober.js';
import { probeSpecOf, type ProbeType } from './probe-type.js';

/** A container as the worker sees it in the runtime. */
export interface ContainerView {
  readonly id: string;
  readonly running: boolean;
  readonly terminated: boolean;
  /** Created and not started yet (a state the kubelet's status never shows: it creates and starts in one step). */
  readonly created?: boolean;
  /** ms since the epoch. */
  readonly startedAt?: number;
}

/** What a worker reads on each run (the prober manager's current view of the pod). */
export interface WorkerView {
  /** The latest desired pod; undefined once it is gone. */
  pod(): BoundPod | undefined;
  /** The container's latest instance, or undefined when the runtime has none. */
  container(): ContainerView | undefined;
  /** Whether the container counts as started (its startup probe succeeded, or it has none). */
  started(containerId: string): boolean;
}

/** Runs one probe (the prober), with the span that records a result change. */
export interface WorkerProbe {
  run(containerId: string, signal: AbortSignal): Promise<ProbeRun>;
  /** Called when the run changed the stored result; returns the trace carrier of the span recording it. */
  resultChanged(run: ProbeRun, previous: ProbeResultValue | undefined, startedAtMs: number): TraceCarrier | undefined;
  /** Counts the run (prober_probe_total, prober_probe_duration_seconds). */
  observe(run: ProbeRun, seconds: number): void;
}

/** Options of {@link ProbeWorker}. */
export interface ProbeWorkerOptions {
  readonly type: ProbeType;
  readonly uid: string;
  readonly container: Container;
  readonly view: WorkerView;
  readonly results: ResultsManager;
  readonly probe: WorkerProbe;
  readonly clock: Clock;
  /** When the prober started (ms): the first run is jittered only within one period of it. */
  readonly managerStartedAt: number;
  /** @default Math.random */
  readonly random?: () => number;
  /** Called once when the worker ends (stopped or finished). */
  readonly onEnd?: () => void;
}

const INITIAL: Record<ProbeType, ProbeResultValue> = { readiness: 'Failure', liveness: 'Success', startup: 'Unknown' };

/** A probe worker. `start()` it; `stop()` ends it (idempotent). */
export class ProbeWorker {
  readonly type: ProbeType;
  readonly spec: Probe;
  readonly #o: ProbeWorkerOptions;
  #containerId = '';
  #lastResult: ProbeResultValue | undefined;
  #resultRun = 0;
  #onHold = false;
  #timer: TimerHandle | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;
  readonly #abort = new AbortController();

  constructor(options: ProbeWorkerOptions) {
    const spec = probeSpecOf(options.container, options.type);
    if (spec === undefined) throw new Error(`container ${options.container.name} has no ${options.type} probe`);
    this.type = options.type;
    this.spec = spec;
    this.#o = options;
  }

  /** The container id the worker last saw. */
  get containerId(): string {
    return this.#containerId;
  }

  /** Whether the worker waits for a new container. */
  get onHold(): boolean {
    return this.#onHold;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Schedules the first run (jittered when the prober started less than one period ago). */
  start(): void {
    const period = this.#periodMs();
    const sinceStart = this.#o.clock.now() - this.#o.managerStartedAt;
    const delay = period > sinceStart ? Math.floor((this.#o.random ?? Math.random)() * period) : 0;
    this.#schedule(delay);
  }

  /** Stops probing and forgets the worker's result. A run in progress is aborted. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#end();
  }

  /** Resolves once no run is in progress. */
  async idle(): Promise<void> {
    await this.#running;
  }

  #periodMs(): number {
    return Math.max(1, this.spec.periodSeconds ?? 10) * 1000;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#tick();
    }, ms);
  }

  async #tick(): Promise<void> {
    const began = this.#o.clock.now();
    let keepGoing: boolean;
    try {
      keepGoing = await this.doProbe();
    } catch {
      keepGoing = true; // HandleCrash: a panicking probe keeps the worker going
    }
    if (this.#stopped) return;
    if (!keepGoing) {
      this.#stopped = true;
      this.#end();
      return;
    }
    // A ticker: the next run is one period after this one began (a slow run delays it no further).
    this.#schedule(Math.max(0, this.#periodMs() - (this.#o.clock.now() - began)));
  }

  #end(): void {
    if (this.#containerId !== '') this.#o.results.remove(this.#o.uid, this.type, this.#containerId);
    this.#o.onEnd?.();
  }

  /** One run of the state machine; returns whether the worker should continue. */
  async doProbe(): Promise<boolean> {
    const o = this.#o;
    const started = o.clock.now();
    const pod = o.view.pod();
    if (pod === undefined) return true;
    const c = o.view.container();
    if (c === undefined || c.id === '') return true;

    if (this.#containerId !== c.id) {
      if (this.#containerId !== '') o.results.remove(o.uid, this.type, this.#containerId);
      this.#containerId = c.id;
      const held = o.results.get(o.uid, this.type, c.id);
      this.#lastResult = undefined;
      this.#resultRun = 0;
      if (held === undefined) {
        o.results.set(o.uid, this.type, c.id, INITIAL[this.type]);
        this.#onHold = false;
      } else {
        // A restarted prober resumes the stored result; a settled liveness failure or startup result stays on hold.
        this.#onHold = (this.type === 'liveness' && held === 'Failure') || (this.type === 'startup' && held !== 'Unknown');
      }
    }
    if (this.#onHold) return true;

    if (!c.running) {
      // Not started yet: wait. Marking it Failure would have the next sync kill it the moment it runs.
      if (c.created === true) return true;
      o.results.set(o.uid, this.type, c.id, 'Failure');
      return !c.terminated || pod.spec.restartPolicy !== 'Never';
    }

    if (pod.metadata.deletionTimestamp != null && (this.type === 'liveness' || this.type === 'startup')) {
      o.results.set(o.uid, this.type, c.id, 'Success');
      return false;
    }

    if (c.startedAt !== undefined && Math.floor((o.clock.now() - c.startedAt) / 1000) < (this.spec.initialDelaySeconds ?? 0)) return true;

    if (o.view.started(c.id)) {
      if (this.type === 'startup') return true;
    } else if (this.type !== 'startup') {
      return true;
    }

    const run = await o.probe.run(c.id, this.#abort.signal);
    if (this.#stopped) return false;
    if (run.error !== undefined) return true; // a probe error: the result is thrown away
    o.probe.observe(run, (o.clock.now() - started) / 1000);

    if (this.#lastResult === run.result) this.#resultRun++;
    else {
      this.#lastResult = run.result;
      this.#resultRun = 1;
    }
    if ((run.result === 'Failure' && this.#resultRun < (this.spec.failureThreshold ?? 3)) || (run.result === 'Success' && this.#resultRun < (this.spec.successThreshold ?? 1))) {
      return true;
    }
    const previous = o.results.get(o.uid, this.type, c.id);
    const trace = previous !== run.result ? o.probe.resultChanged(run, previous, started) : undefined;
    o.results.set(o.uid, this.type, c.id, run.result, trace);
    if ((this.type === 'liveness' && run.result === 'Failure') || this.type === 'startup') {
      this.#onHold = true;
      this.#resultRun = 0;
    }
    return true;
  }
}
