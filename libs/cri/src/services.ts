/**
 * The CRI contract as splitlet consumes it: `RuntimeService` and `ImageService`, split as in
 * cri-api `pkg/apis/services.go`, one method per RPC, taking the request message and returning the
 * response message.
 *
 * Models k8s.io/cri-api/pkg/apis/services.go (with request/response objects instead of Go arguments).
 */
import type {
  ContainerEventResponse,
  ContainerStatusRequest,
  ContainerStatusResponse,
  CreateContainerRequest,
  CreateContainerResponse,
  CriInput,
  ExecSyncRequest,
  ExecSyncResponse,
  GetEventsRequest,
  ImageFsInfoRequest,
  ImageFsInfoResponse,
  ImageStatusRequest,
  ImageStatusResponse,
  ListContainersRequest,
  ListContainersResponse,
  ListImagesRequest,
  ListImagesResponse,
  ListPodSandboxRequest,
  ListPodSandboxResponse,
  PodSandboxStatusRequest,
  PodSandboxStatusResponse,
  PullImageRequest,
  PullImageResponse,
  RemoveContainerRequest,
  RemoveContainerResponse,
  RemoveImageRequest,
  RemoveImageResponse,
  RemovePodSandboxRequest,
  RemovePodSandboxResponse,
  RunPodSandboxRequest,
  RunPodSandboxResponse,
  StartContainerRequest,
  StartContainerResponse,
  StatusRequest,
  StatusResponse,
  StopContainerRequest,
  StopContainerResponse,
  StopPodSandboxRequest,
  StopPodSandboxResponse,
  VersionRequest,
  VersionResponse,
} from './types.js';

/** Per-call options. */
export interface CallOptions {
  /**
   * How long this call may take, in milliseconds, before it fails with `DeadlineExceeded`.
   * @default the client's `timeoutMs` (2 minutes, the kubelet's runtimeRequestTimeout); no limit for streams
   */
  deadlineMs?: number;
  /** Aborting cancels the call; it then fails with `Canceled` (a stream just ends). */
  signal?: AbortSignal;
}

/** The result of `GetContainerEvents`: events as an async iterable, plus when the subscription is live. */
export interface ContainerEventStream extends AsyncIterable<ContainerEventResponse> {
  /**
   * Resolves once the runtime accepted the subscription: every event after that point is delivered.
   * Rejects (with a CriError) if the call fails first.
   */
  readonly established: Promise<void>;
}

/**
 * Sandbox and container lifecycle. Every method may be called concurrently. Failures are
 * {@link CriError}s (check them with `isCriError(e, 'NotFound')`).
 */
export interface RuntimeService {
  /** The runtime's name and version. */
  Version(request: CriInput<VersionRequest>, options?: CallOptions): Promise<VersionResponse>;
  /** Creates and starts a sandbox; each call makes a new one (the name `<name>_<ns>_<uid>_<attempt>` must be free). */
  RunPodSandbox(request: CriInput<RunPodSandboxRequest>, options?: CallOptions): Promise<RunPodSandboxResponse>;
  /** Kills the sandbox's containers and releases its network. Idempotent for a known sandbox. */
  StopPodSandbox(request: CriInput<StopPodSandboxRequest>, options?: CallOptions): Promise<StopPodSandboxResponse>;
  /** Removes a sandbox and its containers. Idempotent: an unknown id is not an error. */
  RemovePodSandbox(request: CriInput<RemovePodSandboxRequest>, options?: CallOptions): Promise<RemovePodSandboxResponse>;
  /** A sandbox's status; `NotFound` for an unknown id. */
  PodSandboxStatus(request: CriInput<PodSandboxStatusRequest>, options?: CallOptions): Promise<PodSandboxStatusResponse>;
  /** Sandboxes matching the filter (all fields ANDed). */
  ListPodSandbox(request: CriInput<ListPodSandboxRequest>, options?: CallOptions): Promise<ListPodSandboxResponse>;
  /** Creates a container in a ready sandbox (state CREATED). */
  CreateContainer(request: CriInput<CreateContainerRequest>, options?: CallOptions): Promise<CreateContainerResponse>;
  /** Starts a CREATED container. A failed start leaves it EXITED with reason `StartError`, exit code 128. */
  StartContainer(request: CriInput<StartContainerRequest>, options?: CallOptions): Promise<StartContainerResponse>;
  /** Sends the stop signal, waits up to `timeout` seconds, then SIGKILLs; resolves once the container exited. */
  StopContainer(request: CriInput<StopContainerRequest>, options?: CallOptions): Promise<StopContainerResponse>;
  /** Removes a container, killing it first if it runs. Idempotent: an unknown id is not an error. */
  RemoveContainer(request: CriInput<RemoveContainerRequest>, options?: CallOptions): Promise<RemoveContainerResponse>;
  /** Containers matching the filter (all fields ANDed). */
  ListContainers(request: CriInput<ListContainersRequest>, options?: CallOptions): Promise<ListContainersResponse>;
  /** A container's status; `NotFound` for an unknown id. */
  ContainerStatus(request: CriInput<ContainerStatusRequest>, options?: CallOptions): Promise<ContainerStatusResponse>;
  /** Runs a command in a running container and returns its output and exit code. */
  ExecSync(request: CriInput<ExecSyncRequest>, options?: CallOptions): Promise<ExecSyncResponse>;
  /** Runtime conditions (RuntimeReady, NetworkReady). */
  Status(request: CriInput<StatusRequest>, options?: CallOptions): Promise<StatusResponse>;
  /**
   * A stream of container (and sandbox) lifecycle events. The call starts at once and buffers events
   * until they are read; `established` resolves once the runtime has subscribed. The stream ends when
   * `options.signal` aborts or the consumer stops iterating (always do one of the two); a broken
   * connection or a runtime without the RPC (containerd 1.6: `Unimplemented`) throws a CriError.
   */
  GetContainerEvents(request: CriInput<GetEventsRequest>, options?: CallOptions): ContainerEventStream;
}

