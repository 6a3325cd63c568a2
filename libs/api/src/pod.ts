/**
 * The core/v1 Pod, as far as the kubelet's pod path reads it.
 *
 * Objects are "loose": fields this schema does not model are kept as they came (the API server and
 * the kubelet's decoders keep them too), so a manifest round-trips. The fields that are modelled are
 * validated with their API types, so a bad manifest fails with a path to the bad field.
 */
import { z } from 'zod';

const quantity = z.union([z.string(), z.number()]).transform((v) => String(v));
const intOrString = z.union([z.number().int(), z.string()]);

export const ObjectMeta = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().nullable().optional(),
  deletionTimestamp: z.string().nullable().optional(),
  deletionGracePeriodSeconds: z.number().int().nullable().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  ownerReferences: z.array(z.looseObject({ apiVersion: z.string(), kind: z.string(), name: z.string(), uid: z.string() })).optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMeta>;

export const ResourceRequirements = z.looseObject({
  limits: z.record(z.string(), quantity).optional(),
  requests: z.record(z.string(), quantity).optional(),
});
export type ResourceRequirements = z.infer<typeof ResourceRequirements>;

export const EnvVar = z.looseObject({
  name: z.string().min(1),
  value: z.string().optional(),
  valueFrom: z
    .looseObject({
      fieldRef: z.looseObject({ fieldPath: z.string(), apiVersion: z.string().optional() }).optional(),
      resourceFieldRef: z.looseObject({ resource: z.string(), containerName: z.string().optional() }).optional(),
      configMapKeyRef: z.looseObject({ name: z.string(), key: z.string(), optional: z.boolean().optional() }).optional(),
      secretKeyRef: z.looseObject({ name: z.string(), key: z.string(), optional: z.boolean().optional() }).optional(),
    })
    .optional(),
});
export type EnvVar = z.infer<typeof EnvVar>;

export const VolumeMount = z.looseObject({
  name: z.string().min(1),
  mountPath: z.string().min(1),
  readOnly: z.boolean().optional(),
  subPath: z.string().optional(),
  mountPropagation: z.string().optional(),
});
export type VolumeMount = z.infer<typeof VolumeMount>;

export const ContainerPort = z.looseObject({
  name: z.string().optional(),
  containerPort: z.number().int().min(1).max(65535),
  hostPort: z.number().int().min(0).max(65535).optional(),
  hostIP: z.string().optional(),
  protocol: z.enum(['TCP', 'UDP', 'SCTP']).optional(),
});
export type ContainerPort = z.infer<typeof ContainerPort>;

export const ExecAction = z.looseObject({ command: z.array(z.string()).optional() });
export const LifecycleHandler = z.looseObject({
  exec: ExecAction.optional(),
  httpGet: z.looseObject({ path: z.string().optional(), port: intOrString, host: z.string().optional() }).optional(),
  tcpSocket: z.looseObject({ port: intOrString, host: z.string().optional() }).optional(),
  sleep: z.looseObject({ seconds: z.number().int() }).optional(),
});
export type LifecycleHandler = z.infer<typeof LifecycleHandler>;

const HttpHeader = z.looseObject({ name: z.string().min(1), value: z.string() });

export const Probe = LifecycleHandler.extend({
  httpGet: z
    .looseObject({
      path: z.string().optional(),
      port: intOrString,
      host: z.string().optional(),
      scheme: z.enum(['HTTP', 'HTTPS']).optional(),
      httpHeaders: z.array(HttpHeader).optional(),
    })
    .optional(),
  grpc: z.looseObject({ port: z.number().int().min(1).max(65535), service: z.string().nullable().optional() }).optional(),
  initialDelaySeconds: z.number().int().optional(),
  timeoutSeconds: z.number().int().optional(),
  periodSeconds: z.number().int().optional(),
  successThreshold: z.number().int().optional(),
  failureThreshold: z.number().int().optional(),
  terminationGracePeriodSeconds: z.number().int().nullable().optional(),
});
export type Probe = z.infer<typeof Probe>;

export const SecurityContext = z.looseObject({
  privileged: z.boolean().optional(),
  runAsUser: z.number().int().optional(),
  runAsGroup: z.number().int().optional(),
  runAsNonRoot: z.boolean().optional(),
  readOnlyRootFilesystem: z.boolean().optional(),
  allowPrivilegeEscalation: z.boolean().optional(),
  capabilities: z.looseObject({ add: z.array(z.string()).optional(), drop: z.array(z.string()).optional() }).optional(),
});
export type SecurityContext = z.infer<typeof SecurityContext>;

