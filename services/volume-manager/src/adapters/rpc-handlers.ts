/**
 * Binds volume-manager's request/reply endpoints (queue group `volume-manager`):
 * `sl.<node>.rpc.volume.{mount,unmount,cleanup}`. Decoding, validation, dead-lettering of malformed
 * requests and the SERVER span are the bus's; this file only maps requests to the domain.
 */
import { Subjects, VolumeCleanupReply, VolumeCleanupRequest, VolumeMountReply, VolumeMountRequest, VolumeUnmountReply, VolumeUnmountRequest } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import type { VolumeManager } from '../volumes/volume-manager.js';

/** The NATS queue group every volume-manager replica of a node joins. */
export const VOLUME_MANAGER_QUEUE = 'volume-manager';

/** Serves the three volume operations until `signal` aborts. */
export function serveVolumeRpc(bus: Bus, node: string, vm: VolumeManager, signal: AbortSignal): void {
  const opts = { queue: VOLUME_MANAGER_QUEUE, signal };
  bus.serve(Subjects.rpc.volume(node, 'mount'), VolumeMountRequest, VolumeMountReply, (req) => vm.mount(req.pod, req.fence), opts);
  bus.serve(Subjects.rpc.volume(node, 'unmount'), VolumeUnmountRequest, VolumeUnmountReply, (req) => vm.unmount(req.uid, req.removeContent, req.fence), opts);
  bus.serve(Subjects.rpc.volume(node, 'cleanup'), VolumeCleanupRequest, VolumeCleanupReply, (req) => vm.cleanup(req.keep), opts);
}
