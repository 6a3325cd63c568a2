/**
 * `@splitlet/cri`: the CRI v1 client splitlet uses to drive a container runtime, and the server glue
 * to put any implementation behind gRPC (plus what an implementation needs: `AsyncQueue` for the
 * event stream, `CriLogWriter` for container log files).
 */
export { Protocol, MountPropagation, NamespaceMode, ProfileType, PodSandboxState, ContainerState, ContainerEventType } from './types.js';
export type {
  CriInput,
  Int64,
  StringMap,
  VersionRequest,
  VersionResponse,
  StatusRequest,
  StatusResponse,
  RuntimeCondition,
  RuntimeStatus,
  RuntimeHandler,
  RuntimeHandlerFeatures,
  DNSConfig,
  PortMapping,
  ImageSpec,
  Mount,
  NamespaceOption,
  Int64Value,
  UInt64Value,
  SELinuxOption,
  SecurityProfile,
  KeyValue,
  HugepageLimit,
  LinuxContainerResources,
  ContainerResources,
  LinuxSandboxSecurityContext,
  LinuxPodSandboxConfig,
  PodSandboxMetadata,
  PodSandboxConfig,
  RunPodSandboxRequest,
  RunPodSandboxResponse,
  StopPodSandboxRequest,
  StopPodSandboxResponse,
  RemovePodSandboxRequest,
  RemovePodSandboxResponse,
  PodSandboxStatusRequest,
  PodSandboxStatusResponse,
  PodIP,
  PodSandboxNetworkStatus,
  Namespace,
  LinuxPodSandboxStatus,
  PodSandboxStatus,
  PodSandboxStateValue,
  PodSandboxFilter,
  ListPodSandboxRequest,
  ListPodSandboxResponse,
  PodSandbox,
  Capability,
  LinuxContainerSecurityContext,
  LinuxContainerConfig,
  ContainerMetadata,
  Device,
  ContainerConfig,
  CreateContainerRequest,
  CreateContainerResponse,
  StartContainerRequest,
  StartContainerResponse,
  StopContainerRequest,
  StopContainerResponse,
  RemoveContainerRequest,
  RemoveContainerResponse,
  ContainerStateValue,
  ContainerFilter,
  ListContainersRequest,
  ListContainersResponse,
  Container,
  ContainerStatusRequest,
  ContainerStatusResponse,
  ContainerStatus,
  ExecSyncRequest,
  ExecSyncResponse,
  GetEventsRequest,
  ContainerEventResponse,
  ImageFilter,
  ListImagesRequest,
  ListImagesResponse,
  Image,
  ImageStatusRequest,
  ImageStatusResponse,
  AuthConfig,
  PullImageRequest,
  PullImageResponse,
  RemoveImageRequest,
  RemoveImageResponse,
  ImageFsInfoRequest,
  ImageFsInfoResponse,
  FilesystemIdentifier,
  FilesystemUsage,
} from './types.js';
export { CriMethods, CriStreamingMethods, CRI_PACKAGE, isCriMethod, criOperationType, criFullMethodName } from './services.js';
export type { RuntimeService, ImageService, CallOptions, ContainerEventStream, CriServiceName, CriMethod, RuntimeMethod, ImageMethod } from './services.js';
export { CriError, CriErrorCodes, GrpcStatusOf, isCriError, criErrorCodeFromGrpc, parseCriErrorCode } from './cri-error.js';
export type { CriErrorCode, CriErrorOptions } from './cri-error.js';
export { GrpcRuntimeService, DEFAULT_CRI_TIMEOUT_MS, criErrorFromGrpc } from './grpc-runtime-service.js';
export type { GrpcRuntimeServiceOptions } from './grpc-runtime-service.js';
export { dialRuntime } from './dial-runtime.js';
export type { DialRetry } from './dial-runtime.js';
export { parseCriLogLine } from './cri-log.js';
export type { CriLogRecord } from './cri-log.js';
export { instrument } from './instrument.js';
export type { InstrumentOptions, CriCallRecord } from './instrument.js';
export { serveCri, serveCriOwned } from './serve-cri.js';
export type { CriServer, OwnedCriServer } from './serve-cri.js';
export { CRI_PROTO_PATH } from './proto.js';
export { criMessageEncoder, encodeRepeatedField, withWireBytes, wireBytesOf } from './wire-bytes.js';
export { AsyncQueue } from './async-queue.js';
export { normalizeImageRef } from './image-reference.js';
export type { ImageReference } from './image-reference.js';
export { CriLogWriter, formatRfc3339Nano, nowNs } from './cri-log-writer.js';
export type { OutputSink } from './cri-log-writer.js';
