/**
 * config-source's composition root: config → telemetry → logger → bus → PodConfig → sources →
 * runService. No logic lives here.
 */
import { randomUUID } from 'node:crypto';
import type { PodSource } from '@splitlet/api';
import { connectNodeBus, ProgressMonitor, realClock, runService } from '@splitlet/service';
import { createLogger, createMetricsRegistry, startTelemetry } from '@splitlet/telemetry';
import { processEnv, readConfig } from './config.js';
import { promConfigMetrics } from './adapters/metrics.js';
import { busEventRecorder, busUpdatePublisher } from './adapters/nats-publisher.js';
import { createKvApiPodStore, serveApiSource } from './adapters/api-rpc.js';
import { ApiSource } from './sources/api-source.js';
import { PodConfig } from './pod-config/pod-config.js';
import { FileSource } from './sources/file-source.js';
import { HttpSource } from './sources/http-source.js';

const NAME = 'config-source';

const config = readConfig();
const logger = createLogger({ service: NAME, level: config.logLevel, fields: { node: config.nodeName } });
const telemetry = startTelemetry({
  serviceName: NAME,
  nodeName: config.nodeName,
  env: processEnv(),
  onError: (e) => logger.warn('telemetry error', { err: e }),
});
const registry = createMetricsRegistry({ service: NAME });

await runService({
  name: NAME,
  logger,
  port: config.healthPort,
  host: config.healthHost,
  registry,
  ...(config.healthPortFile !== undefined ? { portFile: config.healthPortFile } : {}),
  start: async ({ signal, health, onClose }) => {
    const bus = await connectNodeBus({ service: NAME, settings: { NATS_URL: config.natsUrl, NODE_NAME: config.nodeName, PUBLISH_SPANS: config.publishSpans }, logger, registry, telemetry, signal, onClose });

    const sources: PodSource[] = [];
    if (config.manifestDir !== undefined) sources.push('file');
    if (config.manifestUrl !== undefined) sources.push('http');
    if (config.apiSource) sources.push('api');
    const metrics = promConfigMetrics(registry);
    const podConfig = new PodConfig({
      nodeName: config.nodeName,
      sources,
      publisher: busUpdatePublisher(bus, config.nodeName),
      events: busEventRecorder(bus, config.nodeName),
      clock: realClock,
      logger,
      tracer: telemetry.tracer,
      metrics,
      instanceId: randomUUID(),
      signal,
    });
    const loops: Promise<void>[] = [];

    if (config.manifestDir !== undefined) {
      const progress = new ProgressMonitor({ name: 'file source relist', thresholdMs: 3 * config.fileCheckFrequencyMs });
      health.register('file-source', () => progress.healthy());
      const file = new FileSource({
        path: config.manifestDir,
        nodeName: config.nodeName,
        periodMs: config.fileCheckFrequencyMs,
        clock: realClock,
        logger,
        onListing: (l) => podConfig.apply(l),
        onProgress: () => progress.progress(),
      });
      logger.info('watching manifest path', { path: config.manifestDir, periodMs: config.fileCheckFrequencyMs });
      loops.push(file.run(signal));
    }
    if (config.manifestUrl !== undefined) {
      const progress = new ProgressMonitor({ name: 'http source poll', thresholdMs: 3 * config.httpCheckFrequencyMs });
      health.register('http-source', () => progress.healthy());
      const http = new HttpSource({
        url: config.manifestUrl,
        ...(config.manifestUrlHeader !== undefined ? { header: config.manifestUrlHeader } : {}),
        nodeName: config.nodeName,
        periodMs: config.httpCheckFrequencyMs,
        clock: realClock,
        logger,
        onListing: (l) => podConfig.apply(l),
        onProgress: () => progress.progress(),
        onError: () => metrics.manifestError('http'),
      });
      logger.info('watching manifest URL', { periodMs: config.httpCheckFrequencyMs });
      loops.push(http.run(signal));
    }
    if (config.apiSource) {
      const api = new ApiSource({ nodeName: config.nodeName, store: await createKvApiPodStore(bus, config.nodeName), clock: realClock, logger, onListing: (l) => podConfig.apply(l) });
      await api.start();
      serveApiSource(bus, config.nodeName, api, signal);
      logger.info('serving the api source', { subjects: 'rpc.config.{apply,delete}' });
    }
    onClose({ name: 'sources', close: async () => void (await Promise.allSettled(loops)) });
  },
});
