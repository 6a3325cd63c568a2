/**
 * CRI v1 message types for the subset in `proto/api.proto`, in the shape @grpc/proto-loader decodes
 * them with the options in `proto.ts`: camelCase fields, enums as their string names, 64-bit integers
 * as decimal strings, `bytes` as Buffer, and defaults filled in (an absent scalar is `''`/`0`/`false`,
 * an absent repeated field `[]`, an absent map `{}`, an absent message `null`).
 *
 * These are the *decoded* (response) shapes. Requests are written with {@link CriInput}, where every
 * field may be left out, as in proto3.
 *
 * Over ~450 lines on purpose: it mirrors `proto/api.proto` message for message, in the proto's order,
 * so the two are compared side by side; it holds types only.
 *
 * One file on purpose: the CRI's messages mirror api.proto one for one, in its order, so they are checked against the spec side by side.
 */

// ---------------------------------------------------------------------------------------------
// Scalars and enums
// ---------------------------------------------------------------------------------------------

/** A proto `int64`/`uint64` as a decimal string (`longs: String`), e.g. a timestamp in nanoseconds. */
export type Int64 = string;

/** A string-keyed map field (`map<string, string>`). */
export type StringMap = Record<string, string>;

/** `runtime.v1.Protocol`. */
export const Protocol = { TCP: 'TCP', UDP: 'UDP', SCTP: 'SCTP' } as const;
export type Protocol = (typeof Protocol)[keyof typeof Protocol];

/** `runtime.v1.MountPropagation`. */
export const MountPropagation = {
  PRIVATE: 'PROPAGATION_PRIVATE',
  HOST_TO_CONTAINER: 'PROPAGATION_HOST_TO_CONTAINER',
  BIDIRECTIONAL: 'PROPAGATION_BIDIRECTIONAL',
} as const;
/** `runtime.v1.MountPropagation`. */
export type MountPropagation = (typeof MountPropagation)[keyof typeof MountPropagation];

/** `runtime.v1.NamespaceMode`. The kubelet sets NODE for hostNetwork/hostPID/hostIPC pods. */
export const NamespaceMode = { POD: 'POD', CONTAINER: 'CONTAINER', NODE: 'NODE', TARGET: 'TARGET' } as const;
export type NamespaceMode = (typeof NamespaceMode)[keyof typeof NamespaceMode];

/** `runtime.v1.SecurityProfile.ProfileType`. */
export const ProfileType = { RuntimeDefault: 'RuntimeDefault', Unconfined: 'Unconfined', Localhost: 'Localhost' } as const;
export type ProfileType = (typeof ProfileType)[keyof typeof ProfileType];

/** `runtime.v1.PodSandboxState`. */
export const PodSandboxState = { READY: 'SANDBOX_READY', NOTREADY: 'SANDBOX_NOTREADY' } as const;
export type PodSandboxState = (typeof PodSandboxState)[keyof typeof PodSandboxState];

/** `runtime.v1.ContainerState`. */
export const ContainerState = {
  CREATED: 'CONTAINER_CREATED',
  RUNNING: 'CONTAINER_RUNNING',
  EXITED: 'CONTAINER_EXITED',
  UNKNOWN: 'CONTAINER_UNKNOWN',
} as const;
/** `runtime.v1.ContainerState`. */
export type ContainerState = (typeof ContainerState)[keyof typeof ContainerState];

/** `runtime.v1.ContainerEventType`. */
export const ContainerEventType = {
  CREATED: 'CONTAINER_CREATED_EVENT',
  STARTED: 'CONTAINER_STARTED_EVENT',
  STOPPED: 'CONTAINER_STOPPED_EVENT',
  DELETED: 'CONTAINER_DELETED_EVENT',
} as const;
/** `runtime.v1.ContainerEventType`. */
export type ContainerEventType = (typeof ContainerEventType)[keyof typeof ContainerEventType];

// ---------------------------------------------------------------------------------------------
// Input helper
// ---------------------------------------------------------------------------------------------

/**
 * The request form of a message: every field optional, recursively (proto3 has no required fields;
 * an omitted field is its default on the wire). Int64 fields take a decimal string.
 */
