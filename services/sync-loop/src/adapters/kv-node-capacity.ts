/**
 * The node's capacity as the node itself publishes it: `sl_node_capacity`, written by the node's
 * volume-manager (node-local), kept current here by a KV watch. sync-loop never measures the host
 * it runs on for admission: in compose or k8s that host is not the node.
 */
import { Buckets, Keys, NodeCapacity } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { Logger } from '@splitlet/telemetry';

/** How often the missing record is logged again while sync-loop waits for it. */
const WAITING_LOG_EVERY_MS = 30_000;

/** The watched record. */
export interface NodeCapacityView {
  /** Resolves once the node's record exists (pending until then; also after the signal aborted). */
  readonly present: Promise<void>;
  /** The latest record; after a delete, the last one seen (a node does not lose its resources). */
  current(): NodeCapacity | undefined;
  /** Resolves once the watch stopped (after the signal aborted). */
  readonly done: Promise<void>;
}

/**
 * Watches the node's capacity record until `signal` aborts. While it is missing (the node-local
 * side has not started yet), the log names the bucket and key: at info at the first caught-up
 * replay, then a warning every 30 s; arrivals and changes are logged once each.
 */
export async function watchNodeCapacity(bus: Pick<Bus, 'kv'>, node: string, logger: Logger, signal: AbortSignal): Promise<NodeCapacityView> {
  const kv = await bus.kv(Buckets.nodeCapacity, NodeCapacity);
  const key = Keys.node(node);
  let latest: NodeCapacity | undefined;
  let arrived!: () => void;
  const present = new Promise<void>((resolve) => (arrived = resolve));
  let waitingTimer: NodeJS.Timeout | undefined;
  const stopWaitingLog = (): void => clearInterval(waitingTimer);
  signal.addEventListener('abort', stopWaitingLog, { once: true });
  const waiting = { bucket: Buckets.nodeCapacity, key, publisher: 'volume-manager' };

  const { done } = await kv.watch(
    key,
    signal,
    (e) => {
      if (e.value === null) {
        if (latest !== undefined) logger.warn('node capacity record deleted; admission keeps the last one', { ...waiting, allocatable: latest.allocatable });
        return;
      }
      const changed = latest === undefined || JSON.stringify(latest.allocatable) !== JSON.stringify(e.value.allocatable);
      const first = latest === undefined;
      latest = e.value;
      if (first) {
        stopWaitingLog();
        arrived();
      }
      if (changed)
        logger.info(first ? 'node capacity received' : 'node capacity changed', { capacity: latest.capacity, allocatable: latest.allocatable, observedAt: latest.observedAt });
    },
    {
      onCaughtUp: () => {
        if (latest !== undefined || signal.aborted) return;
        // The node starting (volume-manager publishes the record a moment later) is not a warning; still missing 30 s on is.
        logger.info('waiting for the node capacity record; admission starts once it is published', waiting);
        waitingTimer = setInterval(() => logger.warn('still waiting for the node capacity record', waiting), WAITING_LOG_EVERY_MS);
      },
    },
  );
  return { present, current: () => latest, done: done.finally(stopWaitingLog) };
}
