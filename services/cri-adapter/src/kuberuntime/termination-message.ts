/**
 * Termination messages: the file a container may write its last words to (created empty for each
 * container instance and mounted at `terminationMessagePath`), and reading it — or the tail of the
 * container's log — into the status of an exited container.
 *
 * Models pkg/kubelet/kuberuntime/kuberuntime_container.go (makeMounts' termination-log part,
 * makeUID, getTerminationMessage, readLastStringFromContainerLogs, convertToKubeContainerStatus),
 * pkg/kubelet/kubelet_pods.go (the PodContainerDir part of GenerateRunContainerOptions),
 * pkg/kubelet/container/runtime.go (the MaxContainerTerminationMessage* limits) and the CRI log
 * reading of pkg/kubelet/kuberuntime/logs/logs.go (ReadLogs; the line parser is `parseCriLogLine`).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Container } from '@splitlet/api';
import type { ContainerStatus as CriContainerStatus, CriInput, Mount } from '@splitlet/cri';
import { parseCriLogLine } from '@splitlet/cri';
import type { Logger } from '@splitlet/telemetry';
import type { NodeFiles } from '../ports.js';

/** The API default of `terminationMessagePath`. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/** The most bytes of a termination-message file that are read (the last ones). */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH = 4 * 1024;
/** The most bytes of log output that become the message (FallbackToLogsOnError; the last ones). */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH = 2 * 1024;
/** The most log lines that become the message. */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES = 80;

/** The exit reason of a container that could not even be started (no logs to fall back to). */
const CONTAINER_CANNOT_RUN = 'ContainerCannotRun';

/** The container's termination-message path, defaulted as the API server does. */
export function terminationMessagePathOf(container: Container): string {
  return container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
}

/** The container's termination-message policy, defaulted as the API server does. */
export function terminationMessagePolicyOf(container: Container): string {
  return container.terminationMessagePolicy ?? 'File';
}

/** `<podDir>/containers/<container>`. Models kubelet.getPodContainerDir. */
export function podContainerDir(podDir: string, containerName: string): string {
  return join(podDir, 'containers', containerName);
}

/** Eight random hex digits. Models kuberuntime.makeUID. */
export function makeUid(): string {
  return randomBytes(4).toString('hex');
}

/** What {@link makeTerminationMessageMount} needs. */
export interface TerminationMessageMountInput {
  readonly container: Container;
  readonly podDir: string;
  /** @default {@link makeUid} */
  readonly uid?: () => string;
}

/**
 * For a container with a termination-message path: creates `<podDir>/containers/<name>` (0750),
 * then an empty file named by a random 8-hex id in it (mode 0666 whatever the umask; a new file for
 * every instance of the container), and returns the read-write mount of that file at the path.
 * A failure is logged and the container runs without the mount (undefined), as in the kubelet.
 *
 * Models the PodContainerDir part of Kubelet.GenerateRunContainerOptions and the termination-log
 * part of kubeGenericRuntimeManager.makeMounts.
 */