export type CriInput<T> = T extends Uint8Array
  ? T
  : T extends readonly (infer U)[]
    ? CriInput<U>[]
    : T extends object
      ? { [K in keyof T]?: CriInput<NonNullable<T[K]>> | undefined }
      : T;

// ---------------------------------------------------------------------------------------------
// Version and Status
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.VersionRequest`. */
export interface VersionRequest {
  /** The kubelet's CRI API version, e.g. `0.1.0`. */
  version: string;
}

/** `runtime.v1.VersionResponse`. */
export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** `runtime.v1.StatusRequest`. */
export interface StatusRequest {
  verbose: boolean;
}

/** `RuntimeReady` and `NetworkReady` are the conditions the kubelet requires. */
export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

/** `runtime.v1.RuntimeStatus`. */
export interface RuntimeStatus {
  conditions: RuntimeCondition[];
}

/** `runtime.v1.RuntimeHandlerFeatures`. */
export interface RuntimeHandlerFeatures {
  recursiveReadOnlyMounts: boolean;
  userNamespaces: boolean;
}

/** `runtime.v1.RuntimeHandler`. */
export interface RuntimeHandler {
  name: string;
  features: RuntimeHandlerFeatures | null;
}

/** `runtime.v1.StatusResponse`. */
export interface StatusResponse {
  status: RuntimeStatus | null;
  info: StringMap;
  runtimeHandlers: RuntimeHandler[];
}

// ---------------------------------------------------------------------------------------------
// Shared pieces
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.DNSConfig`. */
export interface DNSConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

/** `runtime.v1.PortMapping`. */
export interface PortMapping {
  protocol: Protocol;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

/** `runtime.v1.ImageSpec`. */
export interface ImageSpec {
  /** The image reference; the kubelet passes the image id (`sha256:…`) it got from ImageStatus/PullImage. */
  image: string;
  annotations: StringMap;
  userSpecifiedImage: string;
  runtimeHandler: string;
}

/** `runtime.v1.Mount`. */
export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  selinuxRelabel: boolean;
  propagation: MountPropagation;
  recursiveReadOnly: boolean;
  image: ImageSpec | null;
}

/** `runtime.v1.NamespaceOption`. */
export interface NamespaceOption {
  network: NamespaceMode;
  pid: NamespaceMode;
  ipc: NamespaceMode;
  targetId: string;
}

/** `runtime.v1.Int64Value`. */
export interface Int64Value {
  value: Int64;
}

/** `runtime.v1.UInt64Value`. */
export interface UInt64Value {
  value: Int64;
}

/** `runtime.v1.SELinuxOption`. */
export interface SELinuxOption {
  user: string;
  role: string;
  type: string;
  level: string;
}

/** `runtime.v1.SecurityProfile`. */
export interface SecurityProfile {
  profileType: ProfileType;
  localhostRef: string;
}

/** `runtime.v1.KeyValue`. */
export interface KeyValue {
  key: string;
  value: string;
}

/** `runtime.v1.HugepageLimit`. */
export interface HugepageLimit {
  pageSize: string;
  limit: Int64;
}

/** `runtime.v1.LinuxContainerResources`. */
export interface LinuxContainerResources {
  cpuPeriod: Int64;
  cpuQuota: Int64;
  cpuShares: Int64;
  memoryLimitInBytes: Int64;
  oomScoreAdj: Int64;
  cpusetCpus: string;
  cpusetMems: string;
  hugepageLimits: HugepageLimit[];
  unified: StringMap;
  memorySwapLimitInBytes: Int64;
}

/** `runtime.v1.ContainerResources`. */
export interface ContainerResources {
  linux: LinuxContainerResources | null;
}

