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
import type { Bus } from '@splitlet/bus';
import { createLogger } from '@splitlet/telemetry';
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
}

/** The NATS URL and node name from flags, then `SPLITLET_NATS_URL` / `SPLITLET_NODE_NAME`. */
export function targetFlags(values: { 'nats-url'?: string | undefined; 'node-name'?: string | undefined }, env: NodeJS.ProcessEnv): TargetFlags {
  return {
    natsUrl: values['nats-url'] ?? (env['SPLITLET_NATS_URL'] || undefined),
    nodeName: values['node-name'] ?? (env['SPLITLET_NODE_NAME'] || undefined),
  };
}

const CONNECT_TIMEOUT_MS = 10_000;

/** Connects as a short-lived CLI client; a NATS that does not answer within 10 s is an error naming it. */
export async function connectCliBus(natsUrl: string, node: string): Promise<Bus> {
  // A ref'd timer: the bus's retry timers are unref'd, and a CLI with nothing else pending would
  // otherwise exit 0 in silence while NATS is unreachable.
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error('timed out')), CONNECT_TIMEOUT_MS);
  try {
    return await connectBus({
      servers: natsUrl,
      process: 'cli',
      node,
      logger: createLogger({ service: 'cli', level: 'error', stream: process.stderr }),
      provision: false,
      signal: ac.signal,
    });
  } catch (e) {
    const safe = natsUrl.replace(/\/\/[^/@]*@/, '//');
    throw new CliError(`cannot reach NATS at ${safe} within ${CONNECT_TIMEOUT_MS / 1000} s: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The nodes the bus knows: one `sl_node` key per node whose sync-loop ran. */
export async function knownNodes(bus: Bus): Promise<string[]> {
  const kv = await bus.kv(Buckets.node, z.unknown());
  return (await kv.list('*')).filter((e) => e.value !== null).map((e) => nodeFromToken(e.key)).sort();
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
    const bus = await connectCliBus(inst.natsUrl, inst.nodeName);
    return { bus, natsUrl: inst.natsUrl, nodeName: inst.nodeName, local: { stateDir, inst }, close: () => bus.close() };
  }
  if (flags.nodeName !== undefined) {
    try {
      nodeToken(flags.nodeName);
    } catch (e) {
      throw new CliError(`--node-name: ${(e as Error).message}`);
    }
  }
  const bus = await connectCliBus(flags.natsUrl, flags.nodeName ?? 'cli');
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
