/**
 * sim-runtime: serves the in-memory CRI simulator on a unix socket.
 *
 * Composition root only: config → simulator → gRPC server → runService (SIGTERM drain, /healthz,
 * /readyz). Health is by progress: the simulator answers its own Version call.
 */
import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { GrpcRuntimeService, instrument, serveCri } from '@splitlet/cri';
import { createSimRuntime } from './runtime/sim-runtime.js';
import { runService } from '@splitlet/service';
import { createLogger, createMetricsRegistry } from '@splitlet/telemetry';
import { ConfigError, loadConfig } from './config.js';

let config;
try {
  config = loadConfig(process.env);
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', service: 'sim-runtime', msg: e.message })}\n`);
  process.exit(2);
}
const cfg = config;
const logger = createLogger({ service: 'sim-runtime', level: cfg.logLevel });

await runService({
  name: 'sim-runtime',
  logger,
  registry: createMetricsRegistry({ service: 'sim-runtime' }),
  port: cfg.healthPort,
  ...(cfg.healthPortFile !== undefined ? { portFile: cfg.healthPortFile } : {}),
  start: async ({ health, onClose }) => {
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
        else logger.debug('rpc failed', { method, durationMs, error: error instanceof Error ? error.message : String(error) });
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
    health.register('cri-server', () => (Date.now() - lastOk < 30_000 ? { ok: true } : { ok: false, reason: `CRI self-check last succeeded ${Math.round((Date.now() - lastOk) / 1000)}s ago` }));
    logger.info('serving CRI', { endpoint: server.endpoint, podSubnet: cfg.podSubnet, latencyMs: cfg.latencyMs, failures: Object.keys(cfg.failures) });
  },
});
