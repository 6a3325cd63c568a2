/**
 * Removing a container the way the kubelet does everywhere it removes one (garbage collection,
 * purging and pruning init containers): its log files first, then the container.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_container.go (removeContainer, removeContainerLog) and
 * logs/container_log_manager.go (Clean).
 */
import { basename, dirname, join } from 'node:path';
import { errorMessage } from '@splitlet/api';
import type { Logger } from '@splitlet/telemetry';
import type { CriRuntime, LogFileRemover } from '../ports.js';

/** What {@link removeContainer} uses. */
export interface RemoveContainerDeps {
  readonly runtime: Pick<CriRuntime, 'ContainerStatus' | 'RemoveContainer'>;
  readonly logFiles: Pick<LogFileRemover, 'listDir' | 'removeFile'>;
  readonly logger: Logger;
}

/**
 * Removes the container's log files first — so a container whose logs could not be removed stays
 * and is retried — then the container.
 *
 * Models kubeGenericRuntimeManager.removeContainer.
 */
export async function removeContainer(deps: RemoveContainerDeps, containerId: string): Promise<void> {
  deps.logger.debug('Removing container', { containerID: containerId });
  await removeContainerLog(deps, containerId);
  await deps.runtime.RemoveContainer({ containerId });
}

/**
 * Removes every log file of the container: its log path and the rotated files beside it (the
 * glob `<logPath>*`).
 *
 * Models kubeGenericRuntimeManager.removeContainerLog and containerLogManager.Clean.
 */
async function removeContainerLog(deps: RemoveContainerDeps, containerId: string): Promise<void> {
  const { runtime, logFiles } = deps;
  let logPath: string;
  try {
    const resp = await runtime.ContainerStatus({ containerId });
    if (resp.status === null) throw new Error(`container status is nil for ${JSON.stringify(containerId)}`);
    logPath = resp.status.logPath;
  } catch (e) {
    throw new Error(`failed to get container status ${JSON.stringify(containerId)}: ${errorMessage(e)}`, { cause: e });
  }
  // A container without a log path has no log files (the kubelet's glob of "*" would be the working directory).
  if (logPath === '') return;
  const dir = dirname(logPath);
  const base = basename(logPath);
  let names: string[];
  try {
    names = await logFiles.listDir(dir);
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT') return;
    throw new Error(`failed to list all log files with pattern ${JSON.stringify(`${logPath}*`)}: ${errorMessage(e)}`, { cause: e });
  }
  for (const name of names) {
    if (!name.startsWith(base)) continue;
    const path = join(dir, name);
    try {
      await logFiles.removeFile(path);
    } catch (e) {
      throw new Error(`failed to remove container ${JSON.stringify(containerId)} log ${JSON.stringify(path)}: ${errorMessage(e)}`, { cause: e });
    }
  }
}