// ---------------------------------------------------------------------------------------------
// Pod sandboxes
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.LinuxSandboxSecurityContext`. */
export interface LinuxSandboxSecurityContext {
  namespaceOptions: NamespaceOption | null;
  selinuxOptions: SELinuxOption | null;
  runAsUser: Int64Value | null;
  readonlyRootfs: boolean;
  supplementalGroups: Int64[];
  privileged: boolean;
  runAsGroup: Int64Value | null;
  seccomp: SecurityProfile | null;
  apparmor: SecurityProfile | null;
}

/** `runtime.v1.LinuxPodSandboxConfig`. */
export interface LinuxPodSandboxConfig {
  cgroupParent: string;
  securityContext: LinuxSandboxSecurityContext | null;
  sysctls: StringMap;
  overhead: LinuxContainerResources | null;
  resources: LinuxContainerResources | null;
}

/** Identifies a sandbox; a runtime names it `<name>_<namespace>_<uid>_<attempt>`. */
export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

/** `runtime.v1.PodSandboxConfig`. */
export interface PodSandboxConfig {
  metadata: PodSandboxMetadata | null;
  hostname: string;
  /** `/var/log/pods/<namespace>_<name>_<uid>`; container log paths are relative to it. */
  logDirectory: string;
  dnsConfig: DNSConfig | null;
  portMappings: PortMapping[];
  labels: StringMap;
  annotations: StringMap;
  linux: LinuxPodSandboxConfig | null;
}

/** `runtime.v1.RunPodSandboxRequest`. */
export interface RunPodSandboxRequest {
  config: PodSandboxConfig | null;
  runtimeHandler: string;
}

/** `runtime.v1.RunPodSandboxResponse`. */
export interface RunPodSandboxResponse {
  podSandboxId: string;
}

/** `runtime.v1.StopPodSandboxRequest`. */
export interface StopPodSandboxRequest {
  podSandboxId: string;
}

/** `runtime.v1.StopPodSandboxResponse`. */
export type StopPodSandboxResponse = Record<string, never>;

/** `runtime.v1.RemovePodSandboxRequest`. */
export interface RemovePodSandboxRequest {
  podSandboxId: string;
}

/** `runtime.v1.RemovePodSandboxResponse`. */
export type RemovePodSandboxResponse = Record<string, never>;

/** `runtime.v1.PodSandboxStatusRequest`. */
export interface PodSandboxStatusRequest {
  podSandboxId: string;
  verbose: boolean;
}

/** `runtime.v1.PodIP`. */
export interface PodIP {
  ip: string;
}

/** `runtime.v1.PodSandboxNetworkStatus`. */
export interface PodSandboxNetworkStatus {
  ip: string;
  additionalIps: PodIP[];
}

/** `runtime.v1.Namespace`. */
export interface Namespace {
  options: NamespaceOption | null;
}

/** `runtime.v1.LinuxPodSandboxStatus`. */
export interface LinuxPodSandboxStatus {
  namespaces: Namespace | null;
}

/** `runtime.v1.PodSandboxStatus`. */
export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata | null;
  state: PodSandboxState;
  /** Nanoseconds since the epoch. */
  createdAt: Int64;
  network: PodSandboxNetworkStatus | null;
  linux: LinuxPodSandboxStatus | null;
  labels: StringMap;
  annotations: StringMap;
  runtimeHandler: string;
}

/** `runtime.v1.PodSandboxStatusResponse`. */
export interface PodSandboxStatusResponse {
  status: PodSandboxStatus | null;
  info: StringMap;
  /** Only filled by runtimes that support evented PLEG (not containerd 1.6). */
  containersStatuses: ContainerStatus[];
  timestamp: Int64;
}

/** `runtime.v1.PodSandboxStateValue`. */
export interface PodSandboxStateValue {
  state: PodSandboxState;
}

/** All set fields are ANDed. */
export interface PodSandboxFilter {
  id: string;
  state: PodSandboxStateValue | null;
  labelSelector: StringMap;
}

/** `runtime.v1.ListPodSandboxRequest`. */
export interface ListPodSandboxRequest {
  filter: PodSandboxFilter | null;
}

/** `runtime.v1.PodSandbox`. */
export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata | null;
  state: PodSandboxState;
  createdAt: Int64;
  labels: StringMap;
  annotations: StringMap;
  runtimeHandler: string;
}

/** `runtime.v1.ListPodSandboxResponse`. */
export interface ListPodSandboxResponse {
  items: PodSandbox[];
}

// ---------------------------------------------------------------------------------------------
// Containers
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.Capability`. */
export interface Capability {
  addCapabilities: string[];
  dropCapabilities: string[];
  addAmbientCapabilities: string[];
}

