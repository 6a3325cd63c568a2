/**
 * The prober manager: one worker per (pod, container, probe type) for the node's desired pods,
 * started when the pod appears and stopped when it goes; each worker reads the pod's latest desired
 * spec and the runtime cache's view of its container. Results go to the {@link ResultsManager}.
 *
 * Workers exist for regular containers and for sidecar init containers (`restartPolicy: Always`),
 * as the kubelet's AddPod does; a changed probe spec replaces the worker. A restarted prober
 * rebuilds everything from the desired pods and the runtime cache, resuming the stored results.
 *
 * Models pkg/kubelet/prober/prober_manager.go (AddPod, RemovePod, CleanupPods, isContainerStarted).
 */
import { SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { BoundPod, Container, DesiredPod, ProbeResultValue, RuntimeCacheEntry, RuntimePodStatus } from '@splitlet/api';
import { containerStatusFor, sandboxesNewestFirst } from '@splitlet/kube';
import { extractContext, injectContext } from '@splitlet/telemetry';
import type { Clock, Log } from '../ports.js';
import type { ProberMetrics, WorkerLabels } from './metrics.js';
import type { Prober, ProbeRun } from './prober.js';
import { PROBE_TYPES, ProbeTypeNames, probeSpecOf, type ProbeType } from './probe-type.js';
import type { ResultsManager } from './results-manager.js';
import { ProbeWorker, type ContainerView } from './worker.js';

/** Options of {@link ProbeManager}. */
export interface ProbeManagerOptions {
  readonly prober: Prober;
  readonly results: ResultsManager;
  readonly metrics: ProberMetrics;
  readonly tracer: Tracer;
  readonly clock: Clock;
  readonly logger: Log;
  /** @default Math.random */
  readonly random?: () => number;
}

interface PodEntry {
  desired: DesiredPod | undefined;
  runtime: RuntimeCacheEntry | undefined;
  readonly workers: Map<string, { worker: ProbeWorker; specJson: string }>;
}

/** The containers that get probe workers: regular ones and sidecar init containers. */
function probedContainers(pod: BoundPod): { container: Container; init: boolean }[] {
  return [
    ...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').map((container) => ({ container, init: true })),
    ...pod.spec.containers.map((container) => ({ container, init: false })),
  ];
}

/** The pod's IP as status.podIP shows it: the runtime's, else the latest ready sandbox's. */
function podIP(rs: RuntimePodStatus | undefined): string {
  if (rs === undefined) return '';
  if (rs.ips[0] !== undefined) return rs.ips[0];
  const sb = sandboxesNewestFirst(rs)[0];
  return sb?.state === 'SANDBOX_READY' ? (sb.ip ?? '') : '';
}

/** The prober manager. Feed it desired pods and runtime entries; `stop()` ends every worker. */
export class ProbeManager {
  readonly #o: ProbeManagerOptions;
  readonly #pods = new Map<string, PodEntry>();
  readonly #startedAt: number;
  #stopped = false;

  constructor(options: ProbeManagerOptions) {
    this.#o = options;
    this.#startedAt = options.clock.now();
  }

  /** Number of running workers. */
  get workerCount(): number {
    let n = 0;
    for (const p of this.#pods.values()) n += p.workers.size;
    return n;
  }

  /** The running workers of a pod, as `<container>/<type>` keys (for tests and logs). */
  workersOf(uid: string): string[] {
    return [...(this.#pods.get(uid)?.workers.keys() ?? [])].sort();
  }

  /** A desired pod was put (AddPod / an update). A rejected pod gets no workers. */
  updatePod(desired: DesiredPod): void {
    if (this.#stopped) return;
    const uid = desired.pod.metadata.uid;
    if (desired.rejected !== undefined) {
      this.removePod(uid);
      return;
    }
    const entry = this.#entry(uid);
    entry.desired = desired;
    const wanted = new Map<string, { container: Container; init: boolean; type: ProbeType; specJson: string }>();
    for (const { container, init } of probedContainers(desired.pod)) {
      for (const type of PROBE_TYPES) {
        const spec = probeSpecOf(container, type);
        if (spec !== undefined) wanted.set(`${container.name}/${type}`, { container, init, type, specJson: JSON.stringify(spec) });
      }
    }
    for (const [key, w] of entry.workers) {
      if (wanted.get(key)?.specJson !== w.specJson) {
        entry.workers.delete(key);
        w.worker.stop();
      }
    }
    for (const [key, want] of wanted) {
      if (!entry.workers.has(key)) this.#startWorker(uid, entry, key, want);
    }
  }

  /** The pod is no longer desired (RemovePod): its workers stop and its results are deleted. */
  removePod(uid: string): void {
    const entry = this.#pods.get(uid);
    if (entry !== undefined) {
      entry.desired = undefined;
      for (const w of entry.workers.values()) w.worker.stop();
      entry.workers.clear();
      if (entry.runtime === undefined) this.#pods.delete(uid);
    }
    this.#o.results.removePod(uid);
  }

  /** The runtime cache's entry of a pod changed (undefined: removed). */
  updateRuntime(uid: string, entry: RuntimeCacheEntry | undefined): void {
    if (entry === undefined) {
      const p = this.#pods.get(uid);
      if (p === undefined) return;
      p.runtime = undefined;
      if (p.desired === undefined) this.#pods.delete(uid);
      return;
    }
    this.#entry(uid).runtime = entry;
  }

  /** CleanupPods: deletes the results of pods that are not desired (after the initial replay). */
  cleanupPods(): void {
    for (const uid of this.#o.results.uids()) {
      if (this.#pods.get(uid)?.desired === undefined) this.#o.results.removePod(uid);
    }
  }

  /** Stops every worker (shutdown: the stored results stay for the next prober). */
  async stop(): Promise<void> {
    this.#stopped = true;
    const all = [...this.#pods.values()].flatMap((p) => [...p.workers.values()].map((w) => w.worker));
    for (const p of this.#pods.values()) p.workers.clear();
    await Promise.all(all.map((w) => w.idle()));
  }

  #entry(uid: string): PodEntry {
    let e = this.#pods.get(uid);
    if (e === undefined) {
      e = { desired: undefined, runtime: undefined, workers: new Map() };
      this.#pods.set(uid, e);
    }
    return e;
  }

  #startWorker(uid: string, entry: PodEntry, key: string, want: { container: Container; init: boolean; type: ProbeType; specJson: string }): void {
    const o = this.#o;
    const { container, init, type } = want;
    const pod = (): BoundPod | undefined => entry.desired?.pod;
    const first = entry.desired!.pod;
    const labels: WorkerLabels = {
      probe_type: ProbeTypeNames[type],
      container: container.name,
      pod: first.metadata.name,
      namespace: first.metadata.namespace,
      pod_uid: uid,
    };
    const worker: ProbeWorker = new ProbeWorker({
      type,
      uid,
      container,
      results: o.results,
      clock: o.clock,
      managerStartedAt: this.#startedAt,
      ...(o.random !== undefined ? { random: o.random } : {}),
      view: {
        pod,
        container: (): ContainerView | undefined => {
          const rs = entry.runtime?.status;
          const c = rs === undefined ? undefined : containerStatusFor(container.name, rs);
          if (c === undefined) return undefined;
          return {
            id: c.id,
            running: c.state === 'CONTAINER_RUNNING',
            terminated: c.state === 'CONTAINER_EXITED',
            created: c.state === 'CONTAINER_CREATED',
            ...(c.startedAt !== undefined ? { startedAt: c.startedAt } : {}),
          };
        },
        started: (id) => container.startupProbe === undefined || o.results.get(uid, 'startup', id) === 'Success',
      },
      probe: {
        run: (containerId, signal) => {
          const p = pod() ?? first;
          return o.prober.probe(type, { pod: p, container, init, containerId, podIP: podIP(entry.runtime?.status) }, signal);
        },
        observe: (run, seconds) => o.metrics.observe(labels, run.result, seconds),
        resultChanged: (run, previous, startedAtMs) => this.#resultSpan(entry, uid, container.name, type, run, previous, startedAtMs),
      },
      onEnd: () => {
        o.metrics.forget(labels);
        if (entry.workers.get(key)?.worker === worker) entry.workers.delete(key);
      },
    });
    entry.workers.set(key, { worker, specJson: want.specJson });
    worker.start();
  }

  /**
   * A span for a result change, in the pod's current trace episode (the runtime's latest episode,
   * else the latest update's trace, else the creation trace): one span per change, none per tick.
   * Returns its carrier, which the results record passes on to the sync it causes.
   */
  #resultSpan(entry: PodEntry, uid: string, container: string, type: ProbeType, run: ProbeRun, previous: ProbeResultValue | undefined, startedAtMs: number) {
    const pod = entry.desired?.pod;
    const carrier = entry.runtime?.episode?.trace ?? entry.desired?.trace ?? entry.desired?.creationTrace;
    const span = this.#o.tracer.startSpan(
      `probe ${ProbeTypeNames[type]}`,
      {
        startTime: startedAtMs,
        attributes: {
          'k8s.pod.uid': uid,
          'k8s.pod.name': pod?.metadata.name ?? '',
          'k8s.namespace.name': pod?.metadata.namespace ?? '',
          'k8s.container.name': container,
          'splitlet.probe.type': ProbeTypeNames[type],
          'splitlet.probe.result': run.result,
          'splitlet.probe.previous_result': previous ?? 'none',
        },
      },
      extractContext(carrier),
    );
    if (run.result === 'Failure') span.setStatus({ code: SpanStatusCode.ERROR, message: `${ProbeTypeNames[type]} probe failed: ${run.output}`.slice(0, 1024) });
    span.end();
    const out = injectContext(trace.setSpan(extractContext(undefined), span));
    return Object.keys(out).length > 0 ? out : undefined;
  }
}
