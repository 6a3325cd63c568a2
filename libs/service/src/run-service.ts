import { rename, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '@splitlet/telemetry';
import { HealthRegistry, type HealthReport } from './health-registry.js';
import { ServiceError, ServiceErrorCodes } from './service-error.js';
import { onSupervisorStdinEnd } from './supervisor-stdin.js';

// node:http through process.getBuiltinModule, not an ESM import: Node builds an imported builtin's
// namespace from every export, and node:http's lazy ones load fetch (undici) and http2 (~10 MiB of RSS).
const { createServer } = process.getBuiltinModule('node:http');

/**
 * Something to release on shutdown: a function, or a named object (the name appears in logs).
 * Closers run one at a time, in reverse registration order.
 */
export type Closer = (() => void | Promise<void>) | { readonly name: string; close(): void | Promise<void> };

/** What `start` receives. */
export interface ServiceContext {
  /** Aborted when shutdown begins (SIGTERM, SIGINT, a fatal error, or `shutdown()`). Pass it to every loop. */
  readonly signal: AbortSignal;
  /** Register each component's `healthy()` here; served at `/healthz` and `/readyz`. */
  readonly health: HealthRegistry;
  /** The service's logger. */
  readonly logger: Logger;
  /** Registers a closer now (so what was created before a failing step is still closed). A plain function: destructure it freely. */
  readonly onClose: (closer: Closer) => void;
}

/** Options of {@link runService}. */
export interface RunServiceOptions {
  /** The service name, for logs. */
  readonly name: string;
  readonly logger: Logger;
  /** Port of the health/metrics HTTP server; 0 picks a free one (see `portFile` and the `listening` log). */
  readonly port: number;
  /** Address to bind. @default '127.0.0.1' (use '0.0.0.0' in a container) */
  readonly host?: string;
  /** Served at `/metrics` in the Prometheus text format; `/metrics` is 404 without it. */
  readonly registry?: Registry;
  /** When set, the bound port is written there (decimal and a newline, atomically) and removed on shutdown. */
  readonly portFile?: string;
  /** Deadline for the whole shutdown (start settling + every closer). @default 10000 */
  readonly shutdownTimeoutMs?: number;
  /**
   * Builds the service: connects, creates components, binds adapters. Returned closers are
   * registered after those passed to `onClose`, in array order. `/readyz` fails until it resolves.
   */
  readonly start: (ctx: ServiceContext) => Promise<void | readonly Closer[]> | void | readonly Closer[];
  /** How the process ends (a test seam). @default process.exit */
  readonly exit?: (code: number) => void;
  /**
   * Listen for SIGTERM/SIGINT, `unhandledRejection` and `uncaughtException` on `process`.
   * Tests that drive `shutdown()` themselves turn it off. @default true
   */
  readonly handleProcessEvents?: boolean;
  /**
   * The pid of the process that supervises this one (`splitlet up` sets `SPLITLET_SUPERVISOR_PID`).
   * When set, the process drains once the supervisor is gone (it died, even by SIGKILL): when
   * {@link RunServiceOptions.supervisorStdin} ends, or else once its parent, checked every
   * {@link SUPERVISOR_CHECK_MS}, is no longer that pid (this process was re-parented). No orphan
   * outlives its supervisor. @default not watched
   */
  readonly supervisorPid?: number;
  /** How the parent pid is read (a test seam). @default () => process.ppid */
  readonly parentPid?: () => number;
  /**
   * A stream whose other end the supervisor holds and never writes to (`splitlet up` gives each
   * process a stdin pipe and sets `SPLITLET_SUPERVISOR_STDIN=1`): its end — the supervisor's exit,
   * however it exits — drains the process at once, with no polling. Without it the parent pid is
   * polled every {@link SUPERVISOR_CHECK_MS}: two wakeups a second in every process of an idle node.
   */
  readonly supervisorStdin?: NodeJS.ReadableStream;
}

/** How often a supervised process checks that its supervisor is still its parent. */
export const SUPERVISOR_CHECK_MS = 500;

/** A running service. */
export interface RunningService {
  /** The bound health/metrics port. */
  readonly port: number;
  /** `http://<host>:<port>`. */
  readonly url: string;
  readonly health: HealthRegistry;
  /** The signal passed to `start`. */
  readonly signal: AbortSignal;
  /**
   * Starts shutdown (as SIGTERM does) and resolves with the exit code, after `exit` was called.
   * Idempotent: later calls return the first call's promise.
   */
  shutdown(reason?: string): Promise<number>;
}

interface NamedCloser {
  readonly name: string;
  readonly close: () => void | Promise<void>;
}

function toNamed(closer: Closer, index: number): NamedCloser {
  if (typeof closer === 'function') return { name: closer.name === '' ? `closer#${index}` : closer.name, close: closer };
  return { name: closer.name, close: () => closer.close() };
}

function reportText(report: HealthReport): string {
  return report.ok ? 'ok\n' : report.failures.map((f) => `${f.name}: ${f.reason}\n`).join('');
}

/**
 * Runs a service process: the lifecycle every splitlet `main` ends with.
 *
 * 1. Serves `GET /healthz` (200 `ok` when every liveness check passes, else 503 listing
 *    `name: reason` lines), `GET /readyz` (also readiness checks; 503 before `start` resolves and
 *    once shutdown begins) and `GET /metrics` on `host:port`, logs `listening` with the port and
 *    writes `portFile`.
 * 2. Calls `start` with an AbortSignal, the health registry and `onClose`.
 * 3. On SIGTERM/SIGINT (or `shutdown()`): aborts the signal, waits for `start` to settle, runs the
 *    closers in reverse registration order, closes the HTTP server, then exits 0 — or 1 when a
 *    closer threw or the deadline (`shutdownTimeoutMs`) passed; closers still pending at the
 *    deadline are skipped and named in the log. A second signal exits 1 at once.
 * 4. `start` throwing, `unhandledRejection` and `uncaughtException` are logged once and end in the
 *    same shutdown with exit code 1.
 *
 * Resolves once `start` has settled (also when shutdown cut it short); rejects, after `exit(1)`,
 * only when listening or `start` failed (with the default `exit`, the process is gone by then).
 */
export async function runService(options: RunServiceOptions): Promise<RunningService> {
  const { logger } = options;
  const host = options.host ?? '127.0.0.1';
  const timeoutMs = options.shutdownTimeoutMs ?? 10_000;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const handleProcessEvents = options.handleProcessEvents ?? true;

  const controller = new AbortController();
  const health = new HealthRegistry();
  const closers: NamedCloser[] = [];
  let registered = 0;
  const onClose = (closer: Closer): void => {
    closers.push(toNamed(closer, registered++));
  };
  let started = false;
  let shuttingDown: Promise<number> | undefined;
  /** Raised to 1 by any failure: a fatal event (even one during shutdown), a closer, the deadline. */
  let exitCode = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      logger.error('health endpoint failed', { path: req.url, err: e });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('internal error\n');
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const send = (status: number, body: string, contentType = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      send(405, 'method not allowed\n');
      return;
    }
    switch (path) {
      case '/healthz': {
        const report = health.liveness();
        send(report.ok ? 200 : 503, reportText(report));
        return;
      }
      case '/readyz': {
        const report = health.readiness();
        const lifecycle = shuttingDown !== undefined ? [{ name: 'lifecycle', reason: 'shutting down' }] : started ? [] : [{ name: 'lifecycle', reason: 'starting' }];
        const failures = [...lifecycle, ...report.failures];
        send(failures.length === 0 ? 200 : 503, reportText({ ok: failures.length === 0, failures }));
        return;
      }
      case '/metrics': {
        if (options.registry === undefined) {
          send(404, 'no metrics registry\n');
          return;
        }
        send(200, await options.registry.metrics(), options.registry.contentType);
        return;
      }
      default:
        send(404, 'not found\n');
    }
  }

  // Process events. Handlers are removed when shutdown completes.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shuttingDown !== undefined) {
      logger.warn('second signal during shutdown, exiting now', { signal });
      exit(1);
      return;
    }
    void shutdown(signal, 0);
  };
  const onUnhandledRejection = (reason: unknown): void => {
    logger.error('unhandled promise rejection', { err: reason });
    void shutdown('unhandledRejection', 1);
  };
  const onUncaughtException = (err: Error): void => {
    logger.error('uncaught exception', { err });
    void shutdown('uncaughtException', 1);
  };
  const removeProcessHandlers = (): void => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('unhandledRejection', onUnhandledRejection);
    process.off('uncaughtException', onUncaughtException);
  };

  let startSettled: Promise<unknown> = Promise.resolve();

  function shutdown(reason: string, requestedCode: number): Promise<number> {
    if (requestedCode !== 0) exitCode = 1;
    shuttingDown ??= (async () => {
      logger.info('shutting down', { reason, timeoutMs });
      controller.abort(new ServiceError(ServiceErrorCodes.ShuttingDown, `${options.name} is shutting down: ${reason}`));
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'deadline'>((resolve) => {
        timer = setTimeout(() => resolve('deadline'), timeoutMs);
      });
      const beforeDeadline = async (p: Promise<unknown>): Promise<boolean> => (await Promise.race([p.then(() => 'done' as const), deadline])) === 'done';
      try {
        if (!(await beforeDeadline(startSettled))) {
          exitCode = 1;
          logger.error('shutdown deadline exceeded while start was still running', {
            timeoutMs,
            skipped: closers.map((c) => c.name).reverse(),
          });
        } else {
          for (let closer = closers.pop(); closer !== undefined; closer = closers.pop()) {
            const current = closer;
            const run = Promise.resolve().then(() => current.close());
            let finished: boolean;
            try {
              finished = await beforeDeadline(run);
            } catch (e) {
              exitCode = 1;
              logger.error('closer failed', { closer: current.name, err: e });
              continue;
            }
            if (!finished) {
              exitCode = 1;
              run.catch((e: unknown) => logger.error('closer failed after the deadline', { closer: current.name, err: e }));
              logger.error('shutdown deadline exceeded', {
                timeoutMs,
                closer: current.name,
                skipped: closers.map((c) => c.name).reverse(),
              });
              break;
            }
          }
        }
      } finally {
        clearTimeout(timer);
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        if (options.portFile !== undefined) {
          await rm(options.portFile, { force: true }).catch((e: unknown) => logger.warn('cannot remove the port file', { portFile: options.portFile, err: e }));
        }
        if (handleProcessEvents) removeProcessHandlers();
      }
      const code = exitCode;
      logger.info('stopped', { code });
      exit(code);
      return code;
    })();
    return shuttingDown;
  }

  // 1. Listen.
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    const err = new ServiceError(
      ServiceErrorCodes.ListenFailed,
      `${options.name}: cannot serve health/metrics on ${host}:${options.port}: ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
    logger.error('cannot listen', { err });
    exit(1);
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (options.portFile !== undefined) {
    const tmp = `${options.portFile}.${process.pid}.tmp`;
    await writeFile(tmp, `${port}\n`);
    await rename(tmp, options.portFile);
  }
  logger.info('listening', { port, host, url });
  if (options.supervisorPid !== undefined) {
    const supervisorPid = options.supervisorPid;
    const parentPid = options.parentPid ?? (() => process.ppid);
    // stdout/stderr are pipes to the supervisor: once it is gone, a log line fails with EPIPE, which
    // must not turn the drain into an uncaught-exception loop.
    const ignore = (): void => undefined;
    process.stdout.on('error', ignore);
    process.stderr.on('error', ignore);
    const supervisorGone = (fields: Record<string, unknown>): void => {
      logger.warn('supervisor is gone, stopping', { supervisorPid, ...fields });
      void shutdown('supervisor gone', 0);
    };
    const stdin = options.supervisorStdin;
    if (stdin !== undefined) {
      onSupervisorStdinEnd(stdin, () => {
        if (shuttingDown === undefined) supervisorGone({ parentPid: parentPid(), supervisorStdin: 'closed' });
      });
    } else {
      const watch = setInterval(() => {
        if (shuttingDown !== undefined) {
          clearInterval(watch);
          return;
        }
        const ppid = parentPid();
        if (ppid === supervisorPid) return;
        clearInterval(watch);
        supervisorGone({ parentPid: ppid });
      }, SUPERVISOR_CHECK_MS);
      watch.unref();
    }
  }
  if (handleProcessEvents) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('unhandledRejection', onUnhandledRejection);
    process.on('uncaughtException', onUncaughtException);
  }

  // 2. Start.
  const running: RunningService = {
    port,
    url,
    health,
    signal: controller.signal,
    shutdown: (reason = 'shutdown requested') => shutdown(reason, 0),
  };
  const startedAt = Date.now();
  const startPromise = (async () => {
    const returned = await options.start({ signal: controller.signal, health, logger, onClose });
    if (returned !== undefined) for (const c of returned) onClose(c);
  })();
  // Shutdown waits for this; closers returned by `start` are registered before it settles.
  startSettled = startPromise.catch(() => undefined);
  try {
    await startPromise;
  } catch (e) {
    if (shuttingDown !== undefined) {
      // Typically `start` observed the aborted signal; the shutdown already under way finishes the job.
      logger.warn('start ended by shutdown', { err: e });
      return running;
    }
    logger.error('start failed', { err: e });
    await shutdown('start failed', 1);
    throw e;
  }
  if (shuttingDown === undefined) {
    started = true;
    logger.info('started', { durationMs: Date.now() - startedAt });
  }
  return running;
}