export const Container = z.looseObject({
  name: z.string().min(1),
  image: z.string().optional(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  workingDir: z.string().optional(),
  ports: z.array(ContainerPort).optional(),
  env: z.array(EnvVar).optional(),
  resources: ResourceRequirements.optional(),
  volumeMounts: z.array(VolumeMount).optional(),
  livenessProbe: Probe.optional(),
  readinessProbe: Probe.optional(),
  startupProbe: Probe.optional(),
  lifecycle: z.looseObject({ postStart: LifecycleHandler.optional(), preStop: LifecycleHandler.optional() }).optional(),
  terminationMessagePath: z.string().optional(),
  terminationMessagePolicy: z.enum(['File', 'FallbackToLogsOnError']).optional(),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  restartPolicy: z.literal('Always').optional(),
  securityContext: SecurityContext.optional(),
  stdin: z.boolean().optional(),
  tty: z.boolean().optional(),
});
export type Container = z.infer<typeof Container>;

export const Volume = z.looseObject({
  name: z.string().min(1),
  emptyDir: z
    .looseObject({ medium: z.enum(['', 'Memory']).optional(), sizeLimit: quantity.optional() })
    .nullable()
    .optional(),
  hostPath: z
    .looseObject({
      path: z.string().min(1),
      type: z.enum(['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice']).optional(),
    })
    .optional(),
  configMap: z.looseObject({ name: z.string().optional() }).optional(),
  secret: z.looseObject({ secretName: z.string().optional() }).optional(),
  projected: z.looseObject({}).optional(),
  downwardAPI: z.looseObject({}).optional(),
  persistentVolumeClaim: z.looseObject({ claimName: z.string() }).optional(),
});
export type Volume = z.infer<typeof Volume>;

export const Toleration = z.looseObject({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.string().optional(),
  tolerationSeconds: z.number().int().optional(),
});

export const PodSpec = z.looseObject({
  volumes: z.array(Volume).optional(),
  initContainers: z.array(Container).optional(),
  containers: z.array(Container).min(1, 'spec.containers: Required value: at least one container'),
  ephemeralContainers: z.array(z.looseObject({ name: z.string() })).optional(),
  restartPolicy: z.enum(['Always', 'OnFailure', 'Never']).optional(),
  terminationGracePeriodSeconds: z.number().int().nullable().optional(),
  activeDeadlineSeconds: z.number().int().nullable().optional(),
  dnsPolicy: z.string().optional(),
  nodeSelector: z.record(z.string(), z.string()).optional(),
  serviceAccountName: z.string().optional(),
  nodeName: z.string().optional(),
  hostNetwork: z.boolean().optional(),
  hostPID: z.boolean().optional(),
  hostIPC: z.boolean().optional(),
  hostname: z.string().optional(),
  subdomain: z.string().optional(),
  /** Extra /etc/hosts entries (HostAlias: an IP and its hostnames). */
  hostAliases: z.array(z.looseObject({ ip: z.string(), hostnames: z.array(z.string()).optional() })).optional(),
  securityContext: z.looseObject({}).optional(),
  imagePullSecrets: z.array(z.looseObject({ name: z.string() })).optional(),
  affinity: z.looseObject({}).optional(),
  tolerations: z.array(Toleration).optional(),
  priority: z.number().int().optional(),
  priorityClassName: z.string().optional(),
  readinessGates: z.array(z.looseObject({ conditionType: z.string() })).optional(),
  os: z.looseObject({ name: z.string() }).optional(),
});
export type PodSpec = z.infer<typeof PodSpec>;

export const ContainerStateWaiting = z.looseObject({ reason: z.string().optional(), message: z.string().optional() });
export const ContainerStateRunning = z.looseObject({ startedAt: z.string().optional() });
export const ContainerStateTerminated = z.looseObject({
  exitCode: z.number().int(),
  signal: z.number().int().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  containerID: z.string().optional(),
});
export const ContainerState = z.looseObject({
  waiting: ContainerStateWaiting.optional(),
  running: ContainerStateRunning.optional(),
  terminated: ContainerStateTerminated.optional(),
});
export type ContainerState = z.infer<typeof ContainerState>;

export const ContainerStatus = z.looseObject({
  name: z.string(),
  state: ContainerState.optional(),
  lastState: ContainerState.optional(),
  ready: z.boolean(),
  restartCount: z.number().int(),
  image: z.string(),
  imageID: z.string(),
  containerID: z.string().optional(),
  started: z.boolean().optional(),
});
export type ContainerStatus = z.infer<typeof ContainerStatus>;

export const PodCondition = z.looseObject({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  lastProbeTime: z.string().nullable().optional(),
  lastTransitionTime: z.string().nullable().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  observedGeneration: z.number().int().optional(),
});
export type PodCondition = z.infer<typeof PodCondition>;

export const PodPhase = z.enum(['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown']);
export type PodPhase = z.infer<typeof PodPhase>;

export const PodStatus = z.looseObject({
  phase: PodPhase.optional(),
  conditions: z.array(PodCondition).optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
  hostIP: z.string().optional(),
  hostIPs: z.array(z.looseObject({ ip: z.string() })).optional(),
  podIP: z.string().optional(),
  podIPs: z.array(z.looseObject({ ip: z.string() })).optional(),
  startTime: z.string().optional(),
  initContainerStatuses: z.array(ContainerStatus).optional(),
  containerStatuses: z.array(ContainerStatus).optional(),
  ephemeralContainerStatuses: z.array(ContainerStatus).optional(),
  qosClass: z.enum(['Guaranteed', 'Burstable', 'BestEffort']).optional(),
  observedGeneration: z.number().int().optional(),
});
export type PodStatus = z.infer<typeof PodStatus>;

export const Pod = z.looseObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('Pod'),
  metadata: ObjectMeta,
  spec: PodSpec,
  status: PodStatus.optional(),
});
export type Pod = z.infer<typeof Pod>;

export const PodList = z.looseObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('PodList'),
  metadata: z.looseObject({ resourceVersion: z.string().optional() }).optional(),
  items: z.array(Pod.omit({ apiVersion: true, kind: true }).extend({ apiVersion: z.literal('v1').optional(), kind: z.literal('Pod').optional() })),
});
export type PodList = z.infer<typeof PodList>;

/** A pod as carried on the bus: it has passed the source's defaulting, so name, namespace and uid are set. */
export const BoundPod = Pod.extend({
  metadata: ObjectMeta.extend({ name: z.string().min(1), namespace: z.string().min(1), uid: z.string().min(1) }),
});
export type BoundPod = z.infer<typeof BoundPod>;
