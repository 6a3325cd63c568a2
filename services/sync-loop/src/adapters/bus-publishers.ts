/**
 * What sync-loop publishes and requests on the bus: work pokes (`SL_WORK`), status updates of
 * rejected pods (`SL_STATUS`), events (`SL_EVENTS`), and volume-manager's `cleanup`.
 */
import { ROOT_CONTEXT, context, type Context } from '@opentelemetry/api';
import {
  KubeEvent,
  PodStatusUpdate,
  Subjects,
  VolumeCleanupReply,
  VolumeCleanupRequest,
  WorkPoke,
  partitionOf,
  type SyncPodType,
} from '@splitlet/api';
import type { NatsBus } from '@splitlet/bus';
import { unsampledContext } from '@splitlet/telemetry';
import type { EventRecorder, StatusSink, VolumeCleaner, WorkPoker } from '../ports.js';

type Publisher = Pick<NatsBus, 'publish'>;

/** Pokes `sl.<node>.work.<partition>.<uid>`; the poke carries `ctx` (default: active) as its trace parent. */
export function createBusWorkPoker(bus: Publisher, node: string, partitions: number): WorkPoker {
  return {
    async poke(uid: string, kind: SyncPodType, ctx?: Context): Promise<void> {
      await bus.publish(WorkPoke, Subjects.work(node, partitionOf(uid, partitions), uid), { type: 'kubelet.podworker.WorkPoke.v1', uid, kind }, ctx === undefined ? {} : { ctx });
    },
  };
}

/** Publishes status updates on `sl.<node>.status.<uid>`. */
export function createBusStatusSink(bus: Publisher, node: string): StatusSink {
  return {
    async publish(update: PodStatusUpdate): Promise<void> {
      await bus.publish(PodStatusUpdate, Subjects.status(node, update.uid), update);
    },
  };
}

/** Publishes events on `sl.<node>.events.<uid>`. */
export function createBusEventRecorder(bus: Publisher, node: string): EventRecorder {
  return {
    async record(event: KubeEvent): Promise<void> {
      await bus.publish(KubeEvent, Subjects.events(node, event.involvedObject.uid), event);
    },
  };
}

/**
 * Requests `sl.<node>.rpc.volume.cleanup`, untraced: it runs every housekeeping pass. The request
 * carries an unsampled trace context (not merely none), so volume-manager records no span either.
 */
export function createBusVolumeCleaner(bus: Pick<NatsBus, 'request'>, node: string, timeoutMs: number): VolumeCleaner {
  const subject = Subjects.rpc.volume(node, 'cleanup');
  return {
    async cleanup(keep: readonly string[]): Promise<readonly string[]> {
      const reply = await context.with(unsampledContext(ROOT_CONTEXT), () =>
        bus.request(VolumeCleanupRequest, VolumeCleanupReply, subject, { type: 'kubelet.volume.CleanupRequest.v1', keep: [...keep] }, { timeoutMs }),
      );
      return reply.removed;
    },
  };
}
