/**
 * The one bootstrap of every splitlet process, so that each `main.ts` is only the composition of
 * its own parts:
 *
 * ```
 * loadConfig(schema, env) ── invalid ──▶ stderr "<service>: invalid configuration: VAR: why", exit 2
 * startTelemetry(OTEL_* of env) ── invalid OTEL_* ──▶ the same path, exit 2
 * createLogger {service, node, instance} · createMetricsRegistry
 * runService (health, /metrics, SIGTERM drain) ─▶ start:
 *     the heap trimmer (with --expose-gc, as `splitlet up` runs every process; heap-trimmer.ts)
 *     runNodeProcess: connectNodeBus (telemetry closer, bus closer, SL_SPANS sink) ─▶ the service's start
 *     runProcess:     telemetry closer ─────────────────────────────────────────────▶ the service's start
 * ```
 *
 * The environment contract (`NodeProcessEnv`, `ProcessEnv`) is documented in docs/architecture.md.
 */
import type { Bus } from '@splitlet/bus';
import { createLogger, createMetricsRegistry, isTelemetryError, startTelemetry, TelemetryErrorCodes, type Logger, type Telemetry } from '@splitlet/telemetry';
import { Histogram, type Registry } from 'prom-client';
import type { ZodType, output } from 'zod';
import { connectNodeBus } from './connect-node-bus.js';
import { exposedGc, startHeapTrimmer } from './heap-trimmer.js';
import { loadConfig, type Env } from './load-config.js';
import { otelEnv, type NodeProcessSettings, type ProcessSettings } from './node-process-env.js';
import { runService, type Closer, type RunningService, type ServiceContext } from './run-service.js';
import { isConfigError } from './service-error.js';

/** Exit code of a process whose configuration (env, `OTEL_*`) is invalid: a usage error. */
export const CONFIG_ERROR_EXIT_CODE = 2;

/** What a process's `start` receives: `runService`'s context plus the parts the bootstrap built. */
export interface ProcessContext<C> extends ServiceContext {
  /** The parsed configuration (the schema's output, variables under their env names). */
  readonly config: C;
  readonly telemetry: Telemetry;
  /** The process's Prometheus registry, served at `/metrics`. */
  readonly registry: Registry;
  /** The `instanceId` option's value (also the logger's `instance` field), when given. */
  readonly instanceId: string | undefined;
}

/** {@link ProcessContext} of a node process: plus the connected bus. */
export interface NodeProcessContext<C> extends ProcessContext<C> {
  readonly bus: Bus;
}

/** What a process's `start` may return: closers, registered after those passed to `onClose`. */
type StartResult = Promise<void | readonly Closer[]> | void | readonly Closer[];

/** Options of {@link runProcess} and {@link runNodeProcess}. */
export interface ProcessOptions<S extends ZodType<ProcessSettings>, Ctx> {
  /** The process name: logs, `service.name`, the NATS connection name, the config-error prefix. */
  readonly service: string;
  /** The service's env schema (`z.object({ ...NodeProcessEnv, … })`, transforms allowed). */
  readonly schema: S;
  /** The environment, handed over by the service's `config.ts` (the only reader of `process.env`). */
  readonly env: Env;
  /** The process instance (`service.instance.id`, the logger's `instance`). @default none (telemetry picks a UUID) */
  readonly instanceId?: (config: output<S>) => string;
  /**
   * Install the OpenTelemetry SDK from the `OTEL_*` variables. false: `telemetry` is the API's no-op
   * (sim-runtime: a simulated runtime records no spans of its own). @default true
   */
  readonly traced?: boolean;
  /** The shutdown deadline. @default runService's (10 s) */
  readonly shutdownTimeoutMs?: (config: output<S>) => number;
  /** Builds the service from its parts; see `RunServiceOptions.start`. */
  readonly start: (ctx: Ctx) => StartResult;
  /** How the process ends (a test seam). @default process.exit */
  readonly exit?: (code: number) => void;
  /** Where the config-error line goes (a test seam). @default process.stderr */
  readonly stderr?: (line: string) => void;
  /** See `RunServiceOptions.handleProcessEvents` (a test seam). @default true */
  readonly handleProcessEvents?: boolean;
}

/**
 * Runs a node process (one on the bus): config, telemetry, logger, metrics registry, `runService`,
 * `connectNodeBus`, then `start` with the bus. An invalid environment ends the process before
 * anything starts, with exit code 2 and one stderr line naming every bad variable (never a value).
 *
 * Resolves like `runService` once `start` settled; resolves `undefined` when the configuration was
 * invalid (after `exit(2)`; with the default `exit` the process is gone by then).
 */
export function runNodeProcess<S extends ZodType<NodeProcessSettings>>(options: ProcessOptions<S, NodeProcessContext<output<S>>>): Promise<RunningService | undefined> {
  return launch(
    options,
    (c) => c.NODE_NAME,
    async (ctx) => {
      const bus = await connectNodeBus({
        service: options.service,
        settings: ctx.config,
        logger: ctx.logger,
        registry: ctx.registry,
        telemetry: ctx.telemetry,
        signal: ctx.signal,
        onClose: ctx.onClose,
      });
      return options.start({ ...ctx, bus });
    },
  );
}

