/**
 * The work stream adapter: one durable pull consumer per owned partition
 * (`pod-worker-<node>-<pp>` on SL_WORK, filter `sl.<node>.work.<pp>.*`, manual ack). The handler
 * only validates and records the poke; the pod workers ack it once a covering sync completes.
 * A poke whose UID is not the subject's last token or belongs to another partition is dead-lettered.
 */
import { WorkPoke, partitionOf } from '@splitlet/api';
import { CONSUMERS, type Bus } from '@splitlet/bus';
import { PodWorkerError } from '../errors.js';
import type { WorkSource } from '../ports.js';

/** Options of {@link busWorkSource}. */
export interface WorkSourceOptions {
  readonly node: string;
  readonly partitions: number;
  /** @default 30000 */
  readonly ackWaitMs?: number;
  /** Messages the handler may hold un-acked per partition. @default 1000 */
  readonly maxAckPending?: number;
}

/** WorkSource over Bus.consume. */
export function busWorkSource(bus: Bus, o: WorkSourceOptions): WorkSource {
  return {
    consume: (partition, signal, onPoke) =>
      bus.consume(
        WorkPoke,
        {
          ...CONSUMERS.podWorkerPartition(o.node, partition, {
            ...(o.ackWaitMs !== undefined ? { ackWaitMs: o.ackWaitMs } : {}),
            ...(o.maxAckPending !== undefined ? { maxAckPending: o.maxAckPending } : {}),
          }),
          autoAck: false,
          concurrency: 256,
          signal,
        },
        async (d) => {
          const token = d.subject.slice(d.subject.lastIndexOf('.') + 1);
          if (token !== d.data.uid || partitionOf(d.data.uid, o.partitions) !== partition) {
            throw new PodWorkerError(
              'SyncFailed',
              `poke on ${d.subject} names pod ${d.data.uid}, which is not this subject's pod or not in partition ${partition} of ${o.partitions}`,
            );
          }
          onPoke(
            d.data.uid,
            d.data.kind,
            {
              ack: () => d.ack(),
              nak: (ms) => d.nak(ms),
              working: () => d.working(),
              context: d.context,
            },
            { desired: d.data.desiredRevision, kill: d.data.killRevision },
          );
        },
      ),
  };
}
