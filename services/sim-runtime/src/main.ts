/**
 * sim-runtime: serves the in-memory CRI simulator on a unix socket.
 *
 * Composition root only: simulator → gRPC server, on the common process bootstrap (`runProcess`:
 * config errors exit 2, SIGTERM drain, /healthz, /readyz, /metrics). Health is by progress: the
 * simulator answers its own Version call.
 */
import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '@splitlet/api';
import { GrpcRuntimeService, instrument, serveCri } from '@splitlet/cri';
import { createSimRuntime } from './runtime/sim-runtime.js';
import { runProcess } from '@splitlet/service';
import { processEnv, SimRuntimeEnv } from './config.js';

await runProcess({
  service: 'sim-runtime',
  schema: SimRuntimeEnv,
  env: processEnv(),
  traced: false, // a simulated runtime records no spans of its own (the cri-adapter's client spans cover its calls)
  start: async ({ config: cfg, logger, health, onClose }) => {
    const sim = createSimRuntime({
      latencyMs: cfg.latencyMs,
      failures: cfg.failures,
      podSubnet: cfg.podSubnet,
      pullBytesPerSecond: cfg.pullBytesPerSecond,
      images: cfg.images,
      imageConfig: cfg.imageConfig,
      registry: cfg.registry,
      privateRegistries: cfg.privateRegistries,
    });
    onClose({ name: 'simulator', close: () => sim.close() }); // SIGKILLs simulated containers, clears every timer
    const served = instrument(sim, {
      onCall: ({ method, durationMs, error }) => {
        if (error === undefined) logger.debug('rpc', { method, durationMs: Math.round(durationMs * 1000) / 1000 });
        else logger.debug('rpc failed', { method, durationMs, error: errorMessage(error) });
      },
    });
    mkdirSync(path.dirname(cfg.socketPath), { recursive: true });
    const server = await serveCri(served, cfg.socketPath);
    onClose({
      name: 'grpc server',
      close: async () => {
        await server.close(2000);
        rmSync(cfg.socketPath, { force: true });
      },
    });
    // Health by progress: a real gRPC round trip through our own socket every 5 s.
    const client = await GrpcRuntimeService.connect({ endpoint: server.endpoint, timeoutMs: 2000 });
    onClose({ name: 'self-check client', close: () => client.close() });
    let lastOk = Date.now();
    const timer = setInterval(() => {
      client.Version({}).then(
        () => (lastOk = Date.now()),
        (e: unknown) => logger.warn('self-check failed', { error: e instanceof Error ? e.message : String(e) }),
      );
    }, 5000);
    onClose({ name: 'self-check timer', close: () => clearInterval(timer) });
    health.register('cri-server', () =>
      Date.now() - lastOk < 30_000 ? { ok: true } : { ok: false, reason: `CRI self-check last succeeded ${Math.round((Date.now() - lastOk) / 1000)}s ago` },
    );
    logger.info('serving CRI', { endpoint: server.endpoint, podSubnet: cfg.podSubnet, latencyMs: cfg.latencyMs, failures: Object.keys(cfg.failures) });
  },
});
