/**
 * pleg: the composition root. Relists the runtime (through cri-adapter) every period and on pokes,
 * publishes PodLifecycleEvents and keeps the runtime pod cache in `sl_runtime`.
 */
import type { Context } from '@opentelemetry/api';
import { realClock, runNodeProcess } from '@splitlet/service';
import { PlegEnv, processEnv } from './config.js';
import { createBusEventSink } from './adapters/bus-event-sink.js';
import { createKvDesiredReader } from './adapters/kv-desired-reader.js';
import { createBusRuntimeLister } from './adapters/bus-runtime-lister.js';
import { createKvRuntimeCache, openRuntimeKv } from './adapters/kv-runtime-cache.js';
import { subscribeRelistPokes } from './adapters/relist-pokes.js';
import { GenericPleg } from './pleg/generic-pleg.js';
import { createPlegMetrics } from './pleg/metrics.js';
import { RelistLoop } from './pleg/relist-loop.js';

await runNodeProcess({
  service: 'pleg',
  schema: PlegEnv,
  env: processEnv(),
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const pleg = new GenericPleg({
      lister: createBusRuntimeLister(bus, config.NODE_NAME, config.RUNTIME_REQUEST_TIMEOUT_MS),
      cache: createKvRuntimeCache(await openRuntimeKv(bus), config.NODE_NAME),
      events: createBusEventSink(bus, config.NODE_NAME),
      clock: realClock,
      logger,
      metrics: createPlegMetrics(registry),
      relistThresholdMs: config.RELIST_THRESHOLD_MS,
      tracer: telemetry.tracer,
      desired: await createKvDesiredReader(bus, config.NODE_NAME, config.PARTITIONS),
    });
    await pleg.loadCache();
    health.register('pleg', () => pleg.healthy());

    const loop = new RelistLoop<Context>({
      relist: (pokes, uids) => pleg.relist(pokes, uids),
      onError: (e) => logger.error('relist threw', { err: e }),
      periodMs: config.RELIST_PERIOD_MS,
      clock: realClock,
      signal,
    });
    subscribeRelistPokes(bus, config.NODE_NAME, (trigger, uid) => loop.poke(trigger, uid), signal, logger);
    loop.start();
    // Closers run after the signal aborted: let the relist in progress finish before the bus closes.
    onClose({ name: 'relist-loop', close: () => loop.idle() });
    logger.info('pleg started', { relistPeriodMs: config.RELIST_PERIOD_MS, relistThresholdMs: config.RELIST_THRESHOLD_MS });
  },
});