/**
 * Runs a process without a bus (sim-runtime): the same config-error path, telemetry, logger,
 * registry and `runService` as {@link runNodeProcess}; telemetry is flushed last at shutdown.
 */
export function runProcess<S extends ZodType<ProcessSettings>>(options: ProcessOptions<S, ProcessContext<output<S>>>): Promise<RunningService | undefined> {
  return launch(
    options,
    () => undefined,
    (ctx) => {
      ctx.onClose({ name: 'telemetry', close: () => ctx.telemetry.shutdown() });
      return options.start(ctx);
    },
  );
}

async function launch<S extends ZodType<ProcessSettings>, Ctx>(
  options: ProcessOptions<S, Ctx>,
  nodeOf: (config: output<S>) => string | undefined,
  start: (ctx: ProcessContext<output<S>>) => StartResult,
): Promise<RunningService | undefined> {
  const { service } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const stderr = options.stderr ?? ((line: string) => void process.stderr.write(line));
  /** The one config-error path: a bad variable (or `OTEL_*` value) ends the process with exit 2. */
  const configFailure = (e: unknown): e is Error => {
    if (!isConfigError(e) && !isTelemetryError(e, TelemetryErrorCodes.InvalidConfig)) return false;
    stderr(`${service}: ${e.message}\n`);
    exit(CONFIG_ERROR_EXIT_CODE);
    return true;
  };

  let config: output<S>;
  try {
    config = loadConfig(options.schema, options.env);
  } catch (e) {
    if (configFailure(e)) return undefined;
    throw e;
  }
  const node = nodeOf(config);
  const instanceId = options.instanceId?.(config);
  const logger = createLogger({
    service,
    level: config.LOG_LEVEL,
    fields: { ...(node === undefined ? {} : { node }), ...(instanceId === undefined ? {} : { instance: instanceId }) },
  });
  let telemetry: Telemetry;
  try {
    telemetry = startTelemetry({
      serviceName: service,
      ...(node === undefined ? {} : { nodeName: node }),
      ...(instanceId === undefined ? {} : { instanceId }),
      env: options.traced === false ? { OTEL_SDK_DISABLED: 'true' } : otelEnv(options.env),
      onError: (e) => logger.warn('telemetry error', { err: e }),
    });
  } catch (e) {
    if (configFailure(e)) return undefined;
    throw e;
  }
  const registry = createMetricsRegistry({ service });
  const timeout = options.shutdownTimeoutMs?.(config);
  const supervisorPid = supervisorPidFromEnv(options.env);
  return runService({
    name: service,
    logger,
    port: config.HEALTH_PORT,
    host: config.HEALTH_HOST,
    registry,
    ...(config.HEALTH_PORT_FILE === undefined ? {} : { portFile: config.HEALTH_PORT_FILE }),
    ...(timeout === undefined ? {} : { shutdownTimeoutMs: timeout }),
    ...(options.exit === undefined ? {} : { exit: options.exit }),
    ...(options.handleProcessEvents === undefined ? {} : { handleProcessEvents: options.handleProcessEvents }),
    ...(supervisorPid === undefined ? {} : { supervisorPid }),
    ...(supervisorPid !== undefined && options.env['SPLITLET_SUPERVISOR_STDIN'] === '1' ? { supervisorStdin: process.stdin } : {}),
    start: (ctx) => {
      trimHeap(ctx.signal, registry, logger);
      return start({ ...ctx, config, telemetry, registry, instanceId });
    },
  });
}

/**
 * Starts the heap trimmer when the process has V8's `gc` (`--expose-gc`); each trim's duration goes
 * to `splitlet_heap_trim_duration_seconds` (its count: the trims) and a debug log line.
 */
function trimHeap(signal: AbortSignal, registry: Registry, logger: Logger): void {
  const gc = exposedGc();
  if (gc === undefined) return;
  const trims = new Histogram({
    name: 'splitlet_heap_trim_duration_seconds',
    help: 'Memory-reducing GCs run once the process was quiet again with its RSS grown (the heap trimmer), by how long each blocked the process.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const MiB = 1024 * 1024;
  startHeapTrimmer({
    gc,
    signal,
    onTrim: (t) => {
      trims.observe(t.ms / 1000);
      logger.debug('heap trimmed', { rssBeforeMiB: Math.round(t.rssBefore / MiB), rssAfterMiB: Math.round(t.rssAfter / MiB), ms: Math.round(t.ms) });
    },
  });
}

/** `SPLITLET_SUPERVISOR_PID` (set by `splitlet up`): the process drains once its parent is another. */
export function supervisorPidFromEnv(env: Env): number | undefined {
  const raw = env['SPLITLET_SUPERVISOR_PID'];
  if (raw === undefined || raw === '') return undefined;
  const pid = Number(raw);
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}
