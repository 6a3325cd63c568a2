/**
 * Serves `sl.<node>.rpc.logs.read` (queue group `cri-adapter`): chunks of container log files for
 * `splitlet logs` from another host, the kubelet's containerLogs endpoint over the bus.
 */
import { ContainerLogsReply, ContainerLogsRequest, Subjects } from '@splitlet/api';
import type { Bus } from '@splitlet/bus';
import { readContainerLog } from '../logs/container-log-reader.js';
import { CRI_ADAPTER_QUEUE } from './runtime-rpc.js';

/** Binds the endpoint until `signal` aborts; files are read under `podLogDir` only. */
export function serveContainerLogs(bus: Pick<Bus, 'serve'>, node: string, podLogDir: string, signal: AbortSignal): void {
  bus.serve(Subjects.rpc.logs(node), ContainerLogsRequest, ContainerLogsReply, (req) => readContainerLog(podLogDir, req), { queue: CRI_ADAPTER_QUEUE, signal });
}
