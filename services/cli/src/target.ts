/**
 * Which node a command talks to, and over which NATS.
 *
 * Two ways to find it:
 * - **remote**: `--nats-url` (or `SPLITLET_NATS_URL`) plus `--node-name` (or `SPLITLET_NODE_NAME`);
 *   without a node name, the one node the bus knows (`sl_node`, written by every node's sync-loop)
 *   is used, and several nodes are an error listing them. Nothing local is needed: a compose stack
 *   or a cluster seen from a laptop.
 * - **local**: the state dir of a `splitlet up` on this machine (`--state-dir`,
 *   `SPLITLET_STATE_DIR`, `./.splitlet`), whose instance.json names the NATS URL and node.
 */
import { z } from 'zod';
import { Buckets, nodeFromToken, nodeToken } from '@splitlet/api';
import { connectBus } from '@splitlet/bus';
import type { Bus, NatsCredential, StreamMaxAges } from '@splitlet/bus';
import { readCredential } from './up/nats-config.js';
import { createLogger } from '@splitlet/telemetry';
import { parseStreamMaxAges } from '@splitlet/service';
import type { InstanceInfo, StateDir } from './state-dir.js';
import { CliError, readInstance } from './state-dir.js';

/** A connected command target. Close it with {@link CliTarget.close}. */
export interface CliTarget {
  readonly bus: Bus;
  readonly natsUrl: string;
  readonly nodeName: string;
  /** The `splitlet up` instance on this machine, when the target was found through a state dir. */
  readonly local: { readonly stateDir: StateDir; readonly inst: InstanceInfo } | undefined;
  close(): Promise<void>;
}

/** How the user named the target (flags over environment). */
export interface TargetFlags {
  natsUrl: string | undefined;
  nodeName: string | undefined;
  /** `--request-timeout` in ms: the connect timeout and each command's deadline; 0 = no deadline (connect still bounded). */
  requestTimeoutMs: number;
  /** `SPLITLET_NATS_USER` / `SPLITLET_NATS_PASSWORD`: the NATS identity for `--nats-url` (a local instance's `cli` one is found in its state dir). */
  credential?: NatsCredential | undefined;
}

/** Connect timeout when `--request-timeout` is 0 or not given. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/**
 * A kubectl-style duration: `0` (none), a number of seconds (`5`), or a number with a unit
 * (`500ms`, `5s`, `2m`, `1h`). Returns milliseconds; an error naming the flag otherwise.
 */
