/**
 * `connectBus`: the Temporal-style eager factory of {@link NatsBus}. Connects (retrying until NATS
 * answers or the signal aborts), then provisions the topology.
 */
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { errorMessage } from '@splitlet/api';
import type { BusLogger } from './bus.js';
import type { BusMetrics } from './metrics.js';
import { NatsBus, permissionError } from './nats-bus.js';
import { ensureTopology, type StreamMaxAges } from './topology.js';

/** Options for {@link connectBus}. */
export interface BusOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`. */
  servers: string | string[];
  /** The process name; used as the NATS connection name and the dead-letter origin. */
  process: string;
  /** The node this process serves; dead letters go to its subject. */
  node: string;
  logger: BusLogger;
  /** Provision streams and buckets at connect. @default true */
  provision?: boolean;
  /** Replicas of the streams and buckets provisioning creates (3 on a 3-server cluster). @default 1 */
  replicas?: number;
  /**
   * The operator's stream max ages (`STREAM_MAX_AGE`), applied when provisioning; every process
   * must be given the same. @default the declared ones
   */
  streamMaxAges?: StreamMaxAges;
  /**
   * Where consumer progress (pending, redeliveries), dead letters and request latency are reported,
   * e.g. `createBusMetrics(registry)` of `@splitlet/telemetry`. @default not reported
   */
  metrics?: BusMetrics;
  /** Credentials, when auth is on. */
  user?: string;
  pass?: string;
  token?: string;
  /** How often `serve` tells a requester it is still working on a request. @default PROGRESS_BEAT_MS */
  progressBeatMs?: number;
  /**
   * Ends the wait for the first connection (a shutdown while NATS is unreachable): connectBus then
   * rejects with the signal's reason. Without it, connectBus waits until NATS answers.
   */
  signal?: AbortSignal;
  /**
   * One connection attempt, no retry: a refused or silent NATS rejects at once (or after
   * `connectTimeoutMs`) with the cause. For short-lived clients (the CLI). @default false
   */
  failFast?: boolean;
  /** With `failFast`: how long the one attempt may take. @default 5000 */
  connectTimeoutMs?: number;
}

/** Connects to NATS and returns a ready bus (topology provisioned unless `provision: false`). */
export async function connectBus(opts: BusOptions): Promise<NatsBus> {
  const connOpts: Parameters<typeof connect>[0] = {
    servers: opts.servers,
    name: `${opts.process}@${opts.node}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    // nats.js otherwise captures a stack trace (new Error) for every request and every KV or
    // JetStream call, only to decorate a timeout; BusError names the subject instead.
    noAsyncTraces: true,
  };
  if (opts.user !== undefined) connOpts.user = opts.user;
  if (opts.pass !== undefined) connOpts.pass = opts.pass;
  if (opts.token !== undefined) connOpts.token = opts.token;
  const nc = await connectFirst(connOpts, opts);
  const jsm = await jetstreamManager(nc);
  const bus = new NatsBus(nc, jsm, opts);
  if (opts.provision !== false) {
    try {
      await provision(nc, jsm, opts);
    } catch (e) {
      await bus.close().catch(() => undefined);
      throw e;
    }
  }
  return bus;
}

const PROVISION_RETRY_MS = 2000;

/**
 * Provisions the topology. An identity that may only check it (every process but `admin`) and
 * finds a stream or bucket missing or different waits for the admin to provision it (`splitlet up`
 * does before it starts the processes; compose and k8s run `splitlet provision`), checking every 2 s.
 */
async function provision(nc: NatsConnection, jsm: Awaited<ReturnType<typeof jetstreamManager>>, opts: BusOptions): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ensureTopology(nc, jsm, {
        ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
        ...(opts.streamMaxAges !== undefined ? { streamMaxAges: opts.streamMaxAges } : {}),
      });
      return;
    } catch (e) {
      const denied = permissionError(e);
      if (denied === undefined) throw e;
      if (opts.failFast === true || opts.signal === undefined) throw denied;
      if (attempt === 1 || attempt % 15 === 0) {
        opts.logger.warn('the streams and buckets are not provisioned (or differ) and this NATS user may not create them: waiting for `splitlet provision` as admin', {
          err: denied.message,
          attempt,
        });
      }
      const { signal } = opts;
      await new Promise<void>((r) => {
        const t = setTimeout(r, PROVISION_RETRY_MS);
        signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
      });
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
    }
  }
}

const FIRST_CONNECT_RETRY_MAX_MS = 2000;

/** Server URLs without any `user:password@` part, for logs. */
function withoutCredentials(servers: string | string[]): string[] {
  return (Array.isArray(servers) ? servers : [servers]).map((u) => u.replace(/\/\/[^/@]*@/, '//'));
}

/**
 * One attempt per server, in the order given, until one answers (a cluster with one server down still
 * serves a short-lived client); the last error, naming every URL tried, when none does.
 */
async function connectAnyOnce(connOpts: Parameters<typeof connect>[0], timeoutMs: number): Promise<NatsConnection> {
  const servers = connOpts?.servers === undefined ? [] : Array.isArray(connOpts.servers) ? connOpts.servers : [connOpts.servers];
  if (servers.length <= 1) return connect({ ...connOpts, waitOnFirstConnect: false, timeout: timeoutMs });
  const errors: string[] = [];
  for (const server of servers) {
    try {
      return await connect({ ...connOpts, servers: server, waitOnFirstConnect: false, timeout: timeoutMs });
    } catch (e) {
      errors.push(`${withoutCredentials(server)[0]}: ${errorMessage(e)}`);
    }
  }
  throw new Error(`no NATS server answered (${errors.join('; ')})`);
}

/**
 * The first connection: retried until NATS answers (every 250 ms, backing off to 2 s, with a warning
 * on the first failure and then every 10th) or until `opts.signal` aborts. An attempt still in
 * flight at the abort is closed when it settles.
 */
async function connectFirst(connOpts: Parameters<typeof connect>[0], opts: BusOptions): Promise<NatsConnection> {
  const { signal } = opts;
  if (opts.failFast === true) {
    const once = connectAnyOnce(connOpts, opts.connectTimeoutMs ?? 5000);
    if (signal === undefined) return once;
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted')), { once: true });
    });
    aborted.catch(() => undefined);
    once
      .then(
        (nc) => (signal.aborted ? nc.close() : undefined),
        () => undefined,
      )
      .catch(() => undefined);
    return Promise.race([once, aborted]);
  }
  if (signal === undefined) return connect(connOpts);
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  for (let attempt = 1; ; attempt++) {
    const pending = connect({ ...connOpts, waitOnFirstConnect: false });
    try {
      return await Promise.race([pending, aborted]);
    } catch (e) {
      if (signal.aborted) {
        pending
          .then(
            (nc) => nc.close(),
            () => undefined,
          )
          .catch(() => undefined);
        throw e;
      }
      if (attempt === 1 || attempt % 10 === 0) {
        opts.logger.warn('NATS not reachable yet', { servers: withoutCredentials(opts.servers), attempt, err: errorMessage(e) });
      }
    }
    const waitMs = Math.min(250 * attempt, FIRST_CONNECT_RETRY_MAX_MS);
    await Promise.race([new Promise((r) => setTimeout(r, waitMs).unref()), aborted]);
  }
}
