/**
 * The API server's defaulting of a pod, which the kubelet also gets when it decodes a static pod
 * manifest (the legacy scheme runs the v1 defaulters).
 *
 * Models pkg/apis/core/v1/defaults.go (SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container,
 * SetDefaults_Probe, SetDefaults_ContainerPort, SetDefaults_Volume), for the fields the pod path reads.
 */
import type { Container, Pod, Probe, Volume } from '@splitlet/api';

/**
 * A defaulted deep copy of `pod` (the input is not changed). Fills, where unset:
 * `restartPolicy: Always`, `terminationGracePeriodSeconds: 30`, `dnsPolicy: ClusterFirst`,
 * `schedulerName: default-scheduler`, `securityContext: {}`, `enableServiceLinks: true`; per container
 * `imagePullPolicy` (`Always` for an untagged or `:latest` image without digest, else `IfNotPresent`),
 * `terminationMessagePath: /dev/termination-log`, `terminationMessagePolicy: File`, port `protocol: TCP`
 * (and `hostPort = containerPort` on hostNetwork), requests from limits, probe timings (1 s timeout,
 * 10 s period, thresholds 1 and 3); a volume with no source becomes `emptyDir: {}`. A negative
 * `terminationGracePeriodSeconds` becomes 1, as decoding a v1 Pod does since Kubernetes 1.27
 * (kubernetes PR 115606), so such a manifest runs with a 1 s grace period instead of being refused.
 *
 * Models SetDefaults_Pod and friends, and Convert_v1_Pod_To_core_Pod (pkg/apis/core/v1/conversion.go).
 */
export function applyPodApiDefaults<P extends Pod>(pod: P): P {
  const out = structuredClone(pod);
  const spec = out.spec as typeof out.spec & Record<string, unknown>;
  spec.restartPolicy ??= 'Always';
  if (spec.terminationGracePeriodSeconds === undefined || spec.terminationGracePeriodSeconds === null) {
    spec.terminationGracePeriodSeconds = 30;
  } else if (spec.terminationGracePeriodSeconds < 0) {
    spec.terminationGracePeriodSeconds = 1;
  }
  spec.dnsPolicy ??= 'ClusterFirst';
  spec['schedulerName'] ??= 'default-scheduler';
  spec.securityContext ??= {};
  spec['enableServiceLinks'] ??= true;
  const hostNetwork = spec.hostNetwork === true;
  for (const c of spec.containers) defaultContainer(c, hostNetwork);
  for (const c of spec.initContainers ?? []) defaultContainer(c, hostNetwork);
  for (const v of spec.volumes ?? []) defaultVolume(v);
  return out;
}

function defaultContainer(c: Container, hostNetwork: boolean): void {
  c.imagePullPolicy ??= defaultPullPolicy(c.image ?? '');
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  for (const p of c.ports ?? []) {
    p.protocol ??= 'TCP';
    if (hostNetwork && (p.hostPort === undefined || p.hostPort === 0)) p.hostPort = p.containerPort;
  }
  if (c.resources?.limits !== undefined) {
    const requests = (c.resources.requests ??= {});
    for (const [name, q] of Object.entries(c.resources.limits)) {
      if (requests[name] === undefined) requests[name] = q;
    }
  }
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
    if (probe !== undefined) defaultProbe(probe);
  }
}

function defaultProbe(p: Probe): void {
  p.timeoutSeconds ??= 1;
  p.periodSeconds ??= 10;
  p.successThreshold ??= 1;
  p.failureThreshold ??= 3;
}

function defaultVolume(v: Volume): void {
  const hasSource = Object.keys(v).some((k) => k !== 'name' && (v as Record<string, unknown>)[k] != null);
  if (!hasSource) v.emptyDir = {};
}

/**
 * `Always` for an image without a tag or with `:latest` (and no digest), else `IfNotPresent`.
 *
 * Models SetDefaults_Container (parsers.ParseImageName + the latest-tag rule).
 */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastSegment.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastSegment.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}
