/**
 * Request/reply and publish adapters: cri-adapter, volume-manager, status-manager (SL_STATUS) and
 * the event recorder (SL_EVENTS).
 */
import {
  KubeEvent,
  PodStatusUpdate,
  RuntimeKillPodReply,
  RuntimeKillPodRequest,
  RuntimeSyncPodReply,
  RuntimeSyncPodRequest,
  Subjects,
  VolumeMountReply,
  VolumeMountRequest,
  VolumeUnmountReply,
  VolumeUnmountRequest,
} from '@splitlet/api';
import { setTimeout as sleep } from 'node:timers/promises';
import { BusError, isBusError } from '@splitlet/bus';
import type { Bus } from '@splitlet/bus';
import type { EventSink, RuntimeClient, StatusSink, VolumeClient } from '../ports.js';

/** The pauses between requests that found no responder; the last one repeats. */
const NO_RESPONDER_PAUSES_MS = [100, 200, 500, 1000] as const;

/**
 * Sends a request until a responder answers it or `timeoutMs` has passed: a request that finds no
 * responder (the serving process not started yet, or restarting) is sent again after a pause, as
 * the kubelet's calls into its volume manager and runtime wait for them rather than fail. Any other
 * failure rejects at once, and so does no responder when the deadline comes before the next try
 * or `signal` aborted. `send` gets the time left.
 */
export async function untilAnswered<T>(send: (timeoutMs: number) => Promise<T>, timeoutMs: number, signal?: AbortSignal): Promise<T> {
  const start = performance.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await send(Math.max(1, Math.round(timeoutMs - (performance.now() - start))));
    } catch (e) {
      const pause = NO_RESPONDER_PAUSES_MS[Math.min(attempt, NO_RESPONDER_PAUSES_MS.length - 1)]!;
      const waited = performance.now() - start;
      if (!isBusError(e, 'NoResponders') || signal?.aborted === true || waited + pause >= timeoutMs) {
        if (attempt === 0 || !isBusError(e, 'NoResponders')) throw e;
        throw new BusError('NoResponders', `${e.message} (asked ${attempt + 1} times in ${Math.round(waited)} ms)`, { retryable: true, cause: e });
      }
      await sleep(pause, undefined, signal === undefined ? undefined : { signal });
    }
  }
}

/** cri-adapter's `syncPod` / `killPod` over NATS request/reply, waiting for cri-adapter to serve them ({@link untilAnswered}). */
export function busRuntimeClient(bus: Bus, node: string): RuntimeClient {
  return {
    syncPod: (req, timeoutMs, signal) =>
      untilAnswered((t) => bus.request(RuntimeSyncPodRequest, RuntimeSyncPodReply, Subjects.rpc.runtime(node, 'syncPod'), req, { timeoutMs: t }), timeoutMs, signal),
    killPod: (req, timeoutMs, signal) =>
      untilAnswered((t) => bus.request(RuntimeKillPodRequest, RuntimeKillPodReply, Subjects.rpc.runtime(node, 'killPod'), req, { timeoutMs: t }), timeoutMs, signal),
  };
}

/** volume-manager's `mount` / `unmount` over NATS request/reply, waiting for volume-manager to serve them ({@link untilAnswered}). */
export function busVolumeClient(bus: Bus, node: string): VolumeClient {
  return {
    mount: (req, timeoutMs, signal) =>
      untilAnswered((t) => bus.request(VolumeMountRequest, VolumeMountReply, Subjects.rpc.volume(node, 'mount'), req, { timeoutMs: t }), timeoutMs, signal),
    unmount: (req, timeoutMs, signal) =>
      untilAnswered((t) => bus.request(VolumeUnmountRequest, VolumeUnmountReply, Subjects.rpc.volume(node, 'unmount'), req, { timeoutMs: t }), timeoutMs, signal),
  };
}

/** PodStatusUpdates on `sl.<node>.status.<uid>` (stream SL_STATUS). */
export function busStatusSink(bus: Bus, node: string): StatusSink {
  return {
    send: async (update) => {
      await bus.publish(PodStatusUpdate, Subjects.status(node, update.uid), update);
    },
  };
}

/** Events on `sl.<node>.events.<uid>` (stream SL_EVENTS). */
export function busEventSink(bus: Bus, node: string): EventSink {
  return {
    record: async (event) => {
      await bus.publish(KubeEvent, Subjects.events(node, event.involvedObject.uid), event);
    },
  };
}
