/**
 * pleg: the composition root. Relists the runtime (through cri-adapter) every period and on pokes,
 * applies the runtime's container events cri-adapter reports (the evented PLEG: then the period is
 * long), publishes PodLifecycleEvents and keeps the runtime pod cache in `sl_runtime`.
 */
import type { Context } from '@opentelemetry/api';
import { realClock, runNodeProcess } from '@splitlet/service';
import { PlegEnv, processEnv } from './config.js';
import { createBusEventSink } from './adapters/bus-event-sink.js';
import { createKvDesiredReader } from './adapters/kv-desired-reader.js';
import { createBusRuntimeLister } from './adapters/bus-runtime-lister.js';
import { createKvRuntimeCache, openRuntimeKv } from './adapters/kv-runtime-cache.js';
import { subscribeRelistPokes } from './adapters/relist-pokes.js';
import { subscribeRuntimeEvents } from './adapters/runtime-events.js';
import { EventedPleg } from './pleg/evented-pleg.js';
import { GenericPleg } from './pleg/generic-pleg.js';
import { createPlegMetrics } from './pleg/metrics.js';
import { RelistLoop } from './pleg/relist-loop.js';

await runNodeProcess({
  service: 'pleg',
  schema: PlegEnv,
  env: processEnv(),
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const metrics = createPlegMetrics(registry);
    const pleg = new GenericPleg({
      lister: createBusRuntimeLister(bus, config.NODE_NAME, config.RUNTIME_REQUEST_TIMEOUT_MS),
      cache: createKvRuntimeCache(await openRuntimeKv(bus), config.NODE_NAME),
      events: createBusEventSink(bus, config.NODE_NAME),
      clock: realClock,
      logger,
      metrics,
      relistThresholdMs: config.RELIST_THRESHOLD_MS,
      tracer: telemetry.tracer,
      desired: await createKvDesiredReader(bus, config.NODE_NAME, config.PARTITIONS),
    });
    await pleg.loadCache();

    const loop = new RelistLoop<Context>({
      relist: (pokes, uids) => evented.relist(pokes, uids),
      onError: (e) => logger.error('relist threw', { err: e }),
      periodMs: config.RELIST_PERIOD_MS,
      clock: realClock,
      signal,
    });
    // The runtime's events, when cri-adapter streams them: the long relist period while they flow.
    const evented = new EventedPleg({
      pleg,
      loop: { setPeriod: (ms) => loop.setPeriod(ms), poke: (uid) => loop.poke(undefined, uid) },
      clock: realClock,
      logger,
      metrics,
      relistPeriodMs: config.RELIST_PERIOD_MS,
      relistThresholdMs: config.RELIST_THRESHOLD_MS,
      eventedRelistPeriodMs: config.EVENTED_RELIST_PERIOD_MS,
      eventedRelistThresholdMs: config.EVENTED_RELIST_THRESHOLD_MS,
      streamTimeoutMs: config.EVENT_STREAM_TIMEOUT_MS,
      signal,
    });
    health.register('pleg', () => evented.healthy());
    subscribeRelistPokes(bus, config.NODE_NAME, (trigger, uid) => loop.poke(trigger, uid), signal, logger);
    subscribeRuntimeEvents(bus, config.NODE_NAME, (msg, trigger) => evented.receive(msg, trigger), signal, logger);
    loop.start();
    // Closers run after the signal aborted: let the relist and the events in progress finish before the bus closes.
    onClose({
      name: 'relist-loop',
      close: async () => {
        await loop.idle();
        await evented.idle();
      },
    });
    logger.info('pleg started', {
      relistPeriodMs: config.RELIST_PERIOD_MS,
      relistThresholdMs: config.RELIST_THRESHOLD_MS,
      eventedRelistPeriodMs: config.EVENTED_RELIST_PERIOD_MS,
      eventedRelistThresholdMs: config.EVENTED_RELIST_THRESHOLD_MS,
    });
  },
});