export function parseRequestTimeout(raw: string | undefined): number {
  if (raw === undefined) return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!m) throw new CliError(`--request-timeout must be a duration such as 0, 5, 5s, 500ms or 1m, got ${JSON.stringify(raw)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

/** The NATS URL and node name from flags, then `SPLITLET_NATS_URL` / `SPLITLET_NODE_NAME`. */
export function targetFlags(
  values: { 'nats-url'?: string | undefined; 'node-name'?: string | undefined; 'request-timeout'?: string | undefined },
  env: NodeJS.ProcessEnv,
): TargetFlags {
  return {
    natsUrl: values['nats-url'] ?? (env['SPLITLET_NATS_URL'] || undefined),
    nodeName: values['node-name'] ?? (env['SPLITLET_NODE_NAME'] || undefined),
    requestTimeoutMs: parseRequestTimeout(values['request-timeout']),
    credential: env['SPLITLET_NATS_USER'] ? { user: env['SPLITLET_NATS_USER'], password: env['SPLITLET_NATS_PASSWORD'] ?? '' } : undefined,
  };
}

/** A NATS URL without any `user:password@` part. */
function safeUrl(natsUrl: string): string {
  return natsUrl.replace(/\/\/[^/@]*@/g, '//');
}

/**
 * Connects as a short-lived CLI client: one attempt, no retry. A refused connection fails at once,
 * a silent server after `timeoutMs`; the error names the URL and the cause.
 */
export async function connectCliBus(natsUrl: string, node: string, timeoutMs = DEFAULT_CONNECT_TIMEOUT_MS, credential?: NatsCredential): Promise<Bus> {
  // A ref'd timer: a CLI with nothing else pending would otherwise exit 0 in silence.
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
  try {
    return await connectBus({
      servers: natsUrl.split(',').map((u) => u.trim()),
      process: 'cli',
      node,
      logger: createLogger({ service: 'cli', level: 'error', stream: process.stderr }),
      provision: false,
      signal: ac.signal,
      failFast: true,
      connectTimeoutMs: timeoutMs,
      ...(credential !== undefined ? { user: credential.user, pass: credential.password } : {}),
    });
  } catch (e) {
    const cause = e instanceof Error ? [e.message, (e.cause as Error | undefined)?.message].filter(Boolean).join(': ') : String(e);
    throw new CliError(`cannot reach NATS at ${safeUrl(natsUrl)}: ${cause}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The nodes the bus knows: one `sl_node` key per node whose sync-loop ran. */
export async function knownNodes(bus: Bus): Promise<string[]> {
  const kv = await bus.kv(Buckets.node, z.unknown());
  return (await kv.list('*'))
    .filter((e) => e.value !== null)
    .map((e) => nodeFromToken(e.key))
    .sort();
}

/**
 * Resolves and connects the target: remote when a NATS URL was given, else the local instance in
 * `stateDir` (an error telling how to start one or to pass --nats-url when there is none).
 */
export async function openTarget(flags: TargetFlags, stateDir: StateDir): Promise<CliTarget> {
  if (flags.natsUrl === undefined) {
    let inst: InstanceInfo;
    try {
      inst = readInstance(stateDir);
    } catch (e) {
      if (e instanceof CliError) throw new CliError(`${e.message}; or reach a running stack with --nats-url (SPLITLET_NATS_URL)`);
      throw e;
    }
    if (flags.nodeName !== undefined && flags.nodeName !== inst.nodeName) {
      throw new CliError(`--node-name ${flags.nodeName} does not match the local instance's node ${inst.nodeName}; give --nats-url to reach another node`);
    }
    // The local instance's NATS takes the CLI's identity from the state dir (written by `splitlet up`).
    const bus = await connectCliBus(inst.natsUrl, inst.nodeName, connectTimeout(flags), flags.credential ?? readCredential(stateDir.root, 'cli'));
    return { bus, natsUrl: inst.natsUrl, nodeName: inst.nodeName, local: { stateDir, inst }, close: () => bus.close() };
  }
  if (flags.nodeName !== undefined) {
    try {
      nodeToken(flags.nodeName);
    } catch (e) {
      throw new CliError(`--node-name: ${(e as Error).message}`);
    }
  }
  const bus = await connectCliBus(flags.natsUrl, flags.nodeName ?? 'cli', connectTimeout(flags), flags.credential);
  try {
    let nodeName = flags.nodeName;
    if (nodeName === undefined) {
      const nodes = await knownNodes(bus);
      if (nodes.length === 0) throw new CliError(`no splitlet node has registered on the NATS at ${flags.natsUrl} yet (is its sync-loop running?); pass --node-name`);
      if (nodes.length > 1) throw new CliError(`several nodes share this NATS (${nodes.join(', ')}): pick one with --node-name (SPLITLET_NODE_NAME)`);
      nodeName = nodes[0]!;
    }
    // A local instance of the same node still serves its log files from disk (the fast path).
    return { bus, natsUrl: flags.natsUrl, nodeName, local: undefined, close: () => bus.close() };
  } catch (e) {
    await bus.close();
    throw e;
  }
}

function connectTimeout(flags: TargetFlags): number {
  return flags.requestTimeoutMs > 0 ? flags.requestTimeoutMs : DEFAULT_CONNECT_TIMEOUT_MS;
}

/** `STREAM_MAX_AGE` of `env` (`parseStreamMaxAges`), a CliError naming what is wrong. */
export function streamMaxAgesOf(env: Readonly<Record<string, string | undefined>>): StreamMaxAges {
  try {
    return parseStreamMaxAges(env['STREAM_MAX_AGE']);
  } catch (e) {
    throw new CliError(`STREAM_MAX_AGE: ${(e as Error).message}`);
  }
}

/**
 * `splitlet provision`: creates or updates every stream and bucket of the topology, as an identity
 * allowed to (`admin`). Compose and k8s run it once before the processes, which may only check it;
 * `streamMaxAges` (`STREAM_MAX_AGE`) must be the processes' own.
 */
export async function provisionTopology(natsUrl: string, credential: NatsCredential | undefined, timeoutMs: number, streamMaxAges: StreamMaxAges = {}): Promise<void> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error(`not done within ${timeoutMs / 1000} s`)), timeoutMs);
  try {
    const bus = await connectBus({
      servers: natsUrl,
      process: 'provision',
      node: 'cli',
      logger: createLogger({ service: 'provision', level: 'warn', stream: process.stderr }),
      signal: ac.signal,
      failFast: true,
      streamMaxAges,
      connectTimeoutMs: Math.min(timeoutMs, DEFAULT_CONNECT_TIMEOUT_MS),
      ...(credential !== undefined ? { user: credential.user, pass: credential.password } : {}),
    });
    await bus.close();
  } catch (e) {
    const cause = e instanceof Error ? [e.message, (e.cause as Error | undefined)?.message].filter(Boolean).join(': ') : String(e);
    throw new CliError(`cannot provision the streams and buckets on NATS at ${safeUrl(natsUrl)}: ${cause}`);
  } finally {
    clearTimeout(timer);
  }
}
