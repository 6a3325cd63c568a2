/**
 * sim-runtime: serves the in-memory CRI simulator on a unix socket.
 *
 * Composition root only: config → simulator → gRPC server → signal handling. Kept self-contained
 * (no libs/service yet); logs are JSON lines on stdout.
 */
import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { instrument, serveCri } from '@splitlet/cri';
import { createSimRuntime } from '@splitlet/cri/testing';
import { ConfigError, LOG_LEVELS, loadConfig, type LogLevel } from './config.js';

const SERVICE = 'sim-runtime';

type Log = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

function createLog(minLevel: LogLevel): Log {
  const min = LOG_LEVELS.indexOf(minLevel);
  return (level, msg, fields = {}) => {
    if (LOG_LEVELS.indexOf(level) < min) return;
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, service: SERVICE, msg, ...fields })}\n`);
  };
}

async function main(): Promise<void> {
  let log = createLog('info');
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    log('error', e.message);
    process.exitCode = 2;
    return;
  }
  log = createLog(config.logLevel);

  const sim = createSimRuntime({ latencyMs: config.latencyMs, failures: config.failures, podSubnet: config.podSubnet });
  const served = instrument(sim, {
    onCall: ({ method, durationMs, error }) => {
      if (error === undefined) log('debug', 'rpc', { method, durationMs: Math.round(durationMs * 1000) / 1000 });
      else log('debug', 'rpc failed', { method, durationMs, error: error instanceof Error ? error.message : String(error) });
    },
  });

  mkdirSync(path.dirname(config.socketPath), { recursive: true });
  const server = await serveCri(served, config.socketPath);
  log('info', 'serving CRI', {
    endpoint: server.endpoint,
    podSubnet: config.podSubnet,
    latencyMs: config.latencyMs,
    failures: Object.keys(config.failures),
  });

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log('info', 'shutting down', { signal });
    void (async () => {
      await server.close(2000);
      await sim.close(); // SIGKILLs simulated containers, clears every timer
      rmSync(config.socketPath, { force: true });
      log('info', 'stopped');
      process.exitCode = 0;
      // Nothing should be left; if something is, do not hang the node's shutdown.
      setTimeout(() => {
        log('warn', 'handles still open after shutdown; exiting anyway');
        process.exit(0);
      }, 5000).unref();
    })().catch((e: unknown) => {
      log('error', 'shutdown failed', { error: e instanceof Error ? e.message : String(e) });
      process.exit(1);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

process.on('unhandledRejection', (reason) => {
  process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'error', service: SERVICE, msg: 'unhandled rejection', error: reason instanceof Error ? (reason.stack ?? reason.message) : String(reason) })}\n`,
  );
  process.exit(1);
});

main().catch((e: unknown) => {
  process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'error', service: SERVICE, msg: 'failed to start', error: e instanceof Error ? e.message : String(e) })}\n`,
  );
  process.exit(1);
});