export async function makeTerminationMessageMount(
  files: Pick<NodeFiles, 'ensureDir' | 'writeFile'>,
  logger: Logger,
  input: TerminationMessageMountInput,
): Promise<CriInput<Mount> | undefined> {
  const { container } = input;
  const containerPath = terminationMessagePathOf(container);
  if (containerPath === '') return undefined;
  const dir = podContainerDir(input.podDir, container.name);
  try {
    await files.ensureDir(dir, 0o750);
  } catch (e) {
    logger.error('Error on creating dir', { path: dir, err: e });
    return undefined;
  }
  const hostPath = join(dir, (input.uid ?? makeUid)());
  try {
    await files.writeFile(hostPath, '', 0o666);
  } catch (e) {
    logger.error(`error on creating termination-log file ${JSON.stringify(hostPath)}`, { err: e });
    return undefined;
  }
  return { containerPath, hostPath, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' };
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * The termination message in the file mounted at `path` (the status mount whose container path is
 * `path`), at most its last 4096 bytes, and whether the logs should be read instead: no path, no
 * such mount or no such file → '' and `fallbackToLogs`; an empty file → '' and `fallbackToLogs`;
 * a read error → "Error on reading termination log <file>: <err>" and no fallback.
 *
 * Models kuberuntime.getTerminationMessage.
 */
export async function getTerminationMessage(
  files: Pick<NodeFiles, 'readAtMost'>,
  mounts: readonly Pick<Mount, 'containerPath' | 'hostPath'>[],
  path: string,
  fallbackToLogs: boolean,
): Promise<{ message: string; checkLogs: boolean }> {
  if (path === '') return { message: '', checkLogs: fallbackToLogs };
  const mount = mounts.find((m) => m.containerPath === path);
  if (mount === undefined) return { message: '', checkLogs: fallbackToLogs };
  let data: Buffer;
  try {
    data = await files.readAtMost(mount.hostPath, MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH);
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT') return { message: '', checkLogs: fallbackToLogs };
    return { message: `Error on reading termination log ${mount.hostPath}: ${errText(e)}`, checkLogs: false };
  }
  return { message: data.toString('utf8'), checkLogs: fallbackToLogs && data.length === 0 };
}

/**
 * The output in the tail of a CRI log (stdout and stderr in file order, partial lines joined), at
 * most its last 2048 bytes. Lines that are not in the CRI format are skipped; when the first one is
 * not, the log is unreadable (`failed to get parse function: unsupported log format: "<line>"`).
 * Only the CRI format is read (containerd and CRI-O write it; the Docker JSON format is not).
 *
 * Models the output side of logs.ReadLogs into the circular buffer of readLastStringFromContainerLogs.
 */
export function lastStringFromCriLog(tail: Buffer): string {
  const parts: Buffer[] = [];
  let start = 0;
  let first = true;
  while (start < tail.length) {
    const nl = tail.indexOf(0x0a, start);
    const end = nl < 0 ? tail.length : nl + 1;
    const line = tail.subarray(start, end);
    start = end;
    const content = parseCriLogLine(line)?.content;
    if (content === undefined) {
      if (first) throw new Error(`failed to get parse function: unsupported log format: ${JSON.stringify(line.toString('utf8'))}`);
      continue;
    }
    first = false;
    parts.push(content);
  }
  return Buffer.concat(parts).subarray(-MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH).toString('utf8');
}

/**
 * The last 80 lines (at most 2048 bytes) of the container's output from its CRI log, or
 * "Error on reading termination message from logs: <err>".
 *
 * Models kubeGenericRuntimeManager.readLastStringFromContainerLogs.
 */
export async function readLastStringFromContainerLogs(files: Pick<NodeFiles, 'readLogTail'>, logPath: string): Promise<string> {
  try {
    return lastStringFromCriLog(await files.readLogTail(logPath, MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES));
  } catch (e) {
    return `Error on reading termination message from logs: ${errText(e)}`;
  }
}

/** What the annotations of an exited container say about its termination message. */
export interface TerminationMessageSettings {
  /** The annotated `terminationMessagePath` ('' when missing: no message). */
  readonly path: string;
  /** The annotated `terminationMessagePolicy` ('' when missing: File). */
  readonly policy: string;
}

/**
 * The status message of an exited container: the runtime's message enriched with the termination
 * message — the file's content, or, with FallbackToLogsOnError and a failure (exit code ≠ 0, not
 * ContainerCannotRun), the log tail when the file is missing or empty — joined by ": " when both
 * are non-empty. Never reads anything for a container that has not exited.
 *
 * Models kubeGenericRuntimeManager.convertToKubeContainerStatus.
 */
export async function exitedContainerMessage(
  files: Pick<NodeFiles, 'readAtMost' | 'readLogTail'>,
  status: Pick<CriContainerStatus, 'state' | 'exitCode' | 'reason' | 'message' | 'mounts' | 'logPath'>,
  settings: TerminationMessageSettings,
): Promise<string> {
  if (status.state !== 'CONTAINER_EXITED') return status.message;
  const fallbackToLogs = settings.policy === 'FallbackToLogsOnError' && status.exitCode !== 0 && status.reason !== CONTAINER_CANNOT_RUN;
  const fromFile = await getTerminationMessage(files, status.mounts, settings.path, fallbackToLogs);
  const message = fromFile.checkLogs ? await readLastStringFromContainerLogs(files, status.logPath) : fromFile.message;
  if (message === '') return status.message;
  return status.message === '' ? message : `${status.message}: ${message}`;
}
