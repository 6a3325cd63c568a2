/**
 * config-source's composition root: PodConfig → sources, on the common process bootstrap. No logic
 * lives here.
 */
import { randomUUID } from 'node:crypto';
import type { PodSource } from '@splitlet/api';
import { ProgressMonitor, realClock, runNodeProcess } from '@splitlet/service';
import { ConfigSchema, processEnv } from './config.js';
import { promConfigMetrics } from './adapters/metrics.js';
import { busEventRecorder, busUpdatePublisher } from './adapters/nats-publisher.js';
import { createKvApiPodStore, serveApiSource } from './adapters/api-rpc.js';
import { ApiSource } from './sources/api-source.js';
import { PodConfig } from './pod-config/pod-config.js';
import { FileSource } from './sources/file-source.js';
import { HttpSource } from './sources/http-source.js';

await runNodeProcess({
  service: 'config-source',
  schema: ConfigSchema,
  env: processEnv(),
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const node = config.NODE_NAME;
    const sources: PodSource[] = [];
    if (config.MANIFEST_DIR !== undefined) sources.push('file');
    if (config.MANIFEST_URL !== undefined) sources.push('http');
    if (config.API_SOURCE) sources.push('bus');
    if (config.KUBECONFIG !== undefined) sources.push('api');
    const metrics = promConfigMetrics(registry);
    const podConfig = new PodConfig({
      nodeName: node,
      sources,
      publisher: busUpdatePublisher(bus, node),
      events: busEventRecorder(bus, node),
      clock: realClock,
      logger,
      tracer: telemetry.tracer,
      metrics,
      instanceId: randomUUID(),
      signal,
    });
    const loops: Promise<void>[] = [];

    if (config.MANIFEST_DIR !== undefined) {
      const periodMs = config.FILE_CHECK_FREQUENCY_MS;
      const progress = new ProgressMonitor({ name: 'file source relist', thresholdMs: 3 * periodMs });
      health.register('file-source', () => progress.healthy());
      const file = new FileSource({
        path: config.MANIFEST_DIR,
        nodeName: node,
        periodMs,
        clock: realClock,
        logger,
        onListing: (l) => podConfig.apply(l),
        onProgress: () => progress.progress(),
      });
      logger.info('watching manifest path', { path: config.MANIFEST_DIR, periodMs });
      loops.push(file.run(signal));
    }
    if (config.MANIFEST_URL !== undefined) {
      const periodMs = config.HTTP_CHECK_FREQUENCY_MS;
      const progress = new ProgressMonitor({ name: 'http source poll', thresholdMs: 3 * periodMs });
      health.register('http-source', () => progress.healthy());
      const http = new HttpSource({
        url: config.MANIFEST_URL,
        ...(config.MANIFEST_URL_HEADER !== undefined ? { header: config.MANIFEST_URL_HEADER } : {}),
        nodeName: node,
        periodMs,
        clock: realClock,
        logger,
        onListing: (l) => podConfig.apply(l),
        onProgress: () => progress.progress(),
        onError: () => metrics.manifestError('http'),
      });
      logger.info('watching manifest URL', { periodMs });
      loops.push(http.run(signal));
    }
    if (config.API_SOURCE) {
      const api = new ApiSource({ nodeName: node, store: await createKvApiPodStore(bus, node), clock: realClock, logger, onListing: (l) => podConfig.apply(l) });
      await api.start();
      serveApiSource(bus, node, api, signal);
      logger.info('serving the api source', { subjects: 'rpc.config.{apply,delete}' });
    }
    if (config.KUBECONFIG !== undefined) {
      // Loaded only with a kubeconfig: a node without an API server starts without its client.
      const { ApiserverSource } = await import('./sources/apiserver-source.js');
      const apiserver = new ApiserverSource({ kubeconfig: config.KUBECONFIG, nodeName: node, logger, onListing: (l) => podConfig.apply(l) });
      logger.info('watching the API server for pods', { kubeconfig: config.KUBECONFIG, fieldSelector: `spec.nodeName=${node}` });
      loops.push(apiserver.run(signal));
    }
    onClose({ name: 'sources', close: async () => void (await Promise.allSettled(loops)) });
  },
});
