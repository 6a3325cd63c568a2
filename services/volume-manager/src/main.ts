/**
 * volume-manager's composition root: domain → adapters (and the node's capacity publisher), on the
 * common process bootstrap. No logic lives here.
 */
import { openNodeObjects } from '@splitlet/kube-client';
import { realClock, runNodeProcess } from '@splitlet/service';
import { apiObjectReader } from './adapters/api-objects.js';
import { configSchema, processEnv } from './config.js';
import { busEventRecorder } from './adapters/event-publisher.js';
import { execMounter } from './adapters/exec-mounter.js';
import { hostNodeProbe } from './adapters/host-node-probe.js';
import { observeHostPressure } from './adapters/host-pressure-probe.js';
import { kvNodeCapacityStore } from './adapters/kv-node-capacity-store.js';
import { kvVolumeStore } from './adapters/kv-volume-store.js';
import { promVolumeMetrics } from './adapters/metrics.js';
import { serveVolumeRpc } from './adapters/rpc-handlers.js';
import { NodeCapacityPublisher } from './node/node-capacity-publisher.js';
import { podPaths } from './volumes/pod-dirs.js';
import { VolumeManager } from './volumes/volume-manager.js';

/** An operation running longer than this (a hung mount) makes the process unhealthy. */
const STUCK_OPERATION_MS = 120_000;

await runNodeProcess({
  service: 'volume-manager',
  schema: configSchema(),
  env: processEnv(),
  start: async ({ config, bus, telemetry, registry, logger, signal, health, onClose }) => {
    const node = config.NODE_NAME;
    // Cluster mode: configMaps and secrets are read here on the node, from the API server.
    const objects = config.KUBECONFIG === undefined ? undefined : openNodeObjects(config.KUBECONFIG, { logger });
    if (objects !== undefined) onClose({ name: 'api-objects', close: () => objects.close() });
    const vm = new VolumeManager({
      nodeName: node,
      paths: podPaths(config.ROOT_DIR),
      mounter: execMounter(),
      store: await kvVolumeStore(bus, node),
      events: busEventRecorder(bus, node),
      clock: realClock,
      logger,
      tracer: telemetry.tracer,
      allowTmpfs: config.ALLOW_TMPFS,
      metrics: promVolumeMetrics(registry),
      ...(objects !== undefined ? { objects: apiObjectReader(objects) } : {}),
    });
    const restored = await vm.reconstruct();
    logger.info('volume state reconstructed', { pods: restored, rootDir: config.ROOT_DIR, allowTmpfs: config.ALLOW_TMPFS, mode: objects === undefined ? 'standalone' : 'cluster' });

    // The node's capacity, measured here on the node, for sync-loop's admission.
    const capacity = new NodeCapacityPublisher({
      node,
      rootDir: config.ROOT_DIR,
      maxPods: config.NODE_MAX_PODS,
      overrides: { cpu: config.NODE_CPU, memory: config.NODE_MEMORY, ephemeralStorage: config.NODE_EPHEMERAL_STORAGE },
      probe: hostNodeProbe(),
      pressure: { observe: () => observeHostPressure(config.ROOT_DIR), thresholds: config.EVICTION_HARD, transitionMs: config.EVICTION_PRESSURE_TRANSITION_PERIOD_MS },
      store: await kvNodeCapacityStore(bus, node),
      clock: realClock,
      logger,
    });
    await capacity.publish();
    const measuring = capacity.run(signal);
    onClose({ name: 'node-capacity', close: () => measuring });

    serveVolumeRpc(bus, node, vm, signal);
    onClose({ name: 'volume state writes', close: () => vm.settled() });
    health.register('volume-operations', () => {
      const age = vm.oldestOperationMs();
      return age <= STUCK_OPERATION_MS ? { ok: true } : { ok: false, reason: `a volume operation has been running for ${age} ms; threshold is ${STUCK_OPERATION_MS} ms` };
    });
    health.register('nats', () => (bus.isClosed() ? { ok: false, reason: 'NATS connection closed' } : { ok: true }), { readiness: true });
  },
});
