/**
 * What sync-loop publishes and requests on the bus: work pokes (`SL_WORK`), status updates of
 * rejected pods (`SL_STATUS`), events (`SL_EVENTS`), volume-manager's `cleanup` and cri-adapter's
 * `garbageCollect`.
 */
import { ROOT_CONTEXT, context, type Context } from '@opentelemetry/api';
import {
  KubeEvent,
  PodStatusUpdate,
  RuntimeGarbageCollectReply,
  RuntimeGarbageCollectRequest,
  Subjects,
  VolumeCleanupReply,
  VolumeCleanupRequest,
  WorkPoke,
  nodeToken,
  partitionOf,
  type SyncPodType,
} from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { unsampledContext } from '@splitlet/telemetry';
import type { EventRecorder, RuntimeGarbageCollector, StatusSink, VolumeCleaner, WorkPoker } from '../ports.js';

type Publisher = Pick<Bus, 'publish'>;

/** Options of {@link createBusWorkPoker}. */
export interface BusWorkPokerOptions {
  /** The leader's fence, called as each poke is built; what it returns is stamped on the poke. */
  readonly admit?: (what: string) => { leaderEpoch: number; fencedAt: number };
  /** The revision of the pod's `sl_desired` record as sync-loop last wrote it (`WorkPoke.desiredRevision`). */
  readonly desiredRevision?: (uid: string) => number | undefined;
  /** The revision of the pod's `sl_kill` request as sync-loop last wrote or saw it, 0 for none (`WorkPoke.killRevision`). */
  readonly killRevision?: (uid: string) => number | undefined;
}

/**
 * Pokes `sl.<node>.work.<partition>.<uid>`; the poke carries `ctx` (default: active) as its trace
 * parent, the revisions of the pod's desired record and kill request, and what the fence stamps on it.
 */
export function createBusWorkPoker(bus: Publisher, node: string, partitions: number, o: BusWorkPokerOptions = {}): WorkPoker {
  return {
    async poke(uid: string, kind: SyncPodType, ctx?: Context): Promise<void> {
      const desiredRevision = o.desiredRevision?.(uid);
      const killRevision = o.killRevision?.(uid);
      const poke: WorkPoke = {
        type: 'kubelet.podworker.WorkPoke.v1',
        uid,
        kind,
        ...(desiredRevision !== undefined ? { desiredRevision } : {}),
        ...(killRevision !== undefined ? { killRevision } : {}),
        ...o.admit?.(`work poke for pod ${uid}`),
      };
      await bus.publish(WorkPoke, Subjects.work(node, partitionOf(uid, partitions), uid), poke, ctx === undefined ? {} : { ctx });
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

/**
 * Publishes events on `sl.<node>.events.<uid>`; a Node event (whose uid is the node name, dots
 * allowed) on `sl.<node>.events.<node token>`.
 */
export function createBusEventRecorder(bus: Publisher, node: string): EventRecorder {
  return {
    async record(event: KubeEvent): Promise<void> {
      const o = event.involvedObject;
      await bus.publish(KubeEvent, Subjects.events(node, o.kind === 'Node' ? nodeToken(o.uid) : o.uid), event);
    },
  };
}

/**
 * Requests `sl.<node>.rpc.volume.cleanup`, untraced: it runs every housekeeping pass. The request
 * carries an unsampled trace context (not merely none), so volume-manager records no span either.
 */
export function createBusVolumeCleaner(bus: Pick<Bus, 'request'>, node: string, timeoutMs: number): VolumeCleaner {
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

/**
 * Requests `sl.<node>.rpc.runtime.garbageCollect` in the active context (the run's span). A run may
 * wait for pods' operations in progress, so the deadline is long; cri-adapter's progress beats tell
 * a slow run from a dead responder.
 */
export function createBusRuntimeGarbageCollector(bus: Pick<Bus, 'request'>, node: string, timeoutMs: number): RuntimeGarbageCollector {
  const subject = Subjects.rpc.runtime(node, 'garbageCollect');
  return {
    garbageCollect: (request) => bus.request(RuntimeGarbageCollectRequest, RuntimeGarbageCollectReply, subject, request, { timeoutMs }),
  };
}