/** Images on the node. Same error and concurrency rules as {@link RuntimeService}. */
export interface ImageService {
  /** Images matching the filter. */
  ListImages(request: CriInput<ListImagesRequest>, options?: CallOptions): Promise<ListImagesResponse>;
  /** An image's status; `image` is null when it is not present (not an error). */
  ImageStatus(request: CriInput<ImageStatusRequest>, options?: CallOptions): Promise<ImageStatusResponse>;
  /** Pulls an image with optional registry credentials; returns the image ref (`sha256:…`). */
  PullImage(request: CriInput<PullImageRequest>, options?: CallOptions): Promise<PullImageResponse>;
  /** Removes an image. Idempotent. */
  RemoveImage(request: CriInput<RemoveImageRequest>, options?: CallOptions): Promise<RemoveImageResponse>;
  /** Usage of the image filesystem(s). */
  ImageFsInfo(request: CriInput<ImageFsInfoRequest>, options?: CallOptions): Promise<ImageFsInfoResponse>;
}

/** The gRPC service names, as in the proto (`runtime.v1.<name>`). */
export type CriServiceName = 'RuntimeService' | 'ImageService';

/** Every RuntimeService RPC in the subset. */
export type RuntimeMethod = keyof RuntimeService;
/** Every ImageService RPC in the subset. */
export type ImageMethod = keyof ImageService;
/** Every RPC in the subset. */
export type CriMethod = RuntimeMethod | ImageMethod;

/**
 * For each RPC: its service and the kubelet's `operation_type` label on the runtime_operations_*
 * metrics (pkg/kubelet/kuberuntime/instrumented_services.go).
 */
export const CriMethods = {
  Version: { service: 'RuntimeService', operation: 'version' },
  RunPodSandbox: { service: 'RuntimeService', operation: 'run_podsandbox' },
  StopPodSandbox: { service: 'RuntimeService', operation: 'stop_podsandbox' },
  RemovePodSandbox: { service: 'RuntimeService', operation: 'remove_podsandbox' },
  PodSandboxStatus: { service: 'RuntimeService', operation: 'podsandbox_status' },
  ListPodSandbox: { service: 'RuntimeService', operation: 'list_podsandbox' },
  CreateContainer: { service: 'RuntimeService', operation: 'create_container' },
  StartContainer: { service: 'RuntimeService', operation: 'start_container' },
  StopContainer: { service: 'RuntimeService', operation: 'stop_container' },
  RemoveContainer: { service: 'RuntimeService', operation: 'remove_container' },
  ListContainers: { service: 'RuntimeService', operation: 'list_containers' },
  ContainerStatus: { service: 'RuntimeService', operation: 'container_status' },
  ExecSync: { service: 'RuntimeService', operation: 'exec_sync' },
  Status: { service: 'RuntimeService', operation: 'status' },
  GetContainerEvents: { service: 'RuntimeService', operation: 'get_container_events' },
  ListImages: { service: 'ImageService', operation: 'list_images' },
  ImageStatus: { service: 'ImageService', operation: 'image_status' },
  PullImage: { service: 'ImageService', operation: 'pull_image' },
  RemoveImage: { service: 'ImageService', operation: 'remove_image' },
  ImageFsInfo: { service: 'ImageService', operation: 'image_fs_info' },
} as const satisfies Record<CriMethod, { service: CriServiceName; operation: string }>;

/** The RPCs that are server streams (the rest are unary). */
export const CriStreamingMethods: ReadonlySet<CriMethod> = new Set<CriMethod>(['GetContainerEvents']);

/** The proto package of the subset. */
export const CRI_PACKAGE = 'runtime.v1';

/** True if `name` is an RPC of the subset. */
export function isCriMethod(name: string | symbol): name is CriMethod {
  return typeof name === 'string' && Object.hasOwn(CriMethods, name);
}

/** The kubelet's `operation_type` metric label for an RPC, e.g. `RunPodSandbox` → `run_podsandbox`. */
export function criOperationType(method: CriMethod): string {
  return CriMethods[method].operation;
}

/** The gRPC full method name, e.g. `runtime.v1.RuntimeService/RunPodSandbox` (also the span name). */
export function criFullMethodName(method: CriMethod): string {
  return `${CRI_PACKAGE}.${CriMethods[method].service}/${method}`;
}
