/**
 * prober: the composition root. Node-local: exec probes run through the CRI runtime's ExecSync on
 * its socket (directly, not through cri-adapter: one gRPC call per probe run, no bus hop), HTTP, TCP
 * and gRPC probes dial the pod IPs. Workers follow `sl_desired` and `sl_runtime`; results go to
 * `sl_probe`, which sync-loop watches to sync the pod.
 */
import { dialRuntime } from '@splitlet/cri';
import { realClock, runNodeProcess, sleep } from '@splitlet/service';
import { ProberEnv, processEnv } from './config.js';
import { createBusEventSink } from './adapters/bus-event-sink.js';
import { createKvResultsStore } from './adapters/kv-results-store.js';
import { watchDesiredAndRuntime } from './adapters/kv-watches.js';
import { createProberMetrics } from './prober/metrics.js';
import { ProbeManager } from './prober/probe-manager.js';
import { createProber } from './prober/prober.js';
import { ResultsManager } from './prober/results-manager.js';

/** The watches are unhealthy when they saw nothing (not even the relist mark, written every second) for this long. */
const WATCH_STALL_MS = 60_000;
/** How long shutdown waits for the last result and event writes. */
const SHUTDOWN_WRITE_WAIT_MS = 5_000;

await runNodeProcess({
  service: 'prober',
  schema: ProberEnv,
  env: processEnv(),
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const client = await dialRuntime({ endpoint: config.CRI_ENDPOINT, timeoutMs: config.RUNTIME_REQUEST_TIMEOUT_MS, signal }, (attempt, err) =>
      logger.warn('container runtime not reachable yet', { endpoint: config.CRI_ENDPOINT, attempt, err }),
    );
    if (client === undefined) return;
    const cri = client;
    onClose({ name: 'cri-client', close: () => cri.close() });

    const events = createBusEventSink(bus, config.NODE_NAME, realClock, logger);
    const results = new ResultsManager({ store: await createKvResultsStore(bus, config.NODE_NAME), clock: realClock, logger });
    const resumed = await results.load();
    const manager = new ProbeManager({
      // Not instrumented: a span per probe tick would start a root trace per tick.
      prober: createProber({ runtime: cri, events }),
      results,
      metrics: createProberMetrics(registry),
      tracer: telemetry.tracer,
      clock: realClock,
      logger,
    });
    const watches = await watchDesiredAndRuntime(bus, config.NODE_NAME, manager, signal);
    // Closers run in reverse: stop the workers, then let the last results and events out before the bus closes.
    onClose({
      name: 'prober',
      close: async () => {
        await watches.done;
        await manager.stop();
        // Bounded: with NATS gone the writes would retry forever; the next prober resumes from the buckets.
        await Promise.race([Promise.all([results.idle(), events.flush()]), sleep(SHUTDOWN_WRITE_WAIT_MS)]);
      },
    });
    await watches.ready;
    manager.cleanupPods();
    health.register('prober-watches', () => {
      const age = Date.now() - watches.lastActivity();
      return age > WATCH_STALL_MS ? { ok: false, reason: `the desired/runtime watches saw nothing for ${age} ms; threshold is ${WATCH_STALL_MS} ms` } : { ok: true };
    });
    logger.info('prober started', { resumedPods: resumed, workers: manager.workerCount });
  },
});
