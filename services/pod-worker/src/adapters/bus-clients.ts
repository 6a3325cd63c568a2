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
import type { Bus } from '@splitlet/bus';
import type { EventSink, RuntimeClient, StatusSink, VolumeClient } from '../ports.js';

/** cri-adapter's `syncPod` / `killPod` over NATS request/reply. */
export function busRuntimeClient(bus: Bus, node: string): RuntimeClient {
  return {
    syncPod: (req, timeoutMs) => bus.request(RuntimeSyncPodRequest, RuntimeSyncPodReply, Subjects.rpc.runtime(node, 'syncPod'), req, { timeoutMs }),
    killPod: (req, timeoutMs) => bus.request(RuntimeKillPodRequest, RuntimeKillPodReply, Subjects.rpc.runtime(node, 'killPod'), req, { timeoutMs }),
  };
}

/** volume-manager's `mount` / `unmount` over NATS request/reply. */
export function busVolumeClient(bus: Bus, node: string): VolumeClient {
  return {
    mount: (req, timeoutMs) => bus.request(VolumeMountRequest, VolumeMountReply, Subjects.rpc.volume(node, 'mount'), req, { timeoutMs }),
    unmount: (req, timeoutMs) => bus.request(VolumeUnmountRequest, VolumeUnmountReply, Subjects.rpc.volume(node, 'unmount'), req, { timeoutMs }),
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