/** `runtime.v1.LinuxContainerSecurityContext`. */
export interface LinuxContainerSecurityContext {
  capabilities: Capability | null;
  privileged: boolean;
  namespaceOptions: NamespaceOption | null;
  selinuxOptions: SELinuxOption | null;
  runAsUser: Int64Value | null;
  runAsUsername: string;
  readonlyRootfs: boolean;
  supplementalGroups: Int64[];
  noNewPrivs: boolean;
  runAsGroup: Int64Value | null;
  maskedPaths: string[];
  readonlyPaths: string[];
  seccomp: SecurityProfile | null;
  apparmor: SecurityProfile | null;
}

/** `runtime.v1.LinuxContainerConfig`. */
export interface LinuxContainerConfig {
  resources: LinuxContainerResources | null;
  securityContext: LinuxContainerSecurityContext | null;
}

/** `(name, attempt)` is unique within a sandbox for the sandbox's lifetime. */
export interface ContainerMetadata {
  name: string;
  attempt: number;
}

/** `runtime.v1.Device`. */
export interface Device {
  containerPath: string;
  hostPath: string;
  permissions: string;
}

/** `runtime.v1.ContainerConfig`. */
export interface ContainerConfig {
  metadata: ContainerMetadata | null;
  image: ImageSpec | null;
  /** Replaces the image's ENTRYPOINT when non-empty. */
  command: string[];
  /** Replaces the image's CMD when non-empty. */
  args: string[];
  workingDir: string;
  envs: KeyValue[];
  mounts: Mount[];
  devices: Device[];
  labels: StringMap;
  annotations: StringMap;
  /** Relative to the sandbox's `logDirectory`, e.g. `<container>/<restartCount>.log`. */
  logPath: string;
  stdin: boolean;
  stdinOnce: boolean;
  tty: boolean;
  linux: LinuxContainerConfig | null;
}

/** `runtime.v1.CreateContainerRequest`. */
export interface CreateContainerRequest {
  podSandboxId: string;
  config: ContainerConfig | null;
  sandboxConfig: PodSandboxConfig | null;
}

/** `runtime.v1.CreateContainerResponse`. */
export interface CreateContainerResponse {
  containerId: string;
}

/** `runtime.v1.StartContainerRequest`. */
export interface StartContainerRequest {
  containerId: string;
}

/** `runtime.v1.StartContainerResponse`. */
export type StartContainerResponse = Record<string, never>;

/** `runtime.v1.StopContainerRequest`. */
export interface StopContainerRequest {
  containerId: string;
  /** Seconds between the stop signal and SIGKILL; `0` kills at once. */
  timeout: Int64;
}

/** `runtime.v1.StopContainerResponse`. */
export type StopContainerResponse = Record<string, never>;

/** `runtime.v1.RemoveContainerRequest`. */
export interface RemoveContainerRequest {
  containerId: string;
}

/** `runtime.v1.RemoveContainerResponse`. */
export type RemoveContainerResponse = Record<string, never>;

/** `runtime.v1.ContainerStateValue`. */
export interface ContainerStateValue {
  state: ContainerState;
}

/** All set fields are ANDed. */
export interface ContainerFilter {
  id: string;
  state: ContainerStateValue | null;
  podSandboxId: string;
  labelSelector: StringMap;
}

/** `runtime.v1.ListContainersRequest`. */
export interface ListContainersRequest {
  filter: ContainerFilter | null;
}

/** `runtime.v1.Container`. */
export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata | null;
  image: ImageSpec | null;
  imageRef: string;
  state: ContainerState;
  createdAt: Int64;
  labels: StringMap;
  annotations: StringMap;
  imageId: string;
}

/** `runtime.v1.ListContainersResponse`. */
export interface ListContainersResponse {
  containers: Container[];
}

/** `runtime.v1.ContainerStatusRequest`. */
export interface ContainerStatusRequest {
  containerId: string;
  verbose: boolean;
}

