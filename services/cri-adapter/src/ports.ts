/**
 * The narrow interfaces the cri-adapter's domain consumes. Adapters and `main` provide them; tests
 * provide fakes. Nothing here knows which runtime is behind the CRI.
 */
import type { ImageService, RuntimeService } from '@splitlet/cri';

/** The CRI RuntimeService calls kuberuntime makes. */
export type CriRuntime = Pick<
  RuntimeService,
  | 'Version'
  | 'Status'
  | 'RunPodSandbox'
  | 'StopPodSandbox'
  | 'RemovePodSandbox'
  | 'PodSandboxStatus'
  | 'ListPodSandbox'
  | 'CreateContainer'
  | 'StartContainer'
  | 'StopContainer'
  | 'ListContainers'
  | 'ContainerStatus'
  | 'RemoveContainer'
  | 'ExecSync'
>;

/** The CRI ImageService calls the image manager makes. */
export type CriImages = Pick<ImageService, 'ImageStatus' | 'PullImage'>;

/** The pod an event is about. */
export interface EventPodRef {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

/** One Kubernetes event as the domain records it (the adapter adds source, time and publishes it). */
export interface PodEvent {
  readonly pod: EventPodRef;
  /** `spec.containers{<name>}` / `spec.initContainers{<name>}` for a container event. */
  readonly fieldPath?: string;
  readonly eventType: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/**
 * Records events (the kubelet's EventRecorder). Fire and forget: recording never fails the caller
 * and never blocks it; events of one pod keep their order.
 */
export interface EventRecorder {
  record(event: PodEvent): void;
}

/** Persists a JSON state document (the backoff tables) across restarts. */
export interface StateStore<T> {
  load(): Promise<T | undefined>;
  save(state: T): Promise<void>;
}

/**
 * Node files kuberuntime touches: the resolver config, the pod log directories, the kubelet-managed
 * files in the pod directory (`etc-hosts`, termination-message files) and, for container statuses,
 * termination-message files and container logs.
 *
 * Failures reject with an error whose message reads like the Go kubelet's (`open <path>: permission
 * denied`) and whose `code` is the errno name (`ENOENT` …).
 */
export interface NodeFiles {
  /** The node's resolv.conf text ('' when the resolver config is disabled). */
  readResolvConf(): Promise<string>;
  /** The node's hosts file (`/etc/hosts`), for hostNetwork pods. */
  readNodeHostsFile(): Promise<Buffer>;
  /** `mkdir -p` with `mode` for the directories it creates. @default 0o755 */
  ensureDir(path: string, mode?: number): Promise<void>;
  /** The entry names of a directory; rejects when it does not exist. */
  listDir(path: string): Promise<string[]>;
  /** Creates or truncates a file with `data`, then sets `mode` whatever the umask (os.WriteFile + Chmod). */
  writeFile(path: string, data: string | Uint8Array, mode: number): Promise<void>;
  /** At most the last `max` bytes of a file; empty for an empty file. Models tail.ReadAtMost. */
  readAtMost(path: string, max: number): Promise<Buffer>;
  /**
   * The bytes of a CRI container log from the start of its last `lines` complete lines to the end
   * (an unterminated last line included). Models the file part of the kubelet's logs.ReadLogs with
   * TailLines (symlinks resolved, tail.FindTailLineStartIndex); its errors carry ReadLogs' texts
   * (`failed to open log file "<path>": …`).
   */
  readLogTail(path: string, lines: number): Promise<Buffer>;
}

/**
 * A secret as {@link PullSecretSource} returns it: type and data, each value decoded to text (the
 * API's base64 already undone). Only ever held in the cri-adapter's memory: never logged, traced,
 * published or put in an error.
 */
export interface PullSecret {
  readonly namespace: string;
  readonly name: string;
  /** e.g. `kubernetes.io/dockerconfigjson`. */
  readonly type: string;
  readonly data: Readonly<Record<string, string>>;
}

/**
 * Where pod pull secrets come from, by namespace and name (the kubelet's secretManager.GetSecret).
 * Standalone mode has no API server and finds none; cluster mode plugs in a source backed by the API
 * server (a watch or cache, as the kubelet's secret manager). Rejects when the secret cannot be had:
 * a CredentialError `PullSecretNotFound`, or `PullSecretUnavailable` when the source is down; the
 * message names the secret, never its data.
 */
export interface PullSecretSource {
  getSecret(namespace: string, name: string): Promise<PullSecret>;
}

/** The log files container garbage collection removes: dead containers' logs and gone pods' log directories. */
export interface LogFileRemover {
  /** The entry names of a directory; rejects when it does not exist (`code` ENOENT). */
  listDir(path: string): Promise<string[]>;
  /** Removes one file; a missing file is not an error. */
  removeFile(path: string): Promise<void>;
  /** Removes a directory and everything in it; a missing one is not an error. */
  removeAll(path: string): Promise<void>;
}

/** The newest accepted fence epoch per partition, persisted across restarts (bucket `sl_cri_fences`). */
export interface FenceStore {
  /** Every partition's stored epoch for this node. */
  load(): Promise<ReadonlyMap<number, number>>;
  /** Stores `epoch` as the partition's newest (callers only ever raise it). */
  save(partition: number, epoch: number): Promise<void>;
}
