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

/** Node files kuberuntime touches: the resolver config and the pod log directories. */
export interface NodeFiles {
  /** The node's resolv.conf text ('' when the resolver config is disabled). */
  readResolvConf(): Promise<string>;
  /** `mkdir -p`. */
  ensureDir(path: string): Promise<void>;
  /** The entry names of a directory; rejects when it does not exist. */
  listDir(path: string): Promise<string[]>;
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