/** `runtime.v1.ContainerStatus`. */
export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata | null;
  state: ContainerState;
  /** Nanoseconds since the epoch; `'0'` when not set. */
  createdAt: Int64;
  startedAt: Int64;
  finishedAt: Int64;
  exitCode: number;
  image: ImageSpec | null;
  imageRef: string;
  /** containerd: `Completed` (exit 0), `Error`, `OOMKilled`, `StartError` (exit 128). */
  reason: string;
  message: string;
  labels: StringMap;
  annotations: StringMap;
  mounts: Mount[];
  /** The full host path of the container's CRI log. */
  logPath: string;
  resources: ContainerResources | null;
  imageId: string;
}

/** `runtime.v1.ContainerStatusResponse`. */
export interface ContainerStatusResponse {
  status: ContainerStatus | null;
  info: StringMap;
}

/** `runtime.v1.ExecSyncRequest`. */
export interface ExecSyncRequest {
  containerId: string;
  cmd: string[];
  /** Seconds; `0` runs without a limit. */
  timeout: Int64;
}

/** `runtime.v1.ExecSyncResponse`. */
export interface ExecSyncResponse {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

// ---------------------------------------------------------------------------------------------
// Container events
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.GetEventsRequest`. */
export type GetEventsRequest = Record<string, never>;

/** `runtime.v1.ContainerEventResponse`. */
export interface ContainerEventResponse {
  /** The container's id, or the sandbox's id for a sandbox event. */
  containerId: string;
  containerEventType: ContainerEventType;
  createdAt: Int64;
  podSandboxStatus: PodSandboxStatus | null;
  containersStatuses: ContainerStatus[];
}

// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

/** `runtime.v1.ImageFilter`. */
export interface ImageFilter {
  image: ImageSpec | null;
}

/** `runtime.v1.ListImagesRequest`. */
export interface ListImagesRequest {
  filter: ImageFilter | null;
}

/** `runtime.v1.Image`. */
export interface Image {
  /** `sha256:<hex>`. */
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: Int64;
  uid: Int64Value | null;
  username: string;
  spec: ImageSpec | null;
  pinned: boolean;
}

/** `runtime.v1.ListImagesResponse`. */
export interface ListImagesResponse {
  images: Image[];
}

/** `runtime.v1.ImageStatusRequest`. */
export interface ImageStatusRequest {
  image: ImageSpec | null;
  verbose: boolean;
}

/** `runtime.v1.ImageStatusResponse`. */
export interface ImageStatusResponse {
  /** `null` when the image is not present (that is not an error). */
  image: Image | null;
  info: StringMap;
}

/** Registry credentials. Never log or trace it. */
export interface AuthConfig {
  username: string;
  password: string;
  auth: string;
  serverAddress: string;
  identityToken: string;
  registryToken: string;
}

/** `runtime.v1.PullImageRequest`. */
export interface PullImageRequest {
  image: ImageSpec | null;
  auth: AuthConfig | null;
  sandboxConfig: PodSandboxConfig | null;
}

/** `runtime.v1.PullImageResponse`. */
export interface PullImageResponse {
  /** The image id (`sha256:…`) or digest the runtime pulled. */
  imageRef: string;
}

/** `runtime.v1.RemoveImageRequest`. */
export interface RemoveImageRequest {
  image: ImageSpec | null;
}

/** `runtime.v1.RemoveImageResponse`. */
export type RemoveImageResponse = Record<string, never>;

/** `runtime.v1.ImageFsInfoRequest`. */
export type ImageFsInfoRequest = Record<string, never>;

/** `runtime.v1.FilesystemIdentifier`. */
export interface FilesystemIdentifier {
  mountpoint: string;
}

/** `runtime.v1.FilesystemUsage`. */
export interface FilesystemUsage {
  timestamp: Int64;
  fsId: FilesystemIdentifier | null;
  usedBytes: UInt64Value | null;
  inodesUsed: UInt64Value | null;
}

/** `runtime.v1.ImageFsInfoResponse`. */
export interface ImageFsInfoResponse {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}
